"""Desired-state diff between two intent versions (default: previous to current)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import ServicesDep, SwitchQuery, Viewer
from api.schemas.common import DB_INTEGER_MAX
from api.schemas.plans import DiffOut

router = APIRouter(prefix="/diff", tags=["diff"])


@router.get("", response_model=DiffOut)
def get_diff(
    services: ServicesDep,
    _: Viewer,
    from_version: Annotated[int | None, Query(alias="from", ge=0, le=DB_INTEGER_MAX)] = None,
    to_version: Annotated[int | None, Query(alias="to", ge=0, le=DB_INTEGER_MAX)] = None,
    switch: SwitchQuery = None,
) -> DiffOut:
    return DiffOut.of(
        services.plans.diff(from_version=from_version, to_version=to_version, switch=switch)
    )
