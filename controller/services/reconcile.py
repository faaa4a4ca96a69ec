"""Reconciliation in PostgreSQL: drift events and runs for the API, and the loop's store.

The version a switch is reconciled against is the one a rollout (or a rollback) last
verified on it; a switch sluice never verified is not reconciled (sluice owns nothing there
yet), nor one it released (until a rollout adopts it again). An adopted switch is held to
that version's desired state merged with the operator's config its adoption record keeps
(``controller/sonic/coexist.py``). While a rollout is running or rolling back, the loop
leaves the switches to it.

An operator's "reconcile now" is recorded by the API (``request_pass``) and answered by the
worker (``answer_requests``), the only process that talks to switches.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from controller.intent.models import Intent, Reconcile
from controller.reconcile.access import SwitchAccess
from controller.reconcile.loop import Drift, PassDispatch, ReconcileLoop, SwitchRun, Target
from controller.services.common import Actor, Page, WorkerWait
from controller.sonic.coexist import effective
from controller.sonic.digest import TableDigests, table_digests
from controller.store.adoption_store import adoption_state
from controller.store.models import DriftEvent, ReconcileRun
from controller.store.repositories import intents, reconcile, rollouts
from controller.store.repositories.reconcile import NewDrift
from controller.store.snapshots import decode_config, save_running_state
from controller.types import Clock

BUSY_STATES = ("running", "rolling_back")


@dataclass(frozen=True, slots=True)
class DriftInfo:
    id: int
    switch: str
    table: str
    key: str
    field: str | None
    expected: str | None
    observed: str | None
    action: str
    detected_at: datetime
    run_id: int


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: int
    switch: str
    version: int
    mode: str
    status: str
    drift_count: int
    error: str | None
    started_at: datetime
    finished_at: datetime


def _drift_info(row: DriftEvent) -> DriftInfo:
    return DriftInfo(
        row.id,
        row.switch_name,
        row.table_name,
        row.entry_key,
        row.field,
        row.expected,
        row.observed,
        row.action,
        row.detected_at,
        row.run_id,
    )


def _run_info(row: ReconcileRun) -> RunInfo:
    return RunInfo(
        row.id,
        row.switch_name,
        row.version,
        row.mode,
        row.status,
        row.drift_count,
        row.error,
        row.started_at,
        row.finished_at,
    )


def _action(run: SwitchRun, drift: Drift, withheld: Collection[Drift]) -> str:
    """What a run did about one of its drifts."""
    return "corrected" if run.status == "corrected" and drift not in withheld else "alerted"


class SqlReconcileStore:
    """The loop's ``ReconcileStore`` over PostgreSQL."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._intents: dict[int, Intent] = {}
        # A version's desired state never changes once stored, nor then its table digests;
        # nor an adoption's baseline, which the merged state also follows.
        self._digests: dict[tuple[int, str, int | None], TableDigests] = {}

    def _intent(self, session: Session, version: int) -> Intent | None:
        if version not in self._intents:
            row = intents.get_version(session=session, number=version)
            if row is None:
                return None
            self._intents[version] = Intent.model_validate(row.intent)
        return self._intents[version]

    def policy(self) -> Reconcile:
        """The head intent's ``fabric.reconcile`` (the defaults before any intent)."""
        with self._sessions() as session:
            head = intents.head_number(session=session)
            intent = self._intent(session, head) if head else None
        return intent.fabric.reconcile if intent is not None else Reconcile()

    def targets(self) -> list[Target]:
        return self._targets(None)

    def targets_named(self, names: Collection[str]) -> list[Target]:
        return self._targets(names)

    def _targets(self, only: Collection[str] | None) -> list[Target]:
        """Every switch a rollout verified and sluice has not released (or those of them
        named in ``only``)."""
        with self._sessions() as session:
            active = rollouts.active_rollout(session=session)
            if active is not None and active.state in BUSY_STATES:
                return []
            verified = {
                name: version
                for name, version in rollouts.verified_versions(session=session).items()
                if only is None or name in only
            }
            adopted = adoption_state(session, verified)
            found: list[Target] = []
            for name, version in sorted(verified.items()):
                if name in adopted.released:
                    continue
                intent = self._intent(session, version)
                switch = (
                    next((s for s in intent.switches if s.name == name), None) if intent else None
                )
                stored = intents.desired_states(session=session, version=version, switches=[name])
                if switch is not None and name in stored:
                    desired = effective(decode_config(stored[name]), adopted.baselines.get(name))
                    key = (version, name, adopted.ids.get(name))
                    digests = self._digests.get(key)
                    if digests is None:
                        digests = self._digests[key] = table_digests(desired)
                    found.append(Target(switch, version, desired, digests))
            return found

    def record(self, run: SwitchRun) -> None:
        with self._sessions.begin() as session:
            row = reconcile.insert_run(
                session=session,
                switch_name=run.switch,
                version=run.version,
                mode=run.mode.value,
                status=run.status,
                drift_count=len(run.drift),
                error=run.message,
                started_at=run.started,
                finished_at=run.finished,
            )
            # A corrected run's withheld drift (a watchdog GCU would refuse) was not written.
            withheld = set(run.withheld.drift) if run.withheld is not None else set()
            drift = [
                NewDrift(d.table, d.key, d.field, d.expected, d.observed, _action(run, d, withheld))
                for d in run.drift
            ]
            reconcile.insert_drift(session=session, run=row, drift=drift, detected_at=run.started)
            if run.running is not None:
                save_running_state(
                    session,
                    switch=run.switch,
                    config=run.running,
                    at=run.finished,
                    source=f"reconcile {run.status}",
                )


