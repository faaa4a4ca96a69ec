"""Host runs (Ansible plan/apply over the hosts) and their per-host results.

A run is recorded ``pending`` with one ``pending`` result per host, in its batch; the worker
moves it to ``running``, fills the results batch by batch and finishes it. A run that a
health gate rolls back gets a second row for each host it puts back (phase ``rollback``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from controller.store.models import HostRun, HostRunResult
from controller.store.repositories.paging import page_of
from controller.types import JsonObject

RUNNABLE_STATES = ("pending", "running", "rolling_back")
APPLY, ROLLBACK = "apply", "rollback"
SUCCEEDED = ("ok", "changed")


@dataclass(frozen=True, slots=True)
class NewHostRun:
    mode: str
    intent_version: int
    hosts: list[str]
    batches: list[tuple[str, int]]  # (host, batch) in run order
    batch_size: int
    failure_budget: int
    batches_total: int
    requested_by: str
    request_id: str
    started_at: datetime
    # The version each host runs now (``running_versions``), what a rollback restores.
    from_versions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostResultRow:
    host_name: str
    batch: int
    status: str
    changed_tasks: list[JsonObject]
    failed_tasks: list[JsonObject]
    message: str | None


def create_run(*, session: Session, run: NewHostRun) -> HostRun:
    """A run in state ``pending`` with a pending result per host; a second apply pending or
    running breaks the partial unique index."""
    row = HostRun(
        mode=run.mode,
        state="pending",
        intent_version=run.intent_version,
        hosts=list(run.hosts),
        batch_size=run.batch_size,
        failure_budget=run.failure_budget,
        batches_total=run.batches_total,
        batches_done=0,
        failures=0,
        requested_by=run.requested_by,
        request_id=run.request_id,
        message=None,
        started_at=run.started_at,
        finished_at=None,
    )
    session.add(row)
    session.flush()
    session.add_all(
        HostRunResult(
            run_id=row.id,
            host_name=host,
            batch=batch,
            status="pending",
            phase=APPLY,
            from_version=run.from_versions.get(host),
            changed_tasks=[],
            failed_tasks=[],
            message=None,
            recorded_at=run.started_at,
        )
        for host, batch in run.batches
    )
    session.flush()
    return row


def record_batch(
    *,
    session: Session,
    run_id: int,
    results: Sequence[HostResultRow],
    batches_done: int,
    failures: int,
    recorded_at: datetime,
) -> None:
    """One batch's host results and the run's progress, in the caller's transaction."""
    _record(session, run_id, APPLY, results, recorded_at)
    session.execute(
        update(HostRun)
        .where(HostRun.id == run_id)
        .values(batches_done=batches_done, failures=failures)
    )
    session.flush()


def _record(
    session: Session,
    run_id: int,
    phase: str,
    results: Sequence[HostResultRow],
    recorded_at: datetime,
) -> None:
    for r in results:
        session.execute(
            update(HostRunResult)
            .where(
                HostRunResult.run_id == run_id,
                HostRunResult.phase == phase,
                HostRunResult.host_name == r.host_name,
            )
            .values(
                status=r.status,
                changed_tasks=r.changed_tasks,
                failed_tasks=r.failed_tasks,
                message=r.message,
                recorded_at=recorded_at,
            )
        )


def record_rollback(
    *, session: Session, run_id: int, results: Sequence[HostResultRow], recorded_at: datetime
) -> None:
    """Rolled-back hosts' results (phase ``rollback``), in the caller's transaction."""
    _record(session, run_id, ROLLBACK, results, recorded_at)
    session.flush()


@dataclass(frozen=True, slots=True)
class RollbackHost:
    host_name: str
    batch: int  # rollback order: batch 1 first
    version: int | None  # what it is put back to (None: it ran no earlier version)


