"""Drift events found by the reconcile loop: what differed, where, when, what was done."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import PagingDep, ServicesDep, Viewer
from api.schemas.common import NO_NUL, PageOut, page_out
from api.schemas.reconcile import DriftOut

router = APIRouter(prefix="/drift", tags=["reconcile"])


@router.get("", response_model=PageOut[DriftOut])
def list_drift(
    services: ServicesDep,
    paging: PagingDep,
    _: Viewer,
    switch: Annotated[
        str | None, Query(max_length=63, pattern=NO_NUL, description="only this switch")
    ] = None,
) -> PageOut[DriftOut]:
    """Newest first."""
    page = services.reconcile.drift(limit=paging.limit, offset=paging.offset, switch=switch)
    return page_out(page, [DriftOut.of(info) for info in page.items])
