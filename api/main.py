"""The app factory: ``create_app(settings)`` builds a FastAPI app with no module globals.

The services (and the database engine and Prometheus client under them) are built in the
lifespan by ``controller/services/wiring.py`` (so building an app opens nothing) and closed
when it ends. Serve with ``python -m api`` or
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

from api.body import BodyLimit, guard_bodies
from api.errors import install_error_handlers
from api.openapi import install_openapi
from api.routes import (
    audit,
    checks,
    dashboard,
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
    telemetry,
    tokens,
    tuning,
    twin_runs,
)
from controller.services.common import utc_now
from controller.services.wiring import open_services
from controller.settings import Settings
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
    settings.database.required_url("API")  # refused now, not at the first request

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with open_services(
            settings, clock=clock, prometheus_transport=prometheus_transport
        ) as services:
            app.state.services = services
            yield

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
    # Outermost: a body past the limit is refused before anything reads it (api/body.py).
    app.add_middleware(BodyLimit)
    app.include_router(health.router)
    # host_runs before hosts: /hosts/runs is the run list, not a host named "runs".
    routers = (intent, switches, host_runs, hosts, service_classes, fabric, plans, diff, audit)
    adopting = (discoveries, checks, releases)
    routers_more = (tokens, rollouts, drift, reconcile, twin_runs, tuning, telemetry, *adopting)
    for module in (*routers, *routers_more):
        guard_bodies(module.router)  # authorise before reading a body (api/body.py)
        app.include_router(module.router, prefix=API_PREFIX)
    app.include_router(telemetry.health_router, prefix=API_PREFIX)
    guard_bodies(twin_runs.deprecated_router)  # the old path of twin runs, until clients move
    app.include_router(twin_runs.deprecated_router, prefix=API_PREFIX)
    dashboard.install(app)
    install_openapi(app)
    return app


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: settings from the environment (``DATABASE_URL``, ``SLUICE_*``)."""
    return create_app(Settings())
