"""Run one batch of ``playbooks/site.yml`` (the ``sluice.fabric`` collection's roles) with
ansible-playbook and read per-host results.

The edge to Ansible. Each batch is one ``ansible-playbook --limit <batch>`` run (forks = the
batch size) with ``--diff`` and, for a plan, ``--check``. Which hosts form a batch and when a
rollout stops (the failure budget) is the staging of ``controller/rollout/``, shared with
switch rollouts. Results come from the ``sluice.fabric.events`` callback's JSON lines
(docs/hosts.md), never from the screen.

``parse_events`` is pure; ``AnsibleRunner`` is the one place that starts a process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from controller.settings import HostsSettings

# How much of ansible-playbook's stderr a failed batch keeps (the end says what went wrong).
STDERR_TAIL_CHARS = 600
# The folder holding ansible_collections/sluice/fabric (the host roles, their modules and the
# sluice.fabric.events callback), searched first whatever playbook folder a run uses; then
# Ansible's own default places, so collections installed there still resolve.
COLLECTIONS_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_COLLECTIONS_PATH = "~/.ansible/collections:/usr/share/ansible/collections"


class HostStatus(StrEnum):
    OK = "ok"  # reached, nothing to change
    CHANGED = "changed"  # reached, changed something (in check mode: would change)
    FAILED = "failed"  # a task failed, or ansible-playbook gave no result for the host
    UNREACHABLE = "unreachable"  # SSH could not reach the host
    NOT_RUN = "not_run"  # its batch never started: the failure budget was exceeded

    @property
    def is_failure(self) -> bool:
        return self in (HostStatus.FAILED, HostStatus.UNREACHABLE)


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """One task on one host that changed or failed: its name, role, reason and diff."""

    task: str
    role: str | None = None
    msg: str | None = None
    diff: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "role": self.role, "msg": self.msg, "diff": self.diff}


@dataclass(frozen=True, slots=True)
class HostResult:
    host: str
    batch: int
    status: HostStatus
    changed_tasks: tuple[TaskOutcome, ...] = ()
    failed_tasks: tuple[TaskOutcome, ...] = ()
    message: str | None = None


# ---------------------------------------------------------------------------------------------
# the sluice.fabric.events JSON lines to per-host results


def _stats_status(stats: Mapping[str, int]) -> HostStatus:
    if stats.get("unreachable", 0):
        return HostStatus.UNREACHABLE
    if stats.get("failures", 0):
        return HostStatus.FAILED
    return HostStatus.CHANGED if stats.get("changed", 0) else HostStatus.OK


def _outcome(event: Mapping[str, Any]) -> TaskOutcome:
    return TaskOutcome(
        task=str(event.get("task", "")),
        role=event.get("role"),
        msg=event.get("msg"),
        diff=event.get("diff"),
    )


def _decode(lines: Iterable[str]) -> list[dict[str, Any]]:
    # A batch killed at its timeout may leave half a line at the end; that line is dropped.
    events = []
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):
            decoded = json.loads(line)
            if isinstance(decoded, dict):
                events.append(decoded)
    return events


def parse_events(
    lines: Iterable[str], hosts: Sequence[str], batch: int, *, exit_code: int, stderr: str = ""
) -> list[HostResult]:
    """Per-host results of one batch from the callback's lines. A host the final ``stats``
    line does not mention got no result (ansible-playbook stopped early): it is failed, with
    the exit code and the end of stderr as the reason."""
    events = _decode(lines)
    stats: dict[str, dict[str, int]] = {}
    changed: dict[str, list[TaskOutcome]] = {host: [] for host in hosts}
    failed: dict[str, list[TaskOutcome]] = {host: [] for host in hosts}
    for event in events:
        if event.get("event") == "stats":
            stats.update(event.get("hosts", {}))
        elif event.get("event") == "task" and event.get("host") in changed:
            status = event.get("status")
            if status == "changed":
                changed[event["host"]].append(_outcome(event))
            elif status in ("failed", "unreachable"):
                failed[event["host"]].append(_outcome(event))
    results = []
    for host in hosts:
        if host in stats:
            status = _stats_status(stats[host])
            message = failed[host][0].msg if failed[host] else None
        else:
            status = HostStatus.FAILED
            tail = stderr.strip()[-STDERR_TAIL_CHARS:]
            message = f"no result from ansible-playbook (exit {exit_code}): {tail}".rstrip(": ")
        results.append(
            HostResult(host, batch, status, tuple(changed[host]), tuple(failed[host]), message)
        )
    return results


# ---------------------------------------------------------------------------------------------
# the process


@dataclass(frozen=True, slots=True)
class AnsibleSetup:
    """Where ansible-playbook and the playbook live, and how to start it on the control node
    (``prefix``, e.g. ``ip netns exec <ns>`` for the namespaced test fabric)."""

    ansible_playbook: Path
    playbook: Path
    config: Path
    prefix: tuple[str, ...] = ()
    batch_timeout_s: float = 900.0
    extra_env: Mapping[str, str] = field(default_factory=dict)


def ansible_setup(settings: HostsSettings) -> AnsibleSetup:
    """How to start ansible-playbook, from the control node's settings."""
    return AnsibleSetup(
        ansible_playbook=settings.ansible_playbook,
        playbook=settings.playbook_dir / "site.yml",
        config=settings.playbook_dir / "ansible.cfg",
        prefix=settings.command_prefix,
        batch_timeout_s=settings.batch_timeout_s,
    )


