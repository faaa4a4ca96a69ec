"""The pure parts of ``sluice rollout``: how a watch ends, the progress line, the lines for
switches that finished between two reads."""

from __future__ import annotations

from typing import Any

import pytest

from controller.cli.exit_codes import ExitCode
from controller.cli.rollout import new_result_lines, outcome, progress_line


def rollout(state: str, reason: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": 3, "state": state, "reason": reason, "from_version": 1, "to_version": 2, **extra}


@pytest.mark.parametrize(
    ("state", "reason", "code"),
    [
        ("pending", None, None),
        ("running", None, None),
        ("rolling_back", None, None),
        ("completed", None, ExitCode.OK),
        ("completed", "not verified: leaf2 (failed)", ExitCode.ROLLOUT_NOT_CLEAN),
        ("halted", "2 switch(es) failed", ExitCode.ROLLOUT_NOT_CLEAN),
        ("rolled_back", None, ExitCode.ROLLOUT_NOT_CLEAN),
        ("paused", None, ExitCode.ROLLOUT_PAUSED),
    ],
)
def test_a_watch_ends_by_outcome(state: str, reason: str | None, code: ExitCode | None) -> None:
    assert outcome(rollout(state, reason)) == code


def test_the_progress_line_counts_switches_of_the_rollout_phase() -> None:
    doc = rollout(
        "running",
        counts={"applied_verified": 2, "failed": 1, "pending": 1, "rollback_pending": 3},
    )
    # 2 + 1 + 1 = 4 switches in the rollout phase; rollback counts are not part of the total.
    assert progress_line(doc) == (
        "rollout 3 (version 1 -> 2): running; 2/4 verified, 1 failed, 1 pending, 3 rollback pending"
    )


def result(switch: str, status: str, attempts: int, reason: str | None = None) -> dict[str, Any]:
    finished = None if status == "pending" else "2026-03-01T12:00:00Z"
    return {
        "phase": "rollout",
        "switch": switch,
        "batch": 1,
        "status": status,
        "attempts": attempts,
        "reason": reason,
        "finished_at": finished,
    }


def test_only_switches_that_finished_since_the_last_read_get_a_line() -> None:
    before = rollout(
        "running", results=[result("a", "applied_verified", 1), result("b", "pending", 0)]
    )
    after = rollout(
        "running",
        results=[result("a", "applied_verified", 1), result("b", "unreachable", 1, "no answer")],
    )
    assert new_result_lines(before, after) == ["  b (batch 1): unreachable: no answer"]
    # A retried switch (one more attempt) is reported again.
    retried = rollout(
        "running",
        results=[result("a", "applied_verified", 1), result("b", "applied_verified", 2)],
    )
    assert new_result_lines(after, retried) == ["  b (batch 1): applied_verified"]
    assert new_result_lines(None, before) == ["  a (batch 1): applied_verified"]
