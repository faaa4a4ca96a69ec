"""Host rollouts: plan (check mode) and apply (batches, failure budget) the current intent's
host variables with Ansible, recording every run and every host's result in PostgreSQL.

Why a background thread for apply: a rollout over many hosts in small batches takes minutes,
longer than an HTTP request should be held open, and its progress must survive the caller
going away. The API starts the run (one row, state ``running``), answers 202 with its id, and
a thread in the API process runs the batches, writing each batch's host results and the
progress counters as it finishes; ``GET /hosts/runs/{id}`` reads them. A plan changes nothing
and runs every host in one check-mode batch, so it runs synchronously within the request.

At most one apply runs at a time (a partial unique index). Each run records its owner
(``hostname:pid``). Before an apply starts, runs left ``running`` by a process that is gone
(this machine, a dead pid, or this pid but not a run this process is running: a restarted
container reuses pid 1) are marked ``interrupted``, so a crash never blocks applies for good;
another live replica's runs are left alone.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, FieldProblem, IntentInvalid, NotFound
from controller.hosts.render import render_hosts
from controller.hosts.runner import (
    AnsibleRunner,
    BatchReport,
    HostResult,
    RolloutOutcome,
    batches,
    roll_out,
)
from controller.policy.loader import parse_intent
from controller.services.common import Actor, Clock, Page
from controller.settings import HostsSettings
from controller.store.models import UQ_HOST_RUN_ONE_ACTIVE_APPLY, HostRun, HostRunResult
from controller.store.repositories import host_runs, intents
from controller.store.repositories.host_runs import HostResultRow, NewHostRun

Spawn = Callable[[Callable[[], None]], threading.Thread]


@dataclass(frozen=True, slots=True)
class HostResultView:
    host: str
    batch: int
    status: str
    changed_tasks: list[dict[str, Any]]
    failed_tasks: list[dict[str, Any]]
    message: str | None


@dataclass(frozen=True, slots=True)
class HostRunView:
    id: int
    mode: str
    state: str
    intent_version: int
    hosts: list[str]
    batch_size: int
    failure_budget: int
    batches_total: int
    batches_done: int
    failures: int
    requested_by: str
    message: str | None
    started_at: datetime
    finished_at: datetime | None
    results: list[HostResultView]

    @property
    def counts(self) -> dict[str, int]:
        """Hosts per status; hosts without a result yet count as ``pending``."""
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
        counts["pending"] = len(self.hosts) - len(self.results)
        return counts


def this_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale_owner(owner: str, me: str) -> bool:
    """A run whose process is gone: same machine and a pid that is not alive, or this very
    pid (the caller excludes the runs it is running itself)."""
    host, _, pid_text = owner.rpartition(":")
    my_host, _, my_pid = me.rpartition(":")
    if host != my_host or not pid_text.isdigit():
        return False
    return pid_text == my_pid or not _pid_alive(int(pid_text))


def _start_daemon(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name="sluice-host-run", daemon=True)
    thread.start()
    return thread


class HostRolloutService:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        clock: Clock,
        config: HostsSettings,
        spawn: Spawn = _start_daemon,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._config = config
        self._spawn = spawn
        self._owner = this_owner()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._active: set[int] = set()  # runs this process is running now

    # -- reads ---------------------------------------------------------------------------------

    def run(self, run_id: int) -> HostRunView:
        with self._sessions() as session:
            row = host_runs.get_run(session=session, run_id=run_id)
            if row is None:
                raise NotFound(f"host run {run_id} does not exist")
            return _view(row, host_runs.results_of(session=session, run_id=run_id))

    def runs(self, *, limit: int, offset: int) -> Page[HostRunView]:
        """Newest first, each with its per-host results."""
        with self._sessions() as session:
            rows, total = host_runs.list_runs(session=session, limit=limit, offset=offset)
            views = [
                _view(row, host_runs.results_of(session=session, run_id=row.id)) for row in rows
            ]
            return Page(views, total, limit, offset)

    # -- runs ----------------------------------------------------------------------------------

    def plan(self, *, actor: Actor) -> HostRunView:
        """Check mode over every host of the current intent, in one batch; nothing changes
        on the hosts. Recorded like an apply, and answered when it has finished."""
        version, rendered_yaml, hosts = self._render_current()
        run_id = self._create(actor, "plan", version, hosts, len(hosts), len(hosts))
        self._execute(run_id, rendered_yaml, hosts, len(hosts), len(hosts), check=True)
        return self.run(run_id)

    def start_apply(
        self, *, actor: Actor, batch_size: int | None = None, failure_budget: int = 0
    ) -> HostRunView:
        """Start applying the current intent's host variables in batches of ``batch_size``
        (default: all hosts at once); after a batch that brings failed and unreachable hosts
        above ``failure_budget``, stop. Answers at once with the run in state ``running``."""
        if batch_size is not None and batch_size < 1:
            raise IntentInvalid([FieldProblem("batch_size", "must be at least 1")])
        if failure_budget < 0:
            raise IntentInvalid([FieldProblem("failure_budget", "must be at least 0")])
        version, rendered_yaml, hosts = self._render_current()
        size = min(batch_size or len(hosts), len(hosts))
        self.interrupt_stale()
        run_id = self._create(actor, "apply", version, hosts, size, failure_budget)

        def work() -> None:
            self._execute(run_id, rendered_yaml, hosts, size, failure_budget, check=False)

        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(self._spawn(work))
        return self.run(run_id)

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait for the runs this process started (shutdown, tests, the CLI's own process)."""
        for thread in list(self._threads):
            thread.join(timeout_s)

    def interrupt_stale(self) -> list[int]:
        """Mark this machine's runs that no live process is running as ``interrupted``."""
        with self._lock:
            active = set(self._active)
        with self._sessions.begin() as session:
            stale = [
                row.id
                for row in host_runs.running_runs(session=session)
                if row.id not in active and is_stale_owner(row.owner, self._owner)
            ]
            for run_id in stale:
                host_runs.finish_run(
                    session=session,
                    run_id=run_id,
                    state="interrupted",
                    message="the controller process running it stopped",
                    finished_at=self._clock(),
                )
        return stale

    # -- internals -----------------------------------------------------------------------------

    def _render_current(self) -> tuple[int, str, list[str]]:
        with self._sessions() as session:
            row = intents.latest_version(session=session)
            if row is None:
                raise NotFound("no intent has been stored yet")
            number, data = row.number, row.intent
        # Validated again by render_hosts: a bad intent is refused before Ansible runs.
        rendered = render_hosts(parse_intent(data), group_vars=self._config.group_vars())
        if not rendered.hosts:
            raise IntentInvalid([FieldProblem("hosts", "the intent declares no hosts")])
        return number, rendered.yaml(), rendered.hosts

    def _create(
        self, actor: Actor, mode: str, version: int, hosts: list[str], size: int, budget: int
    ) -> int:
        new = NewHostRun(
            mode=mode,
            intent_version=version,
            hosts=hosts,
            batch_size=size,
            failure_budget=budget,
            batches_total=len(batches(hosts, size)),
            requested_by=actor.name,
            request_id=actor.request_id,
            owner=self._owner,
            started_at=self._clock(),
        )
        try:
            with self._lock, self._sessions.begin() as session:
                run_id = host_runs.create_run(session=session, run=new).id
                self._active.add(run_id)
                return run_id
        except IntegrityError as error:
            if UQ_HOST_RUN_ONE_ACTIVE_APPLY in str(error.orig):
                raise Conflict("another host apply is still running; wait for it") from None
            raise

    def _execute(
        self, run_id: int, inventory: str, hosts: list[str], size: int, budget: int, *, check: bool
    ) -> None:
        rundir = self._config.workdir / f"run-{run_id}"
        try:
            runner = AnsibleRunner(self._config.setup(), rundir, inventory, check=check)
            outcome = roll_out(
                hosts,
                batch_size=size,
                failure_budget=budget,
                run_batch=runner.run_batch,
                on_batch=lambda report: self._record(run_id, report),
            )
            self._finish(run_id, outcome)
        except Exception as error:  # the run must end in a state, whatever went wrong
            self._fail(run_id, f"{type(error).__name__}: {error}")
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
            with self._lock:
                self._active.discard(run_id)

    def _record(self, run_id: int, report: BatchReport) -> None:
        with self._sessions.begin() as session:
            host_runs.record_batch(
                session=session,
                run_id=run_id,
                results=[_row(result) for result in report.results],
                batches_done=report.batch,
                failures=report.failures,
                recorded_at=self._clock(),
            )

    def _finish(self, run_id: int, outcome: RolloutOutcome) -> None:
        not_run = [r for r in outcome.results if r.status.value == "not_run"]
        with self._sessions.begin() as session:
            if not_run:
                host_runs.record_batch(
                    session=session,
                    run_id=run_id,
                    results=[_row(r) for r in not_run],
                    batches_done=outcome.batches_run,
                    failures=outcome.failures,
                    recorded_at=self._clock(),
                )
            host_runs.finish_run(
                session=session,
                run_id=run_id,
                state="halted" if outcome.halted else "completed",
                message=_summary(outcome),
                finished_at=self._clock(),
            )

    def _fail(self, run_id: int, message: str) -> None:
        with self._sessions.begin() as session:
            host_runs.finish_run(
                session=session,
                run_id=run_id,
                state="error",
                message=message[:2000],
                finished_at=self._clock(),
            )


