"""The switch runner's ``RolloutStore`` (``controller/rollout/switches.py``) over PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import NotFound
from controller.intent.models import Intent
from controller.reconcile.apply import ApplyResult
from controller.rollout.gates import Evaluation, GateState
from controller.rollout.staging import PENDING
from controller.rollout.switches import (
    BACKWARD,
    FORWARD,
    Phase,
    RolloutView,
    SwitchProgress,
)
from controller.sonic.model import SwitchConfig
from controller.store.adoption_store import SqlAdoptions
from controller.store.models import GateEvaluation, Rollout, RolloutResult
from controller.store.rejections import accept_completed, reject_rolled_back
from controller.store.repositories import intents, rollouts
from controller.store.repositories.rollouts import NewResult
from controller.store.snapshots import decode_fleet, save_running_state
from controller.types import Clock


def rollout_view(
    row: Rollout,
    results: Sequence[RolloutResult],
    evaluations: Sequence[GateEvaluation] = (),
) -> RolloutView:
    progress = tuple(
        SwitchProgress(r.phase, r.switch_name, r.batch, r.status, r.attempts, r.reason)
        for r in results
    )
    return view_of(row, progress, evaluations)


def view_of(
    row: Rollout, progress: tuple[SwitchProgress, ...], evaluations: Sequence[GateEvaluation]
) -> RolloutView:
    return RolloutView(
        row.id,
        row.state,
        row.from_version,
        row.to_version,
        row.batch_size,
        row.failure_budget,
        progress,
        row.reason,
        GateState.recorded(row.gate_policy, row.soak_batch, row.soak_until, evaluations),
        row.allow_port_flaps,
    )


def existing_rollout(session: Session, rollout_id: int) -> Rollout:
    row = rollouts.get_rollout(session=session, rollout_id=rollout_id)
    if row is None:
        raise NotFound(f"rollout {rollout_id} does not exist")
    return row


def load_rollout(session: Session, rollout_id: int) -> tuple[Rollout, list[RolloutResult]]:
    row = existing_rollout(session, rollout_id)
    return row, rollouts.results_of(session=session, rollout_ids=[rollout_id])


class SqlRolloutStore(SqlAdoptions):
    """The runner's ``RolloutStore`` over PostgreSQL; desired states and intents are
    immutable per version, so they are cached. Adoption records are ``SqlAdoptions``'."""

    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        super().__init__(sessions, clock=clock)
        self._sessions = sessions
        self._clock = clock
        self._desired: dict[int, dict[str, SwitchConfig]] = {}
        self._intents: dict[int, Intent | None] = {}

    def runnable(self) -> list[int]:
        with self._sessions() as session:
            return rollouts.runnable_ids(session=session)

    def load(self, rollout_id: int, *, switch: str | None = None) -> RolloutView:
        with self._sessions() as session:
            row = existing_rollout(session, rollout_id)
            rows = rollouts.progress_of(session=session, rollout_id=rollout_id, switch_name=switch)
            evaluations = rollouts.evaluations_of(session=session, rollout_ids=[rollout_id])
            return view_of(row, tuple(SwitchProgress(*r) for r in rows), evaluations)

    def intent(self, version: int) -> Intent | None:
        if version not in self._intents:
            with self._sessions() as session:
                row = intents.get_version(session=session, number=version)
            self._intents[version] = None if row is None else Intent.model_validate(row.intent)
        return self._intents[version]

    def desired(self, version: int) -> dict[str, SwitchConfig]:
        if version not in self._desired:
            with self._sessions() as session:
                stored = intents.desired_states(session=session, version=version)
            self._desired[version] = decode_fleet(stored)
        return self._desired[version]

    def transition(
        self, rollout_id: int, state: str, expected: Sequence[str], reason: str | None = None
    ) -> bool:
        """Compare-and-set of the state; a rollout that ends ``rolled_back`` rejects its
        version and returns the head to the last good one, one that completes with every
        switch verified accepts it, in the same transaction (``controller/store/
        rejections.py``)."""
        with self._sessions.begin() as session:
            at = self._clock()
            moved = rollouts.set_state(
                session=session,
                rollout_id=rollout_id,
                state=state,
                expected=expected,
                at=at,
                reason=reason,
            )
            if moved and state in ("rolled_back", "completed"):
                row = existing_rollout(session, rollout_id)
                if state == "rolled_back":
                    reject_rolled_back(session, row, at)
                elif reason is None:
                    accept_completed(session, row, at)
            return moved

    def record(
        self,
        rollout_id: int,
        phase: Phase,
        result: ApplyResult,
        started: datetime,
        finished: datetime,
    ) -> None:
        with self._sessions.begin() as session:
            rollouts.record_result(
                session=session,
                rollout_id=rollout_id,
                phase=phase,
                switch_name=result.switch,
                status=result.status,
                reason=result.reason,
                detail=result.to_json(),
                started_at=started,
                finished_at=finished,
            )

    def record_running_state(self, switch: str, config: SwitchConfig) -> None:
        with self._sessions.begin() as session:
            save_running_state(
                session, switch=switch, config=config, at=self._clock(), source="rollout read-back"
            )

    def record_gates(self, rollout_id: int, evaluations: Sequence[Evaluation]) -> None:
        with self._sessions.begin() as session:
            rollouts.insert_evaluations(
                session=session,
                rows=[evaluation_row(e, rollout_id=rollout_id) for e in evaluations],
            )

    def set_soak(self, rollout_id: int, batch: int | None, until: datetime | None) -> None:
        with self._sessions.begin() as session:
            rollouts.set_soak(session=session, rollout_id=rollout_id, batch=batch, until=until)

    def start_rollback(self, rollout_id: int, switches: Sequence[str], reason: str) -> bool:
        with self._sessions.begin() as session:
            row = rollouts.get_rollout(session=session, rollout_id=rollout_id, for_update=True)
            if row is None or row.state != "running":
                return False
            rows = [NewResult(BACKWARD, name, index) for index, name in enumerate(switches)]
            rollouts.insert_results(session=session, rollout_id=rollout_id, results=rows)
            rollouts.reset_results(
                session=session,
                rollout_id=rollout_id,
                phase=FORWARD,
                statuses=(PENDING,),
                to="skipped",
            )
            return rollouts.set_state(
                session=session,
                rollout_id=rollout_id,
                state="rolling_back",
                expected=("running",),
                at=self._clock(),
                reason=reason,
            )


def evaluation_row(
    e: Evaluation, *, rollout_id: int | None = None, host_run_id: int | None = None
) -> GateEvaluation:
    """One gate reading as its row, owned by a switch rollout or by a host run."""
    return GateEvaluation(
        rollout_id=rollout_id,
        host_run_id=host_run_id,
        batch=e.batch,
        stage=e.stage,
        gate=e.gate,
        expression=e.expression,
        value=e.value,
        baseline=e.baseline,
        threshold=e.threshold,
        comparison=e.comparison,
        limit_value=e.limit,
        verdict=e.verdict,
        detail=e.detail,
        evaluated_at=e.at,
    )
