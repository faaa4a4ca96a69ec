"""Fabric checks over what the switches run: the RoCE check."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import OperatorActor, RecordId, ServicesDep, Viewer
from api.schemas.checks import RoceCheckIn, RoceCheckOut

router = APIRouter(prefix="/checks", tags=["checks"])


@router.post("/roce", response_model=RoceCheckOut)
def check_roce(body: RoceCheckIn, services: ServicesDep, actor: OperatorActor) -> RoceCheckOut:
    """Read the switches (none named: every intent switch; recorded as a discovery and
    answered by the worker, 504 if no worker does so in time) and check them for RoCE: both
    ends of every fabric link agree on PFC priorities, the lossless DSCP->TC, TC->PG and
    PFC->queue entries and MTU; every lossless priority has headroom and a watchdog. A
    switch that could not be read is a finding. 200 whether or not there are findings."""
    info = services.checks.roce(
        names=body.switches, endpoints=[e.target() for e in body.endpoints], actor=actor
    )
    return RoceCheckOut.of(info)


@router.get("/roce/{discovery_id}", response_model=RoceCheckOut)
def get_roce_check(discovery_id: RecordId, services: ServicesDep, _: Viewer) -> RoceCheckOut:
    """The RoCE check of a recorded discovery (409 while it is pending)."""
    return RoceCheckOut.of(services.checks.roce_of_discovery(discovery_id))
