"""The Ansible edge and the worker's host runner over it: batches, the failure budget, the
callback's JSON lines, real ansible-playbook."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.hosts.runner import (
    AnsibleRunner,
    AnsibleSetup,
    HostResult,
    HostStatus,
    parse_events,
    playbook_argv,
)
from controller.rollout.hosts import HostRunRunner, HostRunState, host_batches
from lab.host_runs import FakeHostRunStore

REPO = Path(__file__).resolve().parents[3]
LOCAL_PLAY = Path(__file__).with_name("playbooks") / "local_batch.yml"


def line(**event: Any) -> str:
    return json.dumps(event)


def test_host_batches_keep_order_number_from_one_and_cut_the_last_short() -> None:
    assert host_batches(["a", "b", "c", "d", "e"], 2) == [
        ("a", 1), ("b", 1), ("c", 2), ("d", 2), ("e", 3),
    ]  # fmt: skip
    assert host_batches(["a", "b"], 5) == [("a", 1), ("b", 1)]
    with pytest.raises(ValueError, match="batch_size"):
        host_batches(["a"], 0)


def test_events_become_per_host_results() -> None:
    lines = [
        line(event="task", host="h1", task="QJUMP", role="qjump", status="changed",
             diff={"before": "a", "after": "b"}),
        line(event="task", host="h1", task="ECN", role="ecn", status="ok"),
        line(event="task", host="h2", task="ECN", role="ecn", status="failed",
             msg="sluice_ecn.congestion_control: 'dctcp' is not offered"),
        line(event="task", host="h3", task="Gathering", status="unreachable", msg="ssh: refused"),
        line(event="task", host="other", task="ECN", status="changed"),
        line(event="stats", hosts={
            "h1": {"ok": 2, "changed": 1, "unreachable": 0, "failures": 0},
            "h2": {"ok": 0, "changed": 0, "unreachable": 0, "failures": 1},
            "h3": {"ok": 0, "changed": 0, "unreachable": 1, "failures": 0},
            "h4": {"ok": 3, "changed": 0, "unreachable": 0, "failures": 0},
        }),
    ]  # fmt: skip
    h1, h2, h3, h4 = parse_events(lines, ["h1", "h2", "h3", "h4"], 2, exit_code=4)
    assert (h1.status, h1.batch, [t.task for t in h1.changed_tasks]) == (
        HostStatus.CHANGED,
        2,
        ["QJUMP"],
    )
    assert h1.changed_tasks[0].diff == {"before": "a", "after": "b"}
    assert (h2.status, h2.failed_tasks[0].role) == (HostStatus.FAILED, "ecn")
    assert h2.message is not None
    assert "dctcp" in h2.message
    assert (h3.status, h3.message) == (HostStatus.UNREACHABLE, "ssh: refused")
    assert (h4.status, h4.changed_tasks, h4.failed_tasks) == (HostStatus.OK, (), ())


def test_a_host_without_stats_failed_with_the_reason_and_a_torn_line_is_dropped() -> None:
    lines = [line(event="task", host="h1", task="ECN", status="changed"), '{"event": "ta']
    (h1,) = parse_events(lines, ["h1"], 1, exit_code=-9, stderr="x" * 1000 + "timed out")
    assert h1.status is HostStatus.FAILED
    assert h1.message is not None
    assert h1.message.startswith("no result from ansible-playbook (exit -9): ")
    assert h1.message.endswith("timed out")
    assert len(h1.message) < 700  # only the end of stderr is kept


def test_argv_is_a_list_with_limit_forks_diff_and_check() -> None:
    setup = AnsibleSetup(Path("/bin/ap"), Path("/p/site.yml"), Path("/p/ansible.cfg"),
                         prefix=("ip", "netns", "exec", "ctl"))  # fmt: skip
    argv = playbook_argv(setup, Path("/r/inv.yml"), ["h1", "h2"], check=True)
    assert argv[:5] == ["ip", "netns", "exec", "ctl", "/bin/ap"]
    assert argv[argv.index("--limit") + 1] == "h1,h2"
    assert argv[argv.index("--forks") + 1] == "2"
    assert "--diff" in argv
    assert argv[-1] == "--check"
    assert "--check" not in playbook_argv(setup, Path("/r/inv.yml"), ["h1"], check=False)


# --- real ansible-playbook, local connection (no root, no SSH) --------------------------------


def local_inventory(fail: Sequence[str], change: Sequence[str], names: Sequence[str]) -> str:
    hosts = {
        name: {
            "ansible_connection": "local",
            "ansible_python_interpreter": "/usr/bin/python3",
            "fail_here": name in fail,
            "change_here": name in change,
        }
        for name in names
    }
    return yaml.safe_dump({"all": {"hosts": hosts}})


def local_setup() -> AnsibleSetup:
    return AnsibleSetup(
        ansible_playbook=Path(sys.executable).parent / "ansible-playbook",
        playbook=LOCAL_PLAY,
        config=REPO / "playbooks" / "ansible.cfg",
        batch_timeout_s=120,
    )


NAMES = ["a1", "a2", "a3", "a4"]


def run_to_the_end(store: FakeHostRunStore, runner: AnsibleRunner) -> FakeHostRunStore:
    """The worker's host runner over ``store`` until the run is finished."""

    def run_batch(_run: HostRunState, hosts: Sequence[str], batch: int) -> list[HostResult]:
        return runner.run_batch(hosts, batch)

    host_runner = HostRunRunner(store, run_batch)
    while host_runner.run_once():
        pass
    return store


def test_a_failure_over_budget_stops_before_the_next_batch(tmp_path: Path) -> None:
    runner = AnsibleRunner(
        local_setup(), tmp_path, local_inventory(["a2"], ["a1"], NAMES), check=False
    )
    store = run_to_the_end(FakeHostRunStore(NAMES, 2, failure_budget=0), runner)
    statuses = {r.host: r.status for r in store.results}
    assert statuses == {
        "a1": HostStatus.CHANGED,
        "a2": HostStatus.FAILED,
        "a3": HostStatus.NOT_RUN,
        "a4": HostStatus.NOT_RUN,
    }
    assert store.state == "halted"
    assert store.message == "1 host(s) failed, above the failure budget: stopped after batch 1"
    a2 = next(r for r in store.results if r.host == "a2")
    assert a2.failed_tasks[0].task == "Fail where told"
    assert a2.message == "told to fail on a2"
    a1 = next(r for r in store.results if r.host == "a1")
    assert [t.task for t in a1.changed_tasks] == ["Report a change where told"]
    # Batch 2 never started: no events file for it.
    assert not (tmp_path / "events-2.jsonl").exists()
    assert (tmp_path / "inventory.yml").stat().st_mode & 0o777 == 0o600


def test_failures_within_budget_let_every_batch_run(tmp_path: Path) -> None:
    runner = AnsibleRunner(
        local_setup(), tmp_path, local_inventory(["a2", "a4"], [], NAMES), check=True
    )
    store = run_to_the_end(FakeHostRunStore(NAMES, 2, failure_budget=2), runner)
    assert [r.status for r in store.results] == [
        HostStatus.OK,
        HostStatus.FAILED,
        HostStatus.OK,
        HostStatus.FAILED,
    ]
    assert [r.batch for r in store.results] == [1, 1, 2, 2]
    # 2 failures do not exceed a budget of 2: the rollout ran to the end.
    assert (store.state, store.message) == ("completed", None)
