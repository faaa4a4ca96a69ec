"""The audit log: one row per change, with the resource before and after."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from controller.store.models import AuditEntry
from controller.store.repositories.paging import page_of
from controller.types import JsonObject


def insert_audit(
    *,
    session: Session,
    request_id: str,
    actor: str,
    action: str,
    resource_type: str,
    resource_id: str,
    version: int | None,
    before: JsonObject | None,
    after: JsonObject | None,
    at: datetime,
) -> AuditEntry:
    row = AuditEntry(
        request_id=request_id,
        actor=actor,
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        version=version,
        before=before,
        after=after,
        at=at,
    )
    session.add(row)
    session.flush()
    return row


def list_audit(
    *,
    session: Session,
    limit: int,
    offset: int,
    resource_type: str | None = None,
    resource_id: str | None = None,
) -> tuple[list[AuditEntry], int]:
    """Newest first; optionally only one resource type (and one resource)."""
    query: Select[tuple[AuditEntry]] = select(AuditEntry)
    if resource_type is not None:
        query = query.where(AuditEntry.resource_type == resource_type)
    if resource_id is not None:
        query = query.where(AuditEntry.resource_id == resource_id)
    order = (AuditEntry.id.desc(),)
    return page_of(session=session, query=query, order=order, limit=limit, offset=offset)