def start_rollback(
    *,
    session: Session,
    run_id: int,
    hosts: Sequence[RollbackHost],
    message: str,
    at: datetime,
) -> bool:
    """``running`` -> ``rolling_back`` with a pending rollback row per host; the hosts not
    reached yet are ``not_run``. False (nothing written) when the run was no longer running."""
    if not set_state(
        session=session, run_id=run_id, state="rolling_back", expected=("running",), message=message
    ):
        return False
    skip_pending(session=session, run_id=run_id, message=message, at=at)
    session.add_all(
        HostRunResult(
            run_id=run_id,
            host_name=h.host_name,
            batch=h.batch,
            status="pending",
            phase=ROLLBACK,
            from_version=h.version,
            changed_tasks=[],
            failed_tasks=[],
            message=None,
            recorded_at=at,
        )
        for h in hosts
    )
    session.flush()
    return True


def running_versions(*, session: Session, hosts: Collection[str]) -> dict[str, int]:
    """The intent version each of ``hosts`` runs now, from the host runs' history: the last
    apply that succeeded on it, or the version a later rollback put it back to. Hosts no apply
    reached are absent. Applies never overlap (one active at a time), so run order is time
    order, and within a run its rollback follows its apply."""
    query = (
        select(
            HostRunResult.host_name,
            HostRunResult.phase,
            HostRunResult.from_version,
            HostRun.intent_version,
        )
        .join(HostRun, HostRun.id == HostRunResult.run_id)
        .where(
            HostRun.mode == APPLY,
            HostRunResult.status.in_(SUCCEEDED),
            HostRunResult.host_name.in_(list(hosts)),
        )
        .order_by(HostRun.id, HostRunResult.phase)  # "apply" sorts before "rollback"
    )
    versions: dict[str, int] = {}
    for host, phase, from_version, intent_version in session.execute(query):
        version = from_version if phase == ROLLBACK else intent_version
        if version is not None:
            versions[host] = version
    return versions


def set_state(
    *,
    session: Session,
    run_id: int,
    state: str,
    expected: Collection[str],
    message: str | None = None,
    finished_at: datetime | None = None,
) -> bool:
    """Compare-and-set: move to ``state`` only from one of ``expected``."""
    statement = (
        update(HostRun)
        .where(HostRun.id == run_id, HostRun.state.in_(list(expected)))
        .values(state=state, message=message, finished_at=finished_at)
    )
    return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def skip_pending(*, session: Session, run_id: int, message: str, at: datetime) -> None:
    """The hosts a halted run did not reach: ``not_run``."""
    session.execute(
        update(HostRunResult)
        .where(
            HostRunResult.run_id == run_id,
            HostRunResult.phase == APPLY,
            HostRunResult.status == "pending",
        )
        .values(status="not_run", message=message, recorded_at=at)
    )


def get_run(*, session: Session, run_id: int) -> HostRun | None:
    return session.get(HostRun, run_id)


def results_of(*, session: Session, run_id: int, phase: str | None = APPLY) -> list[HostRunResult]:
    """In rollout order: by batch, then by the order the hosts were recorded; one ``phase``
    (None: the apply's rows, then the rollback's)."""
    query = select(HostRunResult).where(HostRunResult.run_id == run_id)
    if phase is not None:
        query = query.where(HostRunResult.phase == phase)
    order = (HostRunResult.phase, HostRunResult.batch, HostRunResult.id)
    return list(session.scalars(query.order_by(*order)))


def list_runs(*, session: Session, limit: int, offset: int) -> tuple[list[HostRun], int]:
    """Newest first."""
    order = (HostRun.id.desc(),)
    return page_of(session=session, query=select(HostRun), order=order, limit=limit, offset=offset)


def runnable_ids(*, session: Session) -> list[int]:
    """Runs the worker has yet to finish, oldest first."""
    query = select(HostRun.id).where(HostRun.state.in_(RUNNABLE_STATES)).order_by(HostRun.id)
    return list(session.scalars(query))
