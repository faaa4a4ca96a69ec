"""Adoption records (the operator's config before sluice's first write to a switch) and the
release requests that give it back."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Select, select, update
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from controller.store.models import Adoption, Release
from controller.store.repositories.paging import page_of
from controller.types import JsonObject


def active(*, session: Session, switch_name: str, for_update: bool = False) -> Adoption | None:
    """The switch's adoption that is not released, if any (at most one exists)."""
    query = select(Adoption).where(
        Adoption.switch_name == switch_name, Adoption.released_at.is_(None)
    )
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def latest(*, session: Session, switches: Collection[str] | None = None) -> dict[str, Adoption]:
    """Switch name -> its newest adoption record (released or not)."""
    query = (
        select(Adoption)
        .ext(distinct_on(Adoption.switch_name))
        .order_by(Adoption.switch_name, Adoption.adopted_at.desc(), Adoption.id.desc())
    )
    if switches is not None:
        query = query.where(Adoption.switch_name.in_(list(switches)))
    return {row.switch_name: row for row in session.scalars(query)}


def insert(
    *, session: Session, switch_name: str, baseline: JsonObject, at: datetime, by: str
) -> Adoption:
    row = Adoption(switch_name=switch_name, baseline=baseline, adopted_at=at, adopted_by=by)
    session.add(row)
    session.flush()
    return row


def mark_released(*, session: Session, switch_name: str, at: datetime, by: str) -> int | None:
    """Release the switch's active adoption; its id, or None when there was none."""
    row = active(session=session, switch_name=switch_name, for_update=True)
    if row is None:
        return None
    row.released_at = at
    row.released_by = by
    session.flush()
    return row.id


def list_adoptions(
    *, session: Session, limit: int, offset: int, switch: str | None = None
) -> tuple[list[Adoption], int]:
    """Newest first; optionally one switch only."""
    query: Select[tuple[Adoption]] = select(Adoption)
    if switch is not None:
        query = query.where(Adoption.switch_name == switch)
    order = (Adoption.adopted_at.desc(), Adoption.id.desc())
    return page_of(session=session, query=query, order=order, limit=limit, offset=offset)


def insert_release(
    *,
    session: Session,
    switch_name: str,
    adoption_id: int,
    allow_port_flaps: bool,
    requested_by: str,
    request_id: str,
    at: datetime,
) -> Release:
    row = Release(
        switch_name=switch_name,
        adoption_id=adoption_id,
        state="pending",
        allow_port_flaps=allow_port_flaps,
        requested_by=requested_by,
        request_id=request_id,
        requested_at=at,
    )
    session.add(row)
    session.flush()
    return row


def pending_releases(*, session: Session) -> list[Release]:
    query = select(Release).where(Release.state == "pending").order_by(Release.id)
    return list(session.scalars(query))


def pending_release_of(*, session: Session, switch_name: str) -> Release | None:
    query = select(Release).where(Release.state == "pending", Release.switch_name == switch_name)
    return session.scalars(query).first()


def finish_release(
    *,
    session: Session,
    release_id: int,
    state: str,
    reason: str | None,
    detail: JsonObject | None,
    at: datetime,
) -> None:
    session.execute(
        update(Release)
        .where(Release.id == release_id, Release.state == "pending")
        .values(state=state, reason=reason, detail=detail, finished_at=at)
    )


def get_release(*, session: Session, release_id: int) -> Release | None:
    return session.get(Release, release_id)


def list_releases(*, session: Session, limit: int, offset: int) -> tuple[list[Release], int]:
    query: Select[tuple[Release]] = select(Release)
    order = (Release.requested_at.desc(), Release.id.desc())
    return page_of(session=session, query=query, order=order, limit=limit, offset=offset)
