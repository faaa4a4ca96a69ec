"""What each switch's ports and queues do now and over time, and the fabric's health, read from
Prometheus (docs/health.md). Prometheus down answers 503 ``prometheus-unreachable``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from api.deps import Viewer
from api.telemetry_schemas import FabricHealthOut, PortSeriesOut, SwitchTelemetryOut
from controller.intent.models import NAME_RE, PORT_RE
from controller.services.telemetry import TelemetryService

router = APIRouter(prefix="/telemetry", tags=["telemetry"])
health_router = APIRouter(prefix="/health", tags=["telemetry"])

PROMETHEUS_DOWN: dict[int | str, dict[str, Any]] = {
    503: {"description": "Prometheus does not answer (prometheus-unreachable)"}
}


def get_telemetry(request: Request) -> TelemetryService:
    service: TelemetryService = request.app.state.telemetry
    return service


TelemetryDep = Annotated[TelemetryService, Depends(get_telemetry)]
SwitchName = Annotated[str, Path(pattern=NAME_RE, description="a switch of the intent")]


@router.get("/switches/{name}", response_model=SwitchTelemetryOut, responses=PROMETHEUS_DOWN)
def get_switch_telemetry(
    name: SwitchName, telemetry: TelemetryDep, _: Viewer
) -> SwitchTelemetryOut:
    """The latest value of every port and queue metric of one switch, and its agent's state."""
    return SwitchTelemetryOut.of(telemetry.switch_now(name))


@router.get(
    "/switches/{name}/ports/{port}/series", response_model=PortSeriesOut, responses=PROMETHEUS_DOWN
)
def get_port_series(
    name: SwitchName,
    port: Annotated[str, Path(pattern=PORT_RE, description="a port of the switch")],
    telemetry: TelemetryDep,
    _: Viewer,
    window_s: Annotated[
        int, Query(ge=60, le=7 * 86_400, description="seconds of history up to now")
    ] = 900,
) -> PortSeriesOut:
    """Per queue over time: threshold in force, occupancy, throughput, ECN marks (at most 240
    points per series)."""
    return PortSeriesOut.of(telemetry.port_series(name, port, window_s))


@health_router.get("", response_model=FabricHealthOut, responses=PROMETHEUS_DOWN)
def get_health(telemetry: TelemetryDep, _: Viewer) -> FabricHealthOut:
    """Fabric health (ok, warn, critical) with every reason, and each switch's."""
    return FabricHealthOut.of(telemetry.health())
