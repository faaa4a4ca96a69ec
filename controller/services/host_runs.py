"""Host runs, the API's side: record a plan (check mode) or an apply (batches, failure budget)
of the current intent's host variables, and read the recorded runs with every host's result.

The API only records: a run is written ``pending`` with a ``pending`` result per host, and the
worker (``controller/rollout/hosts.py``) runs it from PostgreSQL, so a run survives a restart
of either process. An apply answers at once (the caller polls ``GET /hosts/runs/{id}``); a plan
changes nothing and waits for the worker to finish it, so its answer is the finished run.
At most one apply is pending, running or rolling back at a time (a partial unique index).
Each host's row of an apply records the version it runs then (``from_version``, from the
runs before), which a failed health gate's rollback puts it back to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, FieldProblem, IntentInvalid, NotFound
from controller.hosts.compile import compile_hosts, exporter_targets
from controller.intent.loader import parse_intent
from controller.rollout.gates import GatePolicy, Reader
from controller.rollout.hosts import host_batches
from controller.services.common import Actor, Page, WorkerWait
from controller.services.rollouts import EvaluationInfo, evaluation_info, precheck
from controller.store.host_run_store import host_evaluations
from controller.store.models import UQ_HOST_RUN_ONE_ACTIVE_APPLY, HostRun, HostRunResult
from controller.store.repositories import host_runs, intents
from controller.store.repositories.host_runs import NewHostRun
from controller.store.rollout_store import evaluation_row
from controller.types import Clock, JsonObject

UNFINISHED = ("pending", "running", "rolling_back")


@dataclass(frozen=True, slots=True)
class HostResultView:
    host: str
    batch: int
    status: str
    changed_tasks: list[dict[str, Any]]
    failed_tasks: list[dict[str, Any]]
    message: str | None
    phase: str = "apply"  # "rollback": the host being put back to ``from_version``
    from_version: int | None = None


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
    gate_policy: dict[str, Any] | None = None
    soak_batch: int | None = None
    soak_until: datetime | None = None
    evaluations: list[EvaluationInfo] | None = None

    @property
    def counts(self) -> dict[str, int]:
        """Hosts per status; hosts without a result yet count as ``pending``. A rollback's
        hosts count under ``rollback_<status>``, as a switch rollout's do."""
        counts: dict[str, int] = {}
        applied = 0
        for result in self.results:
            rollback = result.phase == "rollback"
            name = f"rollback_{result.status}" if rollback else result.status
            counts[name] = counts.get(name, 0) + 1
            applied += not rollback
        counts["pending"] = len(self.hosts) - applied
        return counts


