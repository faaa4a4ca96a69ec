"""Liveness and database reachability; no token needed (load balancers, compose)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.deps import ServicesDep
from api.errors import database_unavailable
from api.schemas.health import HealthOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, responses={503: {"description": "no database"}})
def healthz(request: Request, services: ServicesDep) -> HealthOut | JSONResponse:
    if services.health.database_reachable():
        return HealthOut(status="ok", database="ok")
    return database_unavailable(request)
