"""DWRR weights from demand, worked by hand.

bulk: weight 30, range 10..60; storage: weight 70, range 40..90 (total 100). One 25 Gb/s port,
line rate 3.125e9 B/s, so bulk's share is 30 % = 9.375e8 B/s.
"""

from __future__ import annotations

import itertools

from controller.tuning.evidence import Change
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QueueSummary
from controller.tuning.weights import WeightRange, tune_weights

RANGES = [WeightRange("bulk", 30, 10, 60), WeightRange("storage", 70, 40, 90)]
LINE = 3.125e9
STEPLESS = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=100.0)
STEPPED = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def queues(bulk_fraction: float, storage_marks: float = 0.12) -> list[QueueSummary]:
    def one(name: str, tx: float, marks: float) -> QueueSummary:
        return QueueSummary(
            "leaf1", "Ethernet0", name, 25, utilisation=0.95, mark_fraction=marks,
            dropped_packets_per_s=0.0, tx_bytes_per_s=tx,
        )  # fmt: skip

    return [one("bulk", bulk_fraction * LINE, 0.0), one("storage", 0.8 * LINE, storage_marks)]


def by_name(changes: list[Change]) -> dict[str, Change]:
    return {c.parameter: c for c in changes}


def test_a_class_using_less_lends_its_share() -> None:
    # bulk sends 10 % (< its 30 %) and does not mark: it is offered 10 % x 1.2 = 12 %.
    # storage marks (backlogged): it gets the rest, 88 %. On the scale 100: 12 and 88.
    found = by_name(tune_weights(RANGES, queues(0.1), now_s=0, last_changed={}, policy=STEPLESS))
    assert found["weight/bulk"].proposed == 12
    assert found["weight/storage"].proposed == 88
    assert found["weight/bulk"].evidence.inputs["backlogged"] == ("storage",)


def test_max_step_per_change() -> None:
    # Same demand, 25 % step: bulk 30 -> 30 - 7.5 = 22.5 -> 23 (towards 30); storage
    # 70 -> 70 + 17.5 = 87.5 -> 87.
    found = by_name(tune_weights(RANGES, queues(0.1), now_s=0, last_changed={}, policy=STEPPED))
    assert (found["weight/bulk"].proposed, found["weight/storage"].proposed) == (23, 87)


def test_never_below_the_minimum_weight_nor_above_the_maximum() -> None:
    # bulk sends nothing: offered 0 % -> weight 0, raised to its minimum 10. storage is
    # offered 100 % -> 100, lowered to its maximum 90.
    found = by_name(tune_weights(RANGES, queues(0.0), now_s=0, last_changed={}, policy=STEPLESS))
    bulk, storage = found["weight/bulk"], found["weight/storage"]
    assert (bulk.proposed, storage.proposed) == (10, 90)
    assert any("weight_min" in b for b in bulk.evidence.bounds)
    assert any("weight_max" in b for b in storage.evidence.bounds)


def test_no_change_inside_the_hysteresis_band() -> None:
    # bulk sends 24 %: offered 28.8 % -> 28.8 -> 29 (3.3 % from 30); storage gets 71.2 % -> 71
    # (1.4 % from 70). Both inside the 10 % band: held.
    found = tune_weights(RANGES, queues(0.24), now_s=0, last_changed={}, policy=STEPLESS)
    assert all(not c.applies and c.held and "hysteresis" in c.held for c in found)


def test_nobody_backlogged_nothing_moves() -> None:
    # Neither class marks, drops or reaches its share (bulk 10 % < 30 %, storage 30 % < 70 %):
    # there is no one to lend to.
    idle_storage = QueueSummary(
        "leaf1", "Ethernet0", "storage", 25, utilisation=0.4, mark_fraction=0.0,
        dropped_packets_per_s=0.0, tx_bytes_per_s=0.3 * LINE,
    )  # fmt: skip
    found = tune_weights(
        RANGES,
        [queues(0.1)[0], idle_storage],
        now_s=0,
        last_changed={},
        policy=STEPLESS,
    )
    assert all(not c.applies for c in found)


def test_a_class_without_a_range_never_moves() -> None:
    fixed = [WeightRange("bulk", 30, 30, 30), WeightRange("storage", 70, 70, 70)]
    assert tune_weights(fixed, queues(0.1), now_s=0, last_changed={}, policy=STEPLESS) == []


def test_oscillating_demand_changes_each_weight_at_most_once_per_interval() -> None:
    # bulk's demand flips between 5 % and 40 % every minute for an hour: at most
    # 3600 / 900 = 4 changes of each weight, 900 s apart at least; always inside its range.
    current = {"bulk": 30, "storage": 70}
    times: dict[str, float] = {}
    changed: dict[str, list[float]] = {"weight/bulk": [], "weight/storage": []}
    for minute in range(60):
        now = minute * 60.0
        ranges = [
            WeightRange("bulk", current["bulk"], 10, 60),
            WeightRange("storage", current["storage"], 40, 90),
        ]
        demand = 0.05 if minute % 2 == 0 else 0.4
        for change in tune_weights(
            ranges, queues(demand), now_s=now, last_changed=times, policy=STEPPED
        ):
            if change.applies:
                assert isinstance(change.proposed, int)
                current[change.parameter.split("/")[1]] = change.proposed
                times[change.parameter] = now
                changed[change.parameter].append(now)
    for moments in changed.values():
        assert len(moments) <= 4
        assert all(b - a >= 900 for a, b in itertools.pairwise(moments))
    assert 10 <= current["bulk"] <= 60
    assert 40 <= current["storage"] <= 90
