"""Rollouts and their per-switch results: the state a runner resumes from after a restart."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import case, func, select, text, update
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from controller.store.models import GateEvaluation, Rollout, RolloutResult
from controller.store.repositories.paging import page_of
from controller.types import JsonObject

# A transaction-scoped advisory lock serialising rollout starts (ASCII of "rollout").
ROLLOUT_START_LOCK_KEY = 0x726F6C6C6F7574
FINISHED_STATES = ("completed", "rolled_back")
RUNNABLE_STATES = ("pending", "running", "rolling_back")


@dataclass(frozen=True, slots=True)
class NewResult:
    phase: str
    switch_name: str
    batch: int
    status: str = "pending"


def lock_rollout_starts(*, session: Session) -> None:
    """Serialise starters until the transaction ends, so two starts cannot both see no
    active rollout and both insert one."""
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ROLLOUT_START_LOCK_KEY})


def insert_rollout(
    *,
    session: Session,
    from_version: int,
    to_version: int,
    canary: list[str],
    batch_size: int,
    failure_budget: int,
    created_by: str,
    at: datetime,
    gate_policy: JsonObject | None = None,
    allow_port_flaps: bool = False,
) -> Rollout:
    row = Rollout(
        gate_policy=gate_policy,
        allow_port_flaps=allow_port_flaps,
        from_version=from_version,
        to_version=to_version,
        canary=canary,
        batch_size=batch_size,
        failure_budget=failure_budget,
        state="pending",
        created_by=created_by,
        created_at=at,
        updated_at=at,
    )
    session.add(row)
    session.flush()
    return row


def insert_results(*, session: Session, rollout_id: int, results: Iterable[NewResult]) -> None:
    session.add_all(
        RolloutResult(
            rollout_id=rollout_id,
            phase=r.phase,
            switch_name=r.switch_name,
            batch=r.batch,
            status=r.status,
            attempts=0,
        )
        for r in results
    )
    session.flush()


def get_rollout(*, session: Session, rollout_id: int, for_update: bool = False) -> Rollout | None:
    query = select(Rollout).where(Rollout.id == rollout_id)
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def active_rollout(*, session: Session) -> Rollout | None:
    """The rollout that is not finished (at most one exists), if any."""
    query = select(Rollout).where(Rollout.state.not_in(FINISHED_STATES)).order_by(Rollout.id)
    return session.scalars(query.limit(1)).first()


def runnable_ids(*, session: Session) -> list[int]:
    query = select(Rollout.id).where(Rollout.state.in_(RUNNABLE_STATES)).order_by(Rollout.id)
    return list(session.scalars(query))


def list_rollouts(*, session: Session, limit: int, offset: int) -> tuple[list[Rollout], int]:
    """Newest first."""
    order = (Rollout.id.desc(),)
    return page_of(session=session, query=select(Rollout), order=order, limit=limit, offset=offset)


def results_of(
    *, session: Session, rollout_ids: Collection[int], phase: str | None = None
) -> list[RolloutResult]:
    """Results in the order they run: phase, batch, switch name."""
    query = select(RolloutResult).where(RolloutResult.rollout_id.in_(list(rollout_ids)))
    if phase is not None:
        query = query.where(RolloutResult.phase == phase)
    order = (RolloutResult.rollout_id, RolloutResult.phase.desc(), RolloutResult.batch)
    return list(session.scalars(query.order_by(*order, RolloutResult.switch_name)))


# A result's progress without its detail, what a runner's step reads every round: phase,
# switch, batch, status, attempts, reason.
Progress = tuple[str, str, int, str, int, str | None]


def progress_of(
    *, session: Session, rollout_id: int, switch_name: str | None = None
) -> list[Progress]:
    """Each result's progress columns (of one switch when ``switch_name`` is given), in the
    order ``results_of`` gives: plain rows, no ORM objects and no ``detail`` JSON, since an
    engine-mode worker reads this once per switch job and a 1,000-switch rollout has 1,000
    rows."""
    query = select(
        RolloutResult.phase,
        RolloutResult.switch_name,
        RolloutResult.batch,
        RolloutResult.status,
        RolloutResult.attempts,
        RolloutResult.reason,
    ).where(RolloutResult.rollout_id == rollout_id)
    if switch_name is not None:
        query = query.where(RolloutResult.switch_name == switch_name)
    order = (RolloutResult.phase.desc(), RolloutResult.batch, RolloutResult.switch_name)
    # Rows unpack as tuples (SQLAlchemy 2.1 deprecates ``Result.tuples()``).
    return cast(list[Progress], [tuple(row) for row in session.execute(query.order_by(*order))])


def set_state(
    *,
    session: Session,
    rollout_id: int,
    state: str,
    expected: Collection[str],
    at: datetime,
    reason: str | None = None,
) -> bool:
    """Compare-and-set: move to ``state`` only from one of ``expected``. False when the
    rollout was elsewhere (an operator paused it meanwhile, say)."""
    values: dict[str, object] = {"state": state, "updated_at": at, "reason": reason}
    if state == "running":
        values["started_at"] = func.coalesce(Rollout.started_at, at)
    if state in (*FINISHED_STATES, "halted"):
        values["finished_at"] = at
    else:
        values["finished_at"] = None
    statement = (
        update(Rollout)
        .where(Rollout.id == rollout_id, Rollout.state.in_(list(expected)))
        .values(**values)
    )
    return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def record_result(
    *,
    session: Session,
    rollout_id: int,
    phase: str,
    switch_name: str,
    status: str,
    reason: str | None,
    detail: JsonObject | None,
    started_at: datetime,
    finished_at: datetime,
) -> None:
    statement = (
        update(RolloutResult)
        .where(
            RolloutResult.rollout_id == rollout_id,
            RolloutResult.phase == phase,
            RolloutResult.switch_name == switch_name,
        )
        .values(
            status=status,
            reason=reason,
            detail=detail,
            attempts=RolloutResult.attempts + 1,
            started_at=started_at,
            finished_at=finished_at,
        )
    )
    session.execute(statement)


def reset_results(
    *, session: Session, rollout_id: int, phase: str, statuses: Collection[str], to: str
) -> int:
    """Set every result of ``phase`` in one of ``statuses`` to ``to``; how many changed."""
    statement = (
        update(RolloutResult)
        .where(
            RolloutResult.rollout_id == rollout_id,
            RolloutResult.phase == phase,
            RolloutResult.status.in_(list(statuses)),
        )
        .values(status=to)
    )
    return int(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def last_finished_version(*, session: Session) -> int:
    """The version the fabric was last brought to: the target of the newest completed
    rollout, or the origin of the newest rolled-back one; 0 before any."""
    version = case((Rollout.state == "completed", Rollout.to_version), else_=Rollout.from_version)
    query = (
        select(version)
        .where(Rollout.state.in_(FINISHED_STATES))
        .order_by(Rollout.finished_at.desc(), Rollout.id.desc())
        .limit(1)
    )
    return int(session.scalar(query) or 0)


def verified_versions(
    *, session: Session, switches: Collection[str] | None = None
) -> dict[str, int]:
    """Switch name -> the intent version it was last verified running (by a rollout or a
    rollback); switches never verified are absent."""
    version = case(
        (RolloutResult.phase == "rollout", Rollout.to_version), else_=Rollout.from_version
    )
    query = (
        select(RolloutResult.switch_name, version)
        .join(Rollout, Rollout.id == RolloutResult.rollout_id)
        .where(RolloutResult.status == "applied_verified")
        .ext(distinct_on(RolloutResult.switch_name))
        .order_by(
            RolloutResult.switch_name,
            RolloutResult.finished_at.desc(),
            RolloutResult.id.desc(),
        )
    )
    if switches is not None:
        query = query.where(RolloutResult.switch_name.in_(list(switches)))
    return {str(name): int(v) for name, v in session.execute(query).all()}


def set_soak(
    *, session: Session, rollout_id: int, batch: int | None, until: datetime | None
) -> None:
    """Record the batch that soaks and until when (None, None: no batch soaks)."""
    statement = (
        update(Rollout).where(Rollout.id == rollout_id).values(soak_batch=batch, soak_until=until)
    )
    session.execute(statement)


def insert_evaluations(*, session: Session, rows: Iterable[GateEvaluation]) -> None:
    session.add_all(rows)
    session.flush()


def evaluations_of(*, session: Session, rollout_ids: Collection[int]) -> list[GateEvaluation]:
    """Gate readings in the order they were taken."""
    query = select(GateEvaluation).where(GateEvaluation.rollout_id.in_(list(rollout_ids)))
    return list(session.scalars(query.order_by(GateEvaluation.rollout_id, GateEvaluation.id)))
