"""Tuning proposals (docs/tuning.md): run the tuner, list and explain proposals, approve or
reject one."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import LimitParam, OperatorActor, RecordId, ServicesDep, Viewer
from api.schemas.tuning import ProposalOut
from controller.services.tuning import SEARCHING_STATES

router = APIRouter(prefix="/tuning", tags=["tuning"])


@router.post(
    "/proposals",
    response_model=ProposalOut,
    status_code=201,
    responses={
        202: {
            "model": ProposalOut,
            "description": "With fabric.tuning.search: twin: the pass is queued for the worker "
            "(state queued); GET its Location until the state is neither queued nor running",
        }
    },
)
def run_tuner(services: ServicesDep, actor: OperatorActor, response: Response) -> ProposalOut:
    """One tuning pass over the last ``fabric.tuning.window_s`` of telemetry; 409 when
    tuning is off. Without a search it runs now (201; in ``auto`` mode the proposal comes back
    already approved); with ``fabric.tuning.search: twin`` it answers at once (202, state
    ``queued``; 409 while another searching pass is queued or running) and the worker runs
    the search."""
    record = services.tuning.request(actor)
    if record.state in SEARCHING_STATES:
        response.status_code = 202
    response.headers["Location"] = f"/api/v1/tuning/proposals/{record.id}"
    return ProposalOut.of(record)


@router.get("/proposals", response_model=list[ProposalOut])
def list_proposals(services: ServicesDep, _: Viewer, limit: LimitParam = 50) -> list[ProposalOut]:
    """Newest first."""
    return [ProposalOut.of(record) for record in services.tuning.list(limit)]


@router.get("/proposals/{proposal_id}", response_model=ProposalOut)
def get_proposal(proposal_id: RecordId, services: ServicesDep, _: Viewer) -> ProposalOut:
    """A proposal with every change's evidence: inputs, rule, outputs, bounds."""
    return ProposalOut.of(services.tuning.get(proposal_id))


@router.post("/proposals/{proposal_id}/approve", response_model=ProposalOut)
def approve_proposal(
    proposal_id: RecordId, services: ServicesDep, actor: OperatorActor
) -> ProposalOut:
    """Write the proposal as the next intent version (author ``tuner``); 409 if it is not
    pending or the intent moved on since it was made."""
    return ProposalOut.of(services.tuning.approve(proposal_id, actor))


@router.post("/proposals/{proposal_id}/reject", response_model=ProposalOut)
def reject_proposal(
    proposal_id: RecordId, services: ServicesDep, actor: OperatorActor
) -> ProposalOut:
    return ProposalOut.of(services.tuning.reject(proposal_id, actor))
