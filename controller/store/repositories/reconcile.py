"""Reconcile runs per switch and the drift events each run found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, select, update
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from controller.store.models import DriftEvent, ReconcileRequest, ReconcileRun
from controller.store.repositories.paging import page_of


@dataclass(frozen=True, slots=True)
class NewDrift:
    table_name: str
    entry_key: str
    field: str | None
    expected: str | None
    observed: str | None
    action: str  # DRIFT_ACTIONS: what the run did about this one


def insert_run(
    *,
    session: Session,
    switch_name: str,
    version: int,
    mode: str,
    status: str,
    drift_count: int,
    error: str | None,
    started_at: datetime,
    finished_at: datetime,
) -> ReconcileRun:
    row = ReconcileRun(
        switch_name=switch_name,
        version=version,
        mode=mode,
        status=status,
        drift_count=drift_count,
        error=error,
        started_at=started_at,
        finished_at=finished_at,
    )
    session.add(row)
    session.flush()
    return row


def insert_drift(
    *,
    session: Session,
    run: ReconcileRun,
    drift: Iterable[NewDrift],
    detected_at: datetime,
) -> None:
    session.add_all(
        DriftEvent(
            run_id=run.id,
            switch_name=run.switch_name,
            table_name=d.table_name,
            entry_key=d.entry_key,
            field=d.field,
            expected=d.expected,
            observed=d.observed,
            action=d.action,
            detected_at=detected_at,
        )
        for d in drift
    )
    session.flush()


def list_drift(
    *, session: Session, limit: int, offset: int, switch: str | None = None
) -> tuple[list[DriftEvent], int]:
    """Newest first; optionally one switch only."""
    query: Select[tuple[DriftEvent]] = select(DriftEvent)
    if switch is not None:
        query = query.where(DriftEvent.switch_name == switch)
    order = (DriftEvent.detected_at.desc(), DriftEvent.id.desc())
    return page_of(session=session, query=query, order=order, limit=limit, offset=offset)


def last_runs(*, session: Session) -> list[ReconcileRun]:
    """The newest run of every switch ever reconciled, by switch name."""
    query = (
        select(ReconcileRun)
        .ext(distinct_on(ReconcileRun.switch_name))
        .order_by(ReconcileRun.switch_name, ReconcileRun.started_at.desc(), ReconcileRun.id.desc())
    )
    return list(session.scalars(query))


def insert_request(
    *, session: Session, requested_by: str, request_id: str, at: datetime
) -> ReconcileRequest:
    row = ReconcileRequest(
        state="pending", requested_by=requested_by, request_id=request_id, requested_at=at
    )
    session.add(row)
    session.flush()
    return row


def pending_request_ids(*, session: Session) -> list[int]:
    query = select(ReconcileRequest.id).where(ReconcileRequest.state == "pending")
    return list(session.scalars(query.order_by(ReconcileRequest.id)))


def finish_requests(*, session: Session, ids: Iterable[int], at: datetime) -> None:
    session.execute(
        update(ReconcileRequest)
        .where(ReconcileRequest.id.in_(list(ids)))
        .values(state="done", finished_at=at)
    )


def request_state(*, session: Session, request_id: int) -> str | None:
    row = session.get(ReconcileRequest, request_id)
    return None if row is None else row.state
