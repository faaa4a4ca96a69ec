"""The app factory: ``create_app(settings)`` builds a FastAPI app with no module globals.

The engine and services are created in the lifespan (so building an app opens nothing) and
disposed when it ends. Serve with ``python -m api`` or
``uvicorn api.main:app_from_env --factory``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute

from api.body import guard_bodies
from api.errors import install_error_handlers
from api.openapi import install_openapi
from api.routes import (
    audit,
    diff,
    discoveries,
    drift,
    fabric,
    health,
    host_runs,
    hosts,
    intent,
    plans,
    reconcile,
    releases,
    rollouts,
    service_classes,
    switches,
    tokens,
    tuning,
    twin_runs,
)
from api.services import build_services
from api.telemetry_api import build_telemetry_service, install_telemetry_routers
from controller.services.common import utc_now
from controller.settings import Settings
from controller.store.db import make_engine
from controller.types import Clock

API_PREFIX = "/api/v1"
REQUEST_ID_HEADER = "X-Request-ID"
# A caller's request id is kept only if it is short and plain: it goes into logs and audit.
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def operation_id(route: APIRoute) -> str:
    """Stable, readable operation ids (``get_intent``, ``list_switches``) for clients."""
    return route.name


async def _request_id(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    offered = request.headers.get(REQUEST_ID_HEADER, "")
    request.state.request_id = offered if _CLIENT_REQUEST_ID.match(offered) else uuid.uuid4().hex
    response = await call_next(request)
    response.headers[REQUEST_ID_HEADER] = request.state.request_id
    return response


def create_app(
    settings: Settings,
    *,
    clock: Clock = utc_now,
    prometheus_transport: httpx.BaseTransport | None = None,
) -> FastAPI:
    """Telemetry history is read from ``settings.prometheus``; ``prometheus_transport`` lets a
    test answer for it in-process."""
    url = settings.database.required_url("API")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(url)
        app.state.services = build_services(engine, clock=clock, settings=settings)
        app.state.telemetry = build_telemetry_service(
            app.state.services,
            settings.prometheus,
            clock=clock,
            transport=prometheus_transport,
        )
        app.state.tuning, close_tuning = tuning.build_tuning_service(
            app.state.services,
            engine,
            settings.prometheus,
            transport=prometheus_transport,
            clock=clock,
        )
        try:
            yield
        finally:
            close_tuning()
            app.state.telemetry.close()
            engine.dispose()

    app = FastAPI(
        title="sluice",
        version="1",
        summary="Service-class intent, per-switch SONiC plans, history and audit",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.middleware("http")(_request_id)
    app.include_router(health.router)
    # host_runs before hosts: /hosts/runs is the run list, not a host named "runs".
    routers = (intent, switches, host_runs, hosts, service_classes, fabric, plans, diff, audit)
    adopting = (discoveries, releases)
    for module in (*routers, tokens, rollouts, drift, reconcile, twin_runs, tuning, *adopting):
        guard_bodies(module.router)  # authorise before reading a body (api/body.py)
        app.include_router(module.router, prefix=API_PREFIX)
    guard_bodies(twin_runs.deprecated_router)  # the old path of twin runs, until clients move
    app.include_router(twin_runs.deprecated_router, prefix=API_PREFIX)
    install_telemetry_routers(app, API_PREFIX)
    install_openapi(app)
    return app


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: settings from the environment (``DATABASE_URL``, ``SLUICE_*``)."""
    return create_app(Settings())
