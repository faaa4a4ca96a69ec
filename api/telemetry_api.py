"""Telemetry, health and the dashboard: the Prometheus client the app holds, its dependency,
and the routers (kept apart from ``api/services.py``: the client is closed when the app
stops)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from api.routes import dashboard, telemetry
from api.services import Services
from controller.prometheus.promql import make_promql
from controller.services.telemetry import TelemetryService
from controller.settings import PrometheusSettings
from controller.types import Clock


def build_telemetry_service(
    services: Services,
    settings: PrometheusSettings,
    *,
    clock: Clock,
    transport: httpx.BaseTransport | None = None,
) -> TelemetryService:
    promql = make_promql(settings.url, settings.timeout_s, transport)
    return TelemetryService(promql, lambda: services.intents.current().intent, clock=clock)


def install_telemetry_routers(app: FastAPI, prefix: str) -> None:
    app.include_router(telemetry.router, prefix=prefix)
    app.include_router(telemetry.health_router, prefix=prefix)
    dashboard.install(app)
