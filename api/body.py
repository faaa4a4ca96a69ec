"""Request bodies, in the order docs/api.md gives: the caller is authorised (401/403), then
the body is read within ``DOCUMENT_BYTES_MAX`` (413) and parsed by sluice's own JSON reader
(``controller/intent/documents.py``: UTF-8, nesting and integer limits, duplicate keys
refused; 400), then its shape is checked against the route's body model (422), and only then
does FastAPI run the route's other dependencies (``If-Match``: 428/412).

FastAPI reads and decodes the body before it runs any dependency, and runs every dependency
before it validates the body, so without this a viewer's malformed write got 422 (it should
get 403), a body Python's parser chokes on got an unnamed 400, a malformed body with a stale
``If-Match`` got 412, and a body was read whole before its size was known.

``BodyLimit`` refuses a body past the limit by its ``Content-Length`` before anything reads
it, and counts what a route reads of a body without one (chunked), so no body larger than the
limit is ever held: the 413 comes once the limit is passed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import _should_embed_body_fields, request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.routing import request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from api.deps import authorize
from api.errors import problem
from controller.errors import BodyTooLarge
from controller.intent.documents import DOCUMENT_BYTES_MAX, parse_json_document
from controller.services.tokens import AccessRole


class BodyLimit:
    """ASGI middleware: a request whose ``Content-Length`` is past ``max_bytes`` is answered
    413 before anything reads its body (on every path, whoever would read it). A body
    without one (chunked) is bounded by the reader that reads it (``read_body``)."""

    def __init__(self, app: ASGIApp, max_bytes: int = DOCUMENT_BYTES_MAX) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = _content_length(scope) if scope["type"] == "http" else None
        if declared is None or declared <= self.max_bytes:
            await self.app(scope, receive, send)
            return
        too_large = BodyTooLarge(
            too_large_detail(self.max_bytes, f"Content-Length says {declared} bytes")
        )
        response = problem(
            Request(scope), status=413, title=too_large.title, detail=too_large.detail
        )
        # The body stays unread; the server closes the connection after the answer.
        await response(scope, receive, send)


def too_large_detail(max_bytes: int, what: str) -> str:
    return f"the body is larger than {max_bytes} bytes ({what})"


async def read_body(request: Request, max_bytes: int = DOCUMENT_BYTES_MAX) -> bytes:
    """The request's body, read as it arrives and refused (``BodyTooLarge``) as soon as more
    than ``max_bytes`` have: a chunked body is never held past the limit."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise BodyTooLarge(too_large_detail(max_bytes, f"more than {max_bytes} bytes arrived"))
    # Starlette keeps it: FastAPI's own ``request.body()`` answers from here.
    request._body = bytes(body)
    return request._body


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed Content-Length itself
    return None


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
            route: APIRoute = route,
        ) -> Callable[[Request], Awaitable[Response]]:
            return _guarded(build(), role, route.dependant)

        route.get_route_handler = guarded_handler  # type: ignore[method-assign,assignment]
        route.app = request_response(guarded_handler())
        route._body_guarded = True  # type: ignore[attr-defined]


def _guarded(
    handler: Callable[[Request], Awaitable[Response]],
    role: AccessRole | None,
    dependant: Dependant,
) -> Callable[[Request], Awaitable[Response]]:
    embedded = _should_embed_body_fields(dependant.body_params)

    async def guarded(request: Request) -> Response:
        if role is not None:
            # The token lookup reads the database: off the event loop, as FastAPI does.
            await run_in_threadpool(authorize, request, role)
        raw = await read_body(request)
        document = parse_json_document(raw) if raw else None
        # The body's shape before the route's other dependencies (If-Match), as documented.
        _, errors = await request_body_to_args(dependant.body_params, document, embedded)
        if errors:
            raise RequestValidationError(errors, body=document)
        if raw:
            # Starlette keeps what ``request.json()`` returns here; FastAPI reads that.
            request._json = document
        return await handler(request)

    return guarded