def _summary(outcome: RolloutOutcome) -> str | None:
    """Why a run stopped early; a run that ran every batch needs no words (its counts say)."""
    if outcome.halted:
        return (
            f"{outcome.failures} host(s) failed, above the failure budget: stopped after "
            f"batch {outcome.batches_run}"
        )
    return None


def _row(result: HostResult) -> HostResultRow:
    return HostResultRow(
        host_name=result.host,
        batch=result.batch,
        status=result.status.value,
        changed_tasks=[t.to_json() for t in result.changed_tasks],
        failed_tasks=[t.to_json() for t in result.failed_tasks],
        message=result.message,
    )


def _view(row: HostRun, results: list[HostRunResult]) -> HostRunView:
    return HostRunView(
        id=row.id,
        mode=row.mode,
        state=row.state,
        intent_version=row.intent_version,
        hosts=list(row.hosts),
        batch_size=row.batch_size,
        failure_budget=row.failure_budget,
        batches_total=row.batches_total,
        batches_done=row.batches_done,
        failures=row.failures,
        requested_by=row.requested_by,
        message=row.message,
        started_at=row.started_at,
        finished_at=row.finished_at,
        results=[
            HostResultView(
                host=r.host_name,
                batch=r.batch,
                status=r.status,
                changed_tasks=list(r.changed_tasks),
                failed_tasks=list(r.failed_tasks),
                message=r.message,
            )
            for r in results
        ],
    )
