"""The audit log: ``record_change``, the one way a service writes a row (in the transaction
of the change it records), and reading the log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from controller.services.common import Actor, Page
from controller.store.models import AuditEntry
from controller.store.repositories import audit
from controller.types import JsonObject


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: int
    request_id: str
    actor: str
    action: str
    resource_type: str
    resource_id: str
    version: int | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: datetime


def record_change(
    session: Session,
    actor: Actor,
    action: str,
    *,
    resource_type: str,
    resource_id: str,
    version: int | None,
    before: JsonObject | None,
    after: JsonObject | None,
    at: datetime,
) -> None:
    """One audit row for a change ``actor`` made in ``session``'s transaction."""
    audit.insert_audit(
        session=session,
        request_id=actor.request_id,
        actor=actor.name,
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        version=version,
        before=before,
        after=after,
        at=at,
    )


class AuditService:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def list(
        self,
        *,
        limit: int,
        offset: int,
        resource_type: str | None = None,
        resource_id: str | None = None,
    ) -> Page[AuditRecord]:
        """Newest first, optionally for one resource type (and one resource)."""
        with self._sessions() as session:
            rows, total = audit.list_audit(
                session=session,
                limit=limit,
                offset=offset,
                resource_type=resource_type,
                resource_id=resource_id,
            )
            return Page([_record(row) for row in rows], total, limit, offset)


def _record(row: AuditEntry) -> AuditRecord:
    return AuditRecord(
        id=row.id,
        request_id=row.request_id,
        actor=row.actor,
        action=row.action,
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        version=row.version,
        before=row.before,
        after=row.after,
        at=row.at,
    )
