"""The pure parts of staged rollouts: batch assignment, failure counting, what runs next,
the order a rollback visits switches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.rollout.staging import assign_batches, failure_count, next_batch
from controller.rollout.switches import SwitchProgress, rollback_switches

NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), unique=True, max_size=30)


def progress(switch: str, batch: int, status: str, attempts: int = 0) -> SwitchProgress:
    return SwitchProgress("rollout", switch, batch, status, attempts)


def test_canary_first_then_batches_in_the_given_order() -> None:
    # 5 switches, canary s3; the other 4 in batches of 3: [s1 s2 s4] and [s5].
    assigned = assign_batches(["s1", "s2", "s3", "s4", "s5"], ["s3"], 3)
    assert assigned == [("s3", 0), ("s1", 1), ("s2", 1), ("s4", 1), ("s5", 2)]


def test_without_a_canary_batches_start_at_zero() -> None:
    assert assign_batches(["a", "b", "c"], [], 2) == [("a", 0), ("b", 0), ("c", 1)]


def test_unknown_canary_and_bad_batch_size_are_refused() -> None:
    with pytest.raises(ValueError, match="zz"):
        assign_batches(["a"], ["zz"], 1)
    with pytest.raises(ValueError, match="batch_size"):
        assign_batches(["a"], [], 0)


@given(NAMES, st.data(), st.integers(min_value=1, max_value=10))
def test_every_switch_lands_in_exactly_one_batch_of_at_most_the_size(
    names: list[str], data: st.DataObject, size: int
) -> None:
    canary = data.draw(st.lists(st.sampled_from(names), unique=True) if names else st.just([]))
    assigned = assign_batches(names, canary, size)
    assert sorted(name for name, _ in assigned) == sorted(names)
    batches = [b for _, b in assigned]
    assert batches == sorted(batches)  # run order is batch order
    rest = [b for name, b in assigned if name not in canary]
    for batch in set(rest):
        assert rest.count(batch) <= size
    assert all(b == 0 for name, b in assigned if name in canary)


def test_failures_count_failed_unreachable_and_mismatch_only() -> None:
    results = [
        progress("a", 0, "applied_verified"),
        progress("b", 0, "failed"),
        progress("c", 1, "unreachable"),
        progress("d", 1, "mismatch"),
        progress("e", 2, "pending"),
        progress("f", 2, "skipped"),
    ]
    assert failure_count(results) == 3


def test_next_batch_is_the_lowest_batch_with_pending_switches() -> None:
    results = [
        progress("a", 0, "applied_verified"),
        progress("b", 1, "failed"),
        progress("c", 1, "pending"),
        progress("d", 2, "pending"),
    ]
    assert [r.switch for r in next_batch(results)] == ["c"]
    assert next_batch([progress("a", 0, "applied_verified")]) == []


def test_rollback_visits_attempted_switches_last_reached_first() -> None:
    results = [
        progress("canary", 0, "applied_verified", 1),
        progress("b1", 1, "applied_verified", 1),
        progress("b2", 1, "unreachable", 1),  # may hold some batches: visited too
        progress("later", 2, "pending", 0),  # never reached: nothing to undo
    ]
    assert rollback_switches(results) == ["b2", "b1", "canary"]
