"""ECN lambda rule, worked by hand.

The group: class storage on 25 Gb/s ports, RTT 40 us, DWRR weight 70 of 100, MTU 1500.
C = 25e9 / 8 = 3.125e9 B/s, C x RTT = 3.125e9 x 40e-6 = 125 000 B, so K = 125 000 x lambda.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from controller.tuning.ecn import EcnBounds, EcnGroup, safe_floor_bytes, tune_lambda
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QueueSummary

GROUP = EcnGroup("storage", 25, 1.0, 40.0, 1500, 70, 100)
BOUNDS = EcnBounds(lambda_min=0.17, lambda_max=2.0, utilisation_target=0.9)
POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def queue(utilisation: float, marks: float, port: str = "Ethernet0") -> QueueSummary:
    return QueueSummary(
        "leaf1",
        port,
        "storage",
        25,
        utilisation=utilisation,
        mark_fraction=marks,
        occupancy_p95_bytes=90_000,
    )


def test_marking_below_target_raises_lambda_by_at_most_the_step() -> None:
    # Marking (0.12) at utilisation 0.6 < 0.9: wanted 1.0 x 0.9 / 0.6 = 1.5; the 25 % step
    # allows 1.25. K = 125 000 x 1.25 = 156 250 B; the agent's floor is 70/100 x K =
    # 109 375 B, its ceiling K.
    change = tune_lambda(GROUP, [queue(0.6, 0.12)], BOUNDS, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert change.applies
    assert change.parameter == "ecn_lambda/storage/25gbps"
    assert change.proposed == 1.25
    assert change.related["standard_threshold_bytes"] == 156_250
    assert change.related["agent_floor_bytes"] == 109_375
    assert change.related["agent_ceiling_bytes"] == 156_250
    assert change.evidence.outputs["lambda_wanted"] == 1.5
    assert any("max step" in b for b in change.evidence.bounds)
    assert change.evidence.inputs["utilisation_marking_mean"] == 0.6


def test_marking_above_target_lowers_lambda_but_never_below_the_safe_floor() -> None:
    # lambda 0.2, target 0.6, utilisation 1.0: wanted 0.2 x 0.6 / 1.0 = 0.12; the step allows
    # 0.2 - 0.05 = 0.15; the safe floor lambda_min = 0.17 wins: K = 125 000 x 0.17 = 21 250 B.
    group = replace(GROUP, current_lambda=0.2)
    bounds = replace(BOUNDS, utilisation_target=0.6)
    change = tune_lambda(group, [queue(1.0, 0.3)], bounds, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert change.applies
    assert change.proposed == 0.17
    assert change.related["standard_threshold_bytes"] == 21_250 == safe_floor_bytes(group, bounds)
    assert any("safe floor" in b for b in change.evidence.bounds)


def test_no_change_inside_the_utilisation_band() -> None:
    # 0.93 is within 0.05 of the 0.9 target: hold, whatever the marking.
    change = tune_lambda(GROUP, [queue(0.93, 0.4)], BOUNDS, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert not change.applies
    assert change.held is not None
    assert "within 0.05" in change.held


def test_no_change_inside_the_hysteresis_band() -> None:
    # Utilisation 0.84 (outside the 0.05 band): wanted 0.9 / 0.84 = 1.0714, 7.1 % < 10 %.
    change = tune_lambda(GROUP, [queue(0.84, 0.2)], BOUNDS, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert change.proposed == 1.0
    assert change.held is not None
    assert "hysteresis" in change.held


def test_no_marking_is_no_evidence() -> None:
    # Utilisation 0.3 but mark fraction 0.005 < 1 %: the threshold is not what limits it.
    change = tune_lambda(
        GROUP, [queue(0.3, 0.005)], BOUNDS, now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert not change.applies
    assert change.held is not None
    assert "no port marks" in change.held


def test_only_marking_ports_count() -> None:
    # Ethernet0 marks at 0.6 utilisation, Ethernet4 idles unmarked at 0.1: the mean over the
    # marking ports is 0.6, as in the first test, so lambda goes to 1.25 again.
    queues = [queue(0.6, 0.12), queue(0.1, 0.0, "Ethernet4")]
    change = tune_lambda(GROUP, queues, BOUNDS, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert change.proposed == 1.25
    assert change.evidence.inputs["ports_marking"] == 1


def test_no_measurement_no_verdict() -> None:
    empty = QueueSummary("leaf1", "Ethernet0", "storage", 25)
    assert tune_lambda(GROUP, [empty], BOUNDS, now_s=0, last_changed={}, policy=POLICY) is None


def test_a_strict_class_keeps_the_standard_threshold_as_floor_and_ceiling() -> None:
    # STRICT (no weight): floor = ceiling = K = 156 250 B at lambda 1.25 (MQ-ECN §4).
    group = replace(GROUP, weight=None, total_weight=None)
    change = tune_lambda(group, [queue(0.6, 0.12)], BOUNDS, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    assert change.related["agent_floor_bytes"] == change.related["agent_ceiling_bytes"] == 156_250


def test_oscillating_utilisation_changes_at_most_once_per_interval() -> None:
    # Utilisation flips between 0.5 and 1.0 every minute for two hours (both marking). Every
    # minute asks for a change, but with a 900 s interval there can be at most
    # 7200 / 900 = 8 changes, each at least 900 s after the previous one.
    current, times, changed_at = 1.0, dict[str, float](), list[float]()
    for minute in range(120):
        now = minute * 60.0
        utilisation = 0.5 if minute % 2 == 0 else 1.0
        group = replace(GROUP, current_lambda=current)
        change = tune_lambda(
            group, [queue(utilisation, 0.2)], BOUNDS, now_s=now, last_changed=times, policy=POLICY
        )
        assert change is not None
        if change.applies:
            assert isinstance(change.proposed, float)
            current = change.proposed
            times[change.parameter] = now
            changed_at.append(now)
    assert 1 <= len(changed_at) <= 8
    assert all(b - a >= 900 for a, b in itertools.pairwise(changed_at))
    assert BOUNDS.lambda_min <= current <= BOUNDS.lambda_max
