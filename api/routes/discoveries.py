"""Discovery: what running switches are (ports, neighbours, QoS tables), read by the worker."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import IncludeTables, OperatorActor, RecordId, ServicesDep, Viewer
from api.schemas.adopting import DiscoverIn, DiscoveryOut

router = APIRouter(prefix="/discoveries", tags=["discoveries"])


@router.post("", response_model=DiscoveryOut, status_code=201)
def request_discovery(
    body: DiscoverIn, services: ServicesDep, actor: OperatorActor, tables: IncludeTables = False
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
    discovery_id: RecordId, services: ServicesDep, _: Viewer, tables: IncludeTables = False
) -> DiscoveryOut:
    """One discovery, checked against the current intent."""
    return DiscoveryOut.of(services.discoveries.get(discovery_id), tables=tables)
