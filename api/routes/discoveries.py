"""Discovery: what running switches are (ports, neighbours, QoS tables), read by the worker."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.adoption_schemas import DiscoverIn, DiscoveryOut
from api.deps import DB_BIGINT_MAX, OperatorActor, ServicesDep, Viewer

router = APIRouter(prefix="/discoveries", tags=["discoveries"])
DiscoveryId = Annotated[int, Path(ge=1, le=DB_BIGINT_MAX, description="the discovery's id")]
Tables = Annotated[bool, Query(description="include every QoS table entry read")]


@router.post("", response_model=DiscoveryOut, status_code=201)
def request_discovery(
    body: DiscoverIn, services: ServicesDep, actor: OperatorActor, tables: Tables = False
) -> DiscoveryOut:
    """Read what the switches run (recorded and answered by the worker; 504 if no worker
    does so in time): ports and speeds, LLDP neighbours into a topology, the base RTT
    estimate, the QoS tables, an inventory to review, and the declared ports checked."""
    info = services.discoveries.request(
        names=body.switches,
        endpoints=[e.target() for e in body.endpoints],
        per_hop_us=body.per_hop_us,
        actor=actor,
    )
    return DiscoveryOut.of(info, tables=tables)


@router.get("/{discovery_id}", response_model=DiscoveryOut)
def get_discovery(
    discovery_id: DiscoveryId, services: ServicesDep, _: Viewer, tables: Tables = False
) -> DiscoveryOut:
    """One discovery, checked against the current intent."""
    return DiscoveryOut.of(services.discoveries.get(discovery_id), tables=tables)
