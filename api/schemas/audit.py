"""The audit log's rows."""

from __future__ import annotations

from datetime import datetime

from api.schemas.common import IntentJson, ViewOut


class AuditOut(ViewOut):
    id: int
    request_id: str
    actor: str
    action: str
    resource_type: str
    resource_id: str
    version: int | None
    before: IntentJson | None
    after: IntentJson | None
    at: datetime
