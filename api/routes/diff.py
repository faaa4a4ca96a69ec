"""Desired-state diff between two intent versions (default: previous to current)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import DB_INTEGER_MAX, ServicesDep, Viewer
from api.schemas import DiffOut, PlanOut
from controller.intent.models import NAME_RE

router = APIRouter(prefix="/diff", tags=["diff"])


@router.get("", response_model=DiffOut)
def get_diff(
    services: ServicesDep,
    _: Viewer,
    from_version: Annotated[int | None, Query(alias="from", ge=0, le=DB_INTEGER_MAX)] = None,
    to_version: Annotated[int | None, Query(alias="to", ge=0, le=DB_INTEGER_MAX)] = None,
    switch: Annotated[str | None, Query(pattern=NAME_RE)] = None,
) -> DiffOut:
    result = services.plans.diff(from_version=from_version, to_version=to_version, switch=switch)
    return DiffOut(
        from_version=result.from_version,
        to_version=result.to_version,
        plans=[PlanOut.of(plan) for plan in result.plans],
    )
