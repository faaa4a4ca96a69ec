"""Plans: per-switch ordered CONFIG_DB ops from the recorded running state to the desired one."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import ServicesDep, Viewer
from api.schemas.plans import PlanRequest, PlansOut

router = APIRouter(prefix="/plans", tags=["plans"])


@router.post("", response_model=PlansOut)
def create_plans(body: PlanRequest, services: ServicesDep, _: Viewer) -> PlansOut:
    """Plan the current intent, or a proposed one (``intent``), for all or some switches.
    Nothing is stored or applied."""
    return PlansOut.of(services.plans.plan(intent_data=body.intent, switches=body.switches))
