"""Tuning proposals (docs/tuning.md): run the tuner, list and explain proposals, approve or
reject one. ``install`` adds the router and the service to an app built by
``api.main.create_app``; the service has its own small connection pool and Prometheus client,
opened and closed with the app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, Path, Query, Request
from sqlalchemy import Engine

from api.deps import OperatorActor, Viewer
from api.services import Services
from controller.prometheus.promql import make_promql
from controller.services.tuning import ProposalRecord, TuningService
from controller.settings import PrometheusSettings
from controller.store.db import make_sessions
from controller.telemetry.tuning_summary import read_summary
from controller.types import Clock

router = APIRouter(prefix="/tuning", tags=["tuning"])


# The answer is the service's own record: FastAPI serialises the dataclass, so the API and
# the service share one definition of a proposal.
ProposalOut = ProposalRecord


def get_tuning(request: Request) -> TuningService:
    service: TuningService = request.app.state.tuning
    return service


TuningDep = Annotated[TuningService, Depends(get_tuning)]
ProposalId = Annotated[int, Path(ge=1, le=2**62, description="a tuning proposal's id")]


@router.post("/proposals", response_model=ProposalOut, status_code=201)
def run_tuner(tuning: TuningDep, actor: OperatorActor) -> ProposalOut:
    """One tuning pass now over the last ``fabric.tuning.window_s`` of telemetry; 409 when
    tuning is off. In ``auto`` mode the proposal comes back already approved."""
    return tuning.run(actor)


@router.get("/proposals", response_model=list[ProposalOut])
def list_proposals(
    tuning: TuningDep, _: Viewer, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[ProposalOut]:
    return list(tuning.list(limit))


@router.get("/proposals/{proposal_id}", response_model=ProposalOut)
def get_proposal(proposal_id: ProposalId, tuning: TuningDep, _: Viewer) -> ProposalOut:
    """A proposal with every change's evidence: inputs, rule, outputs, bounds."""
    return tuning.get(proposal_id)


@router.post("/proposals/{proposal_id}/approve", response_model=ProposalOut)
def approve_proposal(
    proposal_id: ProposalId, tuning: TuningDep, actor: OperatorActor
) -> ProposalOut:
    """Write the proposal as the next intent version (author ``tuner``); 409 if it is not
    pending or the intent moved on since it was made."""
    return tuning.approve(proposal_id, actor)


@router.post("/proposals/{proposal_id}/reject", response_model=ProposalOut)
def reject_proposal(
    proposal_id: ProposalId, tuning: TuningDep, actor: OperatorActor
) -> ProposalOut:
    return tuning.reject(proposal_id, actor)


def build_tuning_service(
    services: Services,
    engine: Engine,
    prometheus: PrometheusSettings,
    *,
    transport: httpx.BaseTransport | None,
    clock: Clock,
) -> tuple[TuningService, Callable[[], None]]:
    """The tuning service over the app's engine and a Prometheus client; also what closes it."""
    promql = make_promql(prometheus.url, prometheus.timeout_s, transport)
    service = TuningService(
        make_sessions(engine),
        services.intents,
        lambda at, window_s: read_summary(promql, at, window_s),
        clock=clock,
    )
    return service, promql.close
