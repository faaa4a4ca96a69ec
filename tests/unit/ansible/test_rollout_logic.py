"""The pure decisions of the sluice.fabric rollout module and its API helpers: when a run
starts a rollout, resumes one, follows one, does nothing, or refuses; how failures are named
and batches summarised."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

# Imported as Ansible imports the collection (the repository root holds ansible_collections/).
rollout = importlib.import_module("ansible_collections.sluice.fabric.plugins.modules.rollout")
api = importlib.import_module("ansible_collections.sluice.fabric.plugins.module_utils.api")


def result(switch: str, batch: int, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"phase": "rollout", "switch": switch, "batch": batch, "status": status,
            "reason": reason}  # fmt: skip


def a_rollout(state: str, to_version: int, *results: dict[str, Any]) -> dict[str, Any]:
    return {"id": 7, "state": state, "to_version": to_version, "results": list(results)}


VERIFIED = result("leaf1", 0, "applied_verified")
UNREACHABLE = result("leaf2", 1, "unreachable", "deadline exceeded")


@pytest.mark.parametrize(
    ("latest", "target", "action"),
    [
        (None, 1, "started"),
        (a_rollout("completed", 3, VERIFIED), 3, "none"),
        (a_rollout("completed", 3, VERIFIED, UNREACHABLE), 3, "resumed"),
        (a_rollout("halted", 3, VERIFIED, UNREACHABLE), 3, "resumed"),
        (a_rollout("paused", 3, VERIFIED), 3, "resumed"),
        (a_rollout("running", 3, VERIFIED), 3, "followed"),
        (a_rollout("pending", 3), 3, "followed"),
        (a_rollout("completed", 2, VERIFIED), 3, "started"),
        (a_rollout("rolled_back", 3, VERIFIED), 3, "started"),  # taken back: roll out anew
        (a_rollout("rolled_back", 2, VERIFIED), 3, "started"),
    ],
)
def test_what_a_run_does_with_the_newest_rollout(
    latest: dict[str, Any] | None, target: int, action: str
) -> None:
    assert rollout.decide(latest, target) == action


@pytest.mark.parametrize("state", ["halted", "paused", "running", "pending", "rolling_back"])
def test_an_unfinished_rollout_of_another_version_is_in_the_way(state: str) -> None:
    with pytest.raises(ValueError, match=rf"rollout 7 \(to version 2\) is {state}"):
        rollout.decide(a_rollout(state, 2, VERIFIED), 3)


def test_failures_are_named_with_status_and_reason_and_verified_switches_are_not() -> None:
    done = a_rollout("halted", 3, VERIFIED, UNREACHABLE, result("spine1", 1, "failed", "x"))
    failures = api.not_verified(done)
    assert [f["switch"] for f in failures] == ["leaf2", "spine1"]
    assert api.describe_failures(failures) == (
        "leaf2 (unreachable: deadline exceeded), spine1 (failed: x)"
    )


def test_batches_in_order_with_counts_per_status_rollback_phase_apart() -> None:
    back = {**result("leaf1", 0, "applied_verified"), "phase": "rollback"}
    done = a_rollout("halted", 3, UNREACHABLE, VERIFIED, result("spine1", 1, "pending"), back)
    assert api.batch_progress(done) == [
        {"batch": 0, "switches": ["leaf1"], "counts": {"applied_verified": 1}},
        {"batch": 1, "switches": ["leaf2", "spine1"], "counts": {"unreachable": 1, "pending": 1}},
    ]
    assert api.batch_progress(done, "rollback") == [
        {"batch": 0, "switches": ["leaf1"], "counts": {"applied_verified": 1}}
    ]


def test_a_problem_answer_reads_as_request_status_title_detail_and_fields() -> None:
    error = api.ApiError(
        "PUT",
        "/api/v1/intent",
        422,
        "invalid intent",
        "fabric.base_rtt_us: must be above 0",
        {"errors": [{"field": "switches[0].name", "reason": "duplicate"}]},
    )
    assert str(error) == (
        "PUT /api/v1/intent: 422 invalid intent: fabric.base_rtt_us: must be above 0 "
        "(switches[0].name: duplicate)"
    )


def test_no_token_is_refused_before_any_request() -> None:
    with pytest.raises(api.ApiError, match="SLUICE_API_TOKEN"):
        api.SluiceApi("http://127.0.0.1:9", None)
