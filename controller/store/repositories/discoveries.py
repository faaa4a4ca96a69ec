"""Discovery requests (which switches, how to reach them) and what the worker found."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select, update
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
    ``Discovery.as_json``); switches never discovered are absent."""
    wanted = set(switches)
    found: dict[str, JsonObject] = {}
    query = (
        select(Discovery.result)
        .where(Discovery.state == "done")
        .order_by(Discovery.finished_at.desc(), Discovery.id.desc())
    )
    for result in session.scalars(query):
        for item in (result or {}).get("switches", []):
            name = item.get("switch")
            if name in wanted and name not in found and item.get("error") is None:
                found[name] = item
        if wanted <= found.keys():
            break
    return found
