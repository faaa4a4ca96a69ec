"""Request bodies: the caller is authorised before the body is read, and the body is parsed
by sluice's own JSON reader (``controller/intent/documents.py``: UTF-8, size, nesting and
integer limits, duplicate keys refused) before FastAPI validates it.

FastAPI reads and decodes the body before it runs any dependency, so without this a
viewer's malformed write got 422 (it should get 403) and a body Python's parser chokes on got
an unnamed 400.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.routing import request_response

from api.deps import authorize
from controller.intent.documents import parse_json_document
from controller.services.tokens import AccessRole


def required_role(dependant: Dependant) -> AccessRole | None:
    """The role a route's dependencies demand (``require_role``), if any."""
    for sub in dependant.dependencies:
        role = getattr(sub.call, "required_role", None)
        if isinstance(role, AccessRole):
            return role
        found = required_role(sub)
        if found is not None:
            return found
    return None


def guard_bodies(router: APIRouter) -> None:
    """Every route of ``router`` that takes a body authorises, then reads it with sluice's
    JSON reader, then runs as FastAPI built it. Call before the router is included: FastAPI
    builds an included route's handler from ``get_route_handler`` when including it."""
    for route in router.routes:
        if not isinstance(route, APIRoute) or route.body_field is None:
            continue
        if getattr(route, "_body_guarded", False):  # routers outlive apps: wrap once
            continue
        build = route.get_route_handler
        role = required_role(route.dependant)

        def guarded_handler(
            build: Callable[[], Callable[[Request], Awaitable[Response]]] = build,
            role: AccessRole | None = role,
        ) -> Callable[[Request], Awaitable[Response]]:
            return _guarded(build(), role)

        route.get_route_handler = guarded_handler  # type: ignore[method-assign,assignment]
        route.app = request_response(guarded_handler())
        route._body_guarded = True  # type: ignore[attr-defined]


def _guarded(
    handler: Callable[[Request], Awaitable[Response]], role: AccessRole | None
) -> Callable[[Request], Awaitable[Response]]:
    async def guarded(request: Request) -> Response:
        if role is not None:
            # The token lookup reads the database: off the event loop, as FastAPI does.
            await run_in_threadpool(authorize, request, role)
        raw = await request.body()
        if raw:
            # Starlette keeps what ``request.json()`` returns here; FastAPI reads that.
            request._json = parse_json_document(raw)
        return await handler(request)

    return guarded
