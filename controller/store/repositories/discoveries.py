"""Discovery requests (which switches, how to reach them) and what the worker found."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import column, func, or_, select, true, update
from sqlalchemy.dialects.postgresql import JSONB, distinct_on
from sqlalchemy.orm import Session

from controller.store.models import Discovery
from controller.types import JsonObject


def insert(
    *, session: Session, request: JsonObject, requested_by: str, request_id: str, at: datetime
) -> Discovery:
    row = Discovery(
        state="pending",
        request=request,
        requested_by=requested_by,
        request_id=request_id,
        requested_at=at,
    )
    session.add(row)
    session.flush()
    return row


def get(*, session: Session, discovery_id: int) -> Discovery | None:
    return session.get(Discovery, discovery_id)


def pending(*, session: Session) -> list[Discovery]:
    query = select(Discovery).where(Discovery.state == "pending").order_by(Discovery.id)
    return list(session.scalars(query))


def finish(*, session: Session, discovery_id: int, result: JsonObject, at: datetime) -> None:
    session.execute(
        update(Discovery)
        .where(Discovery.id == discovery_id, Discovery.state == "pending")
        .values(state="done", result=result, finished_at=at)
    )


def latest_found(*, session: Session, switches: Collection[str]) -> dict[str, JsonObject]:
    """Switch name -> what the newest finished discovery that reached it found (its
    ``Discovery.as_json``); switches never discovered are absent.

    One query, the items picked in the database: each discovery's result holds every switch
    it read (with its QoS tables), and the rows pile up with every discovery run, so reading
    them into Python to find a few switches' items grew with the history (a name no
    discovery ever reached, an LLDP peer outside the fabric, read every row)."""
    wanted = sorted(set(switches))
    if not wanted:
        return {}
    elements = func.jsonb_array_elements(Discovery.result["switches"])
    item = elements.table_valued(column("value", JSONB)).alias()
    name = item.c.value["switch"].astext
    error = item.c.value["error"]
    query = (
        select(name, item.c.value)
        .select_from(Discovery)
        .join(item, true())
        .where(
            Discovery.state == "done",
            name.in_(wanted),
            or_(error.is_(None), func.jsonb_typeof(error) == "null"),
        )
        .order_by(name, Discovery.finished_at.desc(), Discovery.id.desc())
        .ext(distinct_on(name))
    )
    return {switch: dict(found) for switch, found in session.execute(query)}
