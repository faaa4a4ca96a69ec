"""The pure parts of ``sluice hosts``: rows, summary lines, progress and exit codes."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from controller.cli.exit_codes import ExitCode
from controller.cli.hosts import (
    follow,
    host_row,
    progress_line,
    run_exit_code,
    run_row,
    run_summary,
)


def result(host: str, batch: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"host": host, "batch": batch, "status": status, "changed_tasks": [],
            "failed_tasks": [], "message": None, **extra}  # fmt: skip


def run(state: str = "completed", mode: str = "apply", **extra: Any) -> dict[str, Any]:
    return {"id": 7, "mode": mode, "state": state, "intent_version": 3, "hosts": ["a", "b"],
            "batches_done": 1, "batches_total": 2, "failures": 0, "message": None,
            "started_at": "2026-03-01T12:00:00Z", "counts": {}, "results": [], **extra}  # fmt: skip


def test_host_row_names_changed_tasks_and_the_failure_reason() -> None:
    changed = result("a", 1, "changed", changed_tasks=[{"task": "QJUMP"}, {"task": "ECN"}])
    assert host_row(changed) == ("a", "1", "changed", "QJUMP, ECN", "-")
    failed = result("b", 2, "unreachable", message="ssh: refused")
    assert host_row(failed) == ("b", "2", "unreachable", "-", "ssh: refused")
    # A message on a host that did not fail (not_run: why) is not shown as a failure.
    assert host_row(result("c", 3, "not_run", message="budget"))[4] == "-"


def test_run_row_and_summary() -> None:
    assert run_row(run()) == ("7", "apply", "completed", "3", "2", "1/2", "0",
                              "2026-03-01T12:00:00Z")  # fmt: skip
    plan = run(mode="plan", counts={"changed": 2, "ok": 1, "failed": 0, "pending": 0})
    assert run_summary(plan) == "Host plan run 7 completed (2 would change, 1 ok)."
    halted = run(state="halted", counts={"ok": 1, "failed": 1}, message="stopped after batch 1")
    assert run_summary(halted) == "Host apply run 7 halted (1 ok, 1 failed): stopped after batch 1."


def test_progress_line_shows_why_a_host_failed() -> None:
    assert progress_line(run(), result("a", 1, "ok")) == "batch 1/2: a ok"
    failed = result("b", 2, "failed", message="dctcp not offered")
    assert progress_line(run(), failed) == "batch 2/2: b failed (dctcp not offered)"


def test_exit_codes() -> None:
    assert run_exit_code(run(), detailed=False) is ExitCode.OK
    assert run_exit_code(run(failures=1), detailed=False) is ExitCode.HOSTS_FAILED
    assert run_exit_code(run(state="halted"), detailed=False) is ExitCode.HOSTS_FAILED
    assert run_exit_code(run(state="error"), detailed=False) is ExitCode.HOSTS_FAILED
    changed = run(results=[result("a", 1, "changed")])
    assert run_exit_code(changed, detailed=True) is ExitCode.CHANGES
    assert run_exit_code(changed, detailed=False) is ExitCode.OK


class FakeRunsApi:
    """Stands in for the API's GET /hosts/runs/{id} answers, one per poll (an ApiClient
    double: only ``get_json`` is used by ``follow``)."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.paths: list[str] = []

    def get_json(self, path: str) -> dict[str, Any]:
        self.paths.append(path)
        return self.answers.pop(0)


def test_follow_prints_each_host_once_and_stops_at_the_end() -> None:
    first = run(state="running", results=[result("a", 1, "ok")])
    second = run(state="halted", results=[result("a", 1, "ok"), result("b", 2, "failed")])
    api = FakeRunsApi([second])
    console = Console(record=True, width=200)
    sleeps: list[float] = []
    final = follow(api, first, console, poll_s=0.5, sleep=sleeps.append)  # type: ignore[arg-type]
    assert final is second
    assert api.paths == ["/hosts/runs/7"]
    assert sleeps == [0.5]
    assert console.export_text().splitlines() == ["batch 1/2: a ok", "batch 2/2: b failed"]


def test_a_rollback_row_says_so_and_why_a_host_was_not_put_back() -> None:
    back = result("a", 1, "changed", phase="rollback", from_version=2)
    assert host_row(back) == ("a", "1", "rollback changed", "-", "-")
    kept = result("b", 1, "not_run", phase="rollback", message="no earlier version")
    assert host_row(kept)[2:] == ("rollback not_run", "-", "no earlier version")
    assert progress_line(run(), back) == "rollback batch 1: a changed (version 2)"
