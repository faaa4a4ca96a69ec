"""Host runs (Ansible plan/apply over the hosts) and their per-host results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from controller.store.models import HostRun, HostRunResult, Json
from controller.store.repositories.paging import page_of


@dataclass(frozen=True, slots=True)
class NewHostRun:
    mode: str
    intent_version: int
    hosts: list[str]
    batch_size: int
    failure_budget: int
    batches_total: int
    requested_by: str
    request_id: str
    owner: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class HostResultRow:
    host_name: str
    batch: int
    status: str
    changed_tasks: list[Json]
    failed_tasks: list[Json]
    message: str | None


def create_run(*, session: Session, run: NewHostRun) -> HostRun:
    """A run in state ``running``; a second running apply breaks the partial unique index."""
    row = HostRun(
        mode=run.mode,
        state="running",
        intent_version=run.intent_version,
        hosts=list(run.hosts),
        batch_size=run.batch_size,
        failure_budget=run.failure_budget,
        batches_total=run.batches_total,
        batches_done=0,
        failures=0,
        requested_by=run.requested_by,
        request_id=run.request_id,
        owner=run.owner,
        message=None,
        started_at=run.started_at,
        finished_at=None,
    )
    session.add(row)
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
    session.add_all(
        HostRunResult(
            run_id=run_id,
            host_name=r.host_name,
            batch=r.batch,
            status=r.status,
            changed_tasks=r.changed_tasks,
            failed_tasks=r.failed_tasks,
            message=r.message,
            recorded_at=recorded_at,
        )
        for r in results
    )
    session.execute(
        update(HostRun)
        .where(HostRun.id == run_id)
        .values(batches_done=batches_done, failures=failures)
    )
    session.flush()


def finish_run(
    *, session: Session, run_id: int, state: str, message: str | None, finished_at: datetime
) -> None:
    session.execute(
        update(HostRun)
        .where(HostRun.id == run_id)
        .values(state=state, message=message, finished_at=finished_at)
    )


def get_run(*, session: Session, run_id: int) -> HostRun | None:
    return session.get(HostRun, run_id)


def results_of(*, session: Session, run_id: int) -> list[HostRunResult]:
    """In rollout order: by batch, then by the order the hosts were recorded."""
    query = (
        select(HostRunResult)
        .where(HostRunResult.run_id == run_id)
        .order_by(HostRunResult.batch, HostRunResult.id)
    )
    return list(session.scalars(query))


def list_runs(*, session: Session, limit: int, offset: int) -> tuple[list[HostRun], int]:
    """Newest first."""
    order = (HostRun.id.desc(),)
    return page_of(session=session, query=select(HostRun), order=order, limit=limit, offset=offset)


def running_runs(*, session: Session) -> list[HostRun]:
    return list(session.scalars(select(HostRun).where(HostRun.state == "running")))
