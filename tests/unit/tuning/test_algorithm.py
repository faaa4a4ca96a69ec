"""The agent's algorithm: an ECN-marking queue that never marks but drops gets DynaQ."""

from __future__ import annotations

from controller.intent.models import EcnMode
from controller.tuning.algorithm import tune_algorithm
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QueueSummary

POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def queue(marks: float, drops: float, port: str = "Ethernet0") -> QueueSummary:
    return QueueSummary(
        "leaf1", port, "storage", 25, mark_fraction=marks, dropped_packets_per_s=drops,
        tx_bytes_per_s=1e9,
    )  # fmt: skip


def test_no_marks_with_drops_moves_mqecn_to_dynaq() -> None:
    # Mark fraction 0 on both ports, 5 drops/s on one (> 0.1): not ECN-capable traffic.
    change = tune_algorithm(
        "storage", EcnMode.MQECN, [queue(0.0, 5.0), queue(0.0, 0.0, "Ethernet4")],
        now_s=0, last_changed={}, policy=POLICY,
    )  # fmt: skip
    assert change is not None
    assert change.applies
    assert (change.parameter, change.current, change.proposed) == (
        "algorithm/storage",
        "mqecn",
        "dynaq",
    )
    assert change.evidence.inputs["dropped_packets_per_s_max"] == 5.0


def test_marking_traffic_keeps_its_algorithm() -> None:
    # 5 % marked: senders see ECN; drops alone do not say ECN is useless.
    change = tune_algorithm(
        "storage", EcnMode.MQECN, [queue(0.05, 5.0)], now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert not change.applies


def test_no_drops_keeps_its_algorithm() -> None:
    change = tune_algorithm(
        "storage", EcnMode.STANDARD, [queue(0.0, 0.0)], now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert not change.applies


def test_a_non_marking_class_is_not_judged() -> None:
    for mode in (EcnMode.OFF, EcnMode.DYNAQ):
        assert (
            tune_algorithm("s", mode, [queue(0.0, 5.0)], now_s=0, last_changed={}, policy=POLICY)
            is None
        )


def test_minimum_interval() -> None:
    change = tune_algorithm(
        "storage", EcnMode.HDCQ, [queue(0.0, 5.0)], now_s=1000,
        last_changed={"algorithm/storage": 400}, policy=POLICY,
    )  # fmt: skip
    assert change is not None
    assert change.held is not None
    assert "minimum interval" in change.held
