"""The host runner's ``HostRunStore`` (``controller/rollout/hosts.py``) over PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import NotFound
from controller.hosts.runner import HostResult
from controller.intent.models import Intent
from controller.rollout.gates import Evaluation, GateState
from controller.rollout.hosts import HostProgress, HostRunState
from controller.store.models import GateEvaluation, HostRun, HostRunResult
from controller.store.repositories import host_runs, intents
from controller.store.repositories.host_runs import ROLLBACK, HostResultRow, RollbackHost
from controller.store.rollout_store import evaluation_row
from controller.types import Clock

FINAL_STATES = ("completed", "halted", "error", "rolled_back")


def result_row(result: HostResult) -> HostResultRow:
    return HostResultRow(
        host_name=result.host,
        batch=result.batch,
        status=result.status.value,
        changed_tasks=[t.to_json() for t in result.changed_tasks],
        failed_tasks=[t.to_json() for t in result.failed_tasks],
        message=result.message,
    )


class SqlHostRunStore:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    def runnable(self) -> list[int]:
        with self._sessions() as session:
            return host_runs.runnable_ids(session=session)

    def load(self, run_id: int) -> HostRunState:
        with self._sessions() as session:
            row = host_runs.get_run(session=session, run_id=run_id)
            if row is None:
                raise NotFound(f"host run {run_id} does not exist")
            results = host_runs.results_of(session=session, run_id=run_id)
            rollback = host_runs.results_of(session=session, run_id=run_id, phase=ROLLBACK)
            readings = host_evaluations(session, run_id)
            version = intents.get_version(session=session, number=row.intent_version)
            switches = () if version is None else _switch_names(version.intent)
            return HostRunState(
                id=row.id,
                mode=row.mode,
                state=row.state,
                intent_version=row.intent_version,
                failure_budget=row.failure_budget,
                results=tuple(_progress(r) for r in results),
                gates=GateState.recorded(row.gate_policy, row.soak_batch, row.soak_until, readings),
                switches=switches,
                rollback=tuple(_progress(r) for r in rollback),
                message=row.message,
            )

    def intent(self, version: int) -> Intent | None:
        with self._sessions() as session:
            row = intents.get_version(session=session, number=version)
        return None if row is None else Intent.model_validate(row.intent)

    def transition(
        self, run_id: int, state: str, expected: Sequence[str], message: str | None = None
    ) -> bool:
        finished = self._clock() if state in FINAL_STATES else None
        with self._sessions.begin() as session:
            return host_runs.set_state(
                session=session,
                run_id=run_id,
                state=state,
                expected=expected,
                message=message,
                finished_at=finished,
            )

    def record(self, run_id: int, results: Sequence[HostResult], failures: int) -> None:
        with self._sessions.begin() as session:
            host_runs.record_batch(
                session=session,
                run_id=run_id,
                results=[result_row(r) for r in results],
                batches_done=max(r.batch for r in results),
                failures=failures,
                recorded_at=self._clock(),
            )

    def skip_pending(self, run_id: int, message: str) -> None:
        with self._sessions.begin() as session:
            host_runs.skip_pending(
                session=session, run_id=run_id, message=message, at=self._clock()
            )

    def record_gates(self, run_id: int, evaluations: Sequence[Evaluation]) -> None:
        with self._sessions.begin() as session:
            session.add_all(evaluation_row(e, host_run_id=run_id) for e in evaluations)

    def start_rollback(self, run_id: int, hosts: Sequence[HostProgress], message: str) -> bool:
        with self._sessions.begin() as session:
            return host_runs.start_rollback(
                session=session,
                run_id=run_id,
                hosts=[RollbackHost(h.host, h.batch, h.from_version) for h in hosts],
                message=message,
                at=self._clock(),
            )

    def record_rollback(self, run_id: int, results: Sequence[HostResult]) -> None:
        with self._sessions.begin() as session:
            host_runs.record_rollback(
                session=session,
                run_id=run_id,
                results=[result_row(r) for r in results],
                recorded_at=self._clock(),
            )

    def set_soak(self, run_id: int, batch: int | None, until: datetime | None) -> None:
        with self._sessions.begin() as session:
            row = session.get(HostRun, run_id)
            if row is not None:
                row.soak_batch, row.soak_until = batch, until


def _progress(row: HostRunResult) -> HostProgress:
    return HostProgress(row.host_name, row.batch, row.status, row.from_version)


def _switch_names(intent: object) -> tuple[str, ...]:
    switches = intent.get("switches") if isinstance(intent, dict) else None
    return tuple(str(s["name"]) for s in switches or () if isinstance(s, dict) and "name" in s)


def host_evaluations(session: Session, run_id: int) -> list[GateEvaluation]:
    query = (
        select(GateEvaluation)
        .where(GateEvaluation.host_run_id == run_id)
        .order_by(GateEvaluation.id)
    )
    return list(session.scalars(query))
