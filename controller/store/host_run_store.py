"""The host runner's ``HostRunStore`` (``controller/rollout/hosts.py``) over PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import NotFound
from controller.hosts.runner import HostResult
from controller.policy.models import Intent
from controller.rollout.hosts import HostProgress, HostRunState
from controller.store.repositories import host_runs, intents
from controller.store.repositories.host_runs import HostResultRow
from controller.types import Clock

FINAL_STATES = ("completed", "halted", "error")


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
            return HostRunState(
                id=row.id,
                mode=row.mode,
                state=row.state,
                intent_version=row.intent_version,
                failure_budget=row.failure_budget,
                results=tuple(HostProgress(r.host_name, r.batch, r.status) for r in results),
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