AccessFactory = Callable[[], SwitchAccess]


class ReconcileService:
    """Drift and runs for the API; ``run_now`` does one pass through ``access``."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        clock: Clock,
        rand: Callable[[], float] | None = None,
        wait: WorkerWait | None = None,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._rand = rand or random.Random().random
        self._wait = wait or WorkerWait()

    def drift(self, *, limit: int, offset: int, switch: str | None = None) -> Page[DriftInfo]:
        with self._sessions() as session:
            rows, total = reconcile.list_drift(
                session=session, limit=limit, offset=offset, switch=switch
            )
            return Page([_drift_info(r) for r in rows], total, limit, offset)

    def last_runs(self) -> list[RunInfo]:
        with self._sessions() as session:
            return [_run_info(r) for r in reconcile.last_runs(session=session)]

    def loop(
        self, access: SwitchAccess, *, max_parallel: int = 8, dispatch: PassDispatch | None = None
    ) -> ReconcileLoop:
        store = SqlReconcileStore(self._sessions)
        return ReconcileLoop(
            store, access, self._clock, self._rand, max_parallel=max_parallel, dispatch=dispatch
        )

    def request_pass(self, *, actor: Actor) -> list[RunInfo]:
        """Record a request for one pass over every switch now, wait for the worker to
        answer it, and give the newest run of every switch afterwards."""
        with self._sessions.begin() as session:
            row = reconcile.insert_request(
                session=session,
                requested_by=actor.name,
                request_id=actor.request_id,
                at=self._clock(),
            )
            request_id = row.id

        def answered() -> bool:
            with self._sessions() as session:
                return reconcile.request_state(session=session, request_id=request_id) == "done"

        self._wait.until(answered, f"reconcile request {request_id}")
        return self.last_runs()

    def answer_requests(self, loop: ReconcileLoop) -> int:
        """The worker's side: one pass answers every request recorded before it started;
        how many it answered."""
        with self._sessions() as session:
            pending = reconcile.pending_request_ids(session=session)
        if not pending:
            return 0
        loop.run_pass()
        with self._sessions.begin() as session:
            reconcile.finish_requests(session=session, ids=pending, at=self._clock())
        return len(pending)