class HostRunService:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock, wait: WorkerWait) -> None:
        self._sessions = sessions
        self._clock = clock
        self._wait = wait

    # -- reads ---------------------------------------------------------------------------------

    def run(self, run_id: int) -> HostRunView:
        with self._sessions() as session:
            row = host_runs.get_run(session=session, run_id=run_id)
            if row is None:
                raise NotFound(f"host run {run_id} does not exist")
            view = _view(row, host_runs.results_of(session=session, run_id=run_id, phase=None))
            evaluations = [evaluation_info(e) for e in host_evaluations(session, run_id)]
            return replace(view, evaluations=evaluations)

    def runs(self, *, limit: int, offset: int) -> Page[HostRunView]:
        """Newest first, each with its per-host results."""
        with self._sessions() as session:
            rows, total = host_runs.list_runs(session=session, limit=limit, offset=offset)
            views = [
                _view(row, host_runs.results_of(session=session, run_id=row.id, phase=None))
                for row in rows
            ]
            return Page(views, total, limit, offset)

    def exporter_targets(self) -> list[JsonObject]:
        """The current intent's host exporters as Prometheus service-discovery target groups
        (one per host, labelled ``host``); none when the fabric runs no exporter
        (``fabric.host_exporter``) or no intent is stored."""
        with self._sessions() as session:
            row = intents.latest_version(session=session)
            data = None if row is None else row.intent
        return [] if data is None else exporter_targets(parse_intent(data))

    # -- requests ------------------------------------------------------------------------------

    def plan(self, *, actor: Actor) -> HostRunView:
        """Check mode over every host of the current intent, in one batch; nothing changes
        on the hosts. Recorded like an apply, and answered when the worker has finished it."""
        version, hosts = self._current_hosts()
        run_id = self._create(actor, "plan", version, hosts, len(hosts), len(hosts))
        self._wait.until(lambda: self.run(run_id).state not in UNFINISHED, f"host plan {run_id}")
        return self.run(run_id)

    def start_apply(
        self,
        *,
        actor: Actor,
        batch_size: int | None = None,
        failure_budget: int = 0,
        gates: GatePolicy | None = None,
        reader: Reader | None = None,
    ) -> HostRunView:
        """Record an apply of the current intent's host variables in batches of
        ``batch_size`` (default: all hosts at once); after a batch that brings failed and
        unreachable hosts above ``failure_budget``, the worker stops. With health ``gates``
        (read by ``reader``) the pre-checks run first and each batch soaks, as a switch
        rollout's (docs/rollouts.md). Answers at once with the run in state ``pending``."""
        if batch_size is not None and batch_size < 1:
            raise IntentInvalid([FieldProblem("batch_size", "must be at least 1")])
        if failure_budget < 0:
            raise IntentInvalid([FieldProblem("failure_budget", "must be at least 0")])
        version, hosts = self._current_hosts()
        size = min(batch_size or len(hosts), len(hosts))
        prechecks = precheck(gates, reader, self._switches(version), self._clock())
        run_id = self._create(actor, "apply", version, hosts, size, failure_budget)
        if gates is not None:
            with self._sessions.begin() as session:
                row = host_runs.get_run(session=session, run_id=run_id)
                if row is not None:
                    row.gate_policy = gates.to_json()
                session.add_all(evaluation_row(e, host_run_id=run_id) for e in prechecks)
        return self.run(run_id)

    def _switches(self, version: int) -> list[str]:
        with self._sessions() as session:
            row = intents.get_version(session=session, number=version)
            data = {} if row is None else row.intent
        return [str(s["name"]) for s in data.get("switches") or ()]

    # -- internals -----------------------------------------------------------------------------

    def _current_hosts(self) -> tuple[int, list[str]]:
        with self._sessions() as session:
            row = intents.latest_version(session=session)
            if row is None:
                raise NotFound("no intent has been stored yet")
            number, data = row.number, row.intent
        # Compiled here only to refuse a bad intent before anything is recorded; the worker
        # compiles the inventory again with its own control-node settings.
        compiled = compile_hosts(parse_intent(data))
        if not compiled.hosts:
            raise IntentInvalid([FieldProblem("hosts", "the intent declares no hosts")])
        return number, compiled.hosts

    def _create(
        self, actor: Actor, mode: str, version: int, hosts: list[str], size: int, budget: int
    ) -> int:
        planned = host_batches(hosts, size)
        with self._sessions() as session:
            running = host_runs.running_versions(session=session, hosts=hosts)
        new = NewHostRun(
            mode=mode,
            intent_version=version,
            hosts=hosts,
            batches=planned,
            batch_size=size,
            failure_budget=budget,
            batches_total=max(batch for _, batch in planned),
            requested_by=actor.name,
            request_id=actor.request_id,
            started_at=self._clock(),
            from_versions=running if mode == "apply" else {},
        )
        try:
            with self._sessions.begin() as session:
                return host_runs.create_run(session=session, run=new).id
        except IntegrityError as error:
            if UQ_HOST_RUN_ONE_ACTIVE_APPLY in str(error.orig):
                raise Conflict("another host apply is still running; wait for it") from None
            raise


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
        gate_policy=row.gate_policy,
        soak_batch=row.soak_batch,
        soak_until=row.soak_until,
        results=[
            HostResultView(
                host=r.host_name,
                batch=r.batch,
                status=r.status,
                changed_tasks=list(r.changed_tasks),
                failed_tasks=list(r.failed_tasks),
                message=r.message,
                phase=r.phase,
                from_version=r.from_version,
            )
            for r in results
            if r.status != "pending"
        ],
    )
