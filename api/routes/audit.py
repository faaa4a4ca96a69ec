"""The audit log: who changed what, when, in which request, before and after."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import PagingDep, ServicesDep, Viewer
from api.schemas.audit import AuditOut
from api.schemas.common import NO_NUL, PageOut, page_out

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", response_model=PageOut[AuditOut])
def list_audit(
    services: ServicesDep,
    paging: PagingDep,
    _: Viewer,
    resource_type: Annotated[str | None, Query(max_length=32, pattern=NO_NUL)] = None,
    resource_id: Annotated[str | None, Query(max_length=128, pattern=NO_NUL)] = None,
) -> PageOut[AuditOut]:
    """Newest first."""
    page = services.audit.list(
        limit=paging.limit,
        offset=paging.offset,
        resource_type=resource_type,
        resource_id=resource_id,
    )
    return page_out(page, [AuditOut.of(record) for record in page.items])