def playbook_argv(
    setup: AnsibleSetup, inventory: Path, hosts: Sequence[str], *, check: bool
) -> list[str]:
    """The argv (never a shell string) for one batch."""
    argv = [
        *setup.prefix,
        str(setup.ansible_playbook),
        "-i",
        str(inventory),
        str(setup.playbook),
        "--diff",
        "--limit",
        ",".join(hosts),
        "--forks",
        str(max(1, len(hosts))),
    ]
    if check:
        argv.append("--check")
    return argv


@dataclass(frozen=True, slots=True)
class ProcessResult:
    exit_code: int
    stderr: str
    timed_out: bool


def run_process(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: Path
) -> ProcessResult:
    """Run ``argv`` in its own process group, so a timeout also kills Ansible's workers and
    their SSH sessions, not only the parent."""
    process = subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        return ProcessResult(process.returncode, stderr or "", True)
    return ProcessResult(process.returncode, stderr or "", False)


class AnsibleRunner:
    """Runs one batch at a time from a run's own folder (inventory and events files 0600)."""

    def __init__(
        self,
        setup: AnsibleSetup,
        rundir: Path,
        inventory_yaml: str,
        *,
        check: bool,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self._setup = setup
        self._rundir = rundir
        self._check = check
        self._base_env = dict(os.environ if base_env is None else base_env)
        rundir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._inventory = rundir / "inventory.yml"
        _write_private(self._inventory, inventory_yaml)

    def run_batch(self, hosts: Sequence[str], batch: int) -> list[HostResult]:
        events = self._rundir / f"events-{batch}.jsonl"
        _write_private(events, "")
        env = {
            **self._base_env,
            **self._setup.extra_env,
            "ANSIBLE_CONFIG": str(self._setup.config),
            "ANSIBLE_COLLECTIONS_PATH": collections_path(self._base_env),
            "ANSIBLE_NOCOLOR": "1",
            "SLUICE_EVENTS_FILE": str(events),
        }
        argv = playbook_argv(self._setup, self._inventory, hosts, check=self._check)
        done = run_process(argv, env, self._setup.batch_timeout_s, self._rundir)
        stderr = done.stderr
        if done.timed_out:
            stderr = f"timed out after {self._setup.batch_timeout_s:g} s; {stderr}"
        lines = events.read_text(encoding="utf-8").splitlines()
        return parse_events(lines, hosts, batch, exit_code=done.exit_code, stderr=stderr)


def collections_path(env: Mapping[str, str]) -> str:
    """``ANSIBLE_COLLECTIONS_PATH`` for a run: sluice's collection first, then what the
    environment named (or Ansible's default)."""
    rest = env.get("ANSIBLE_COLLECTIONS_PATH") or DEFAULT_COLLECTIONS_PATH
    return f"{COLLECTIONS_ROOT}{os.pathsep}{rest}"


def _write_private(path: Path, text: str) -> None:
    # The inventory names key files and hosts: readable by the controller's user only.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
