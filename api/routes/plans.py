"""Plans: per-switch ordered CONFIG_DB ops from the recorded running state to the desired one."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import ServicesDep, Viewer
from api.schemas import PlanOut, PlanRequest, PlansOut, WarningOut

router = APIRouter(prefix="/plans", tags=["plans"])


@router.post("", response_model=PlansOut)
def create_plans(body: PlanRequest, services: ServicesDep, _: Viewer) -> PlansOut:
    """Plan the current intent, or a proposed one (``intent``), for all or some switches.
    Nothing is stored or applied."""
    result = services.plans.plan(intent_data=body.intent, switches=body.switches)
    return PlansOut(
        base_version=result.base_version,
        proposed=result.proposed,
        plans=[PlanOut.of(plan) for plan in result.plans],
        warnings=[WarningOut(field=w.path, reason=w.reason) for w in result.warnings],
    )
