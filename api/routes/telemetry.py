"""What each switch's ports and queues do now and over time, and the fabric's health, read from
Prometheus (docs/health.md). Prometheus down answers 503 ``prometheus-unreachable``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import PortName, ServicesDep, SwitchName, Viewer
from api.schemas.telemetry import FabricHealthOut, PortSeriesOut, SwitchTelemetryOut

router = APIRouter(prefix="/telemetry", tags=["telemetry"])
health_router = APIRouter(prefix="/health", tags=["telemetry"])

PROMETHEUS_DOWN: dict[int | str, dict[str, Any]] = {
    503: {"description": "Prometheus does not answer (prometheus-unreachable)"}
}


@router.get("/switches/{name}", response_model=SwitchTelemetryOut, responses=PROMETHEUS_DOWN)
def get_switch_telemetry(name: SwitchName, services: ServicesDep, _: Viewer) -> SwitchTelemetryOut:
    """The latest value of every port and queue metric of one switch, and its agent's state."""
    return SwitchTelemetryOut.of(services.telemetry.switch_now(name))


@router.get(
    "/switches/{name}/ports/{port}/series", response_model=PortSeriesOut, responses=PROMETHEUS_DOWN
)
def get_port_series(
    name: SwitchName,
    port: PortName,
    services: ServicesDep,
    _: Viewer,
    window_s: Annotated[
        int, Query(ge=60, le=7 * 86_400, description="seconds of history up to now")
    ] = 900,
) -> PortSeriesOut:
    """Per queue over time: threshold in force, occupancy, throughput, ECN marks (at most 240
    points per series)."""
    return PortSeriesOut.of(services.telemetry.port_series(name, port, window_s))


@health_router.get("", response_model=FabricHealthOut, responses=PROMETHEUS_DOWN)
def get_health(services: ServicesDep, _: Viewer) -> FabricHealthOut:
    """Fabric health (ok, warn, critical) with every reason, and each switch's."""
    return FabricHealthOut.of(services.telemetry.health())
