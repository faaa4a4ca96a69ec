"""Domain errors and request-validation errors as ``application/problem+json`` (RFC 9457).

Body: ``type`` (a stable URN per problem), ``title``, ``status``, ``detail``, ``instance``
(the request path), ``request_id``, and for field problems ``errors: [{field, reason}]``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from controller.errors import (
    ApiUnreachable,
    BodyTooLarge,
    BuffermgrdHeadroomDoesNotFit,
    BuffermgrdKmaxAboveXoff,
    CompiledConfigInvalid,
    Conflict,
    DeviationUnsupported,
    DocumentInvalid,
    Forbidden,
    HeadroomDoesNotFit,
    IntentInvalid,
    InventoryMismatch,
    KmaxAboveXoff,
    LosslessBufferInvalid,
    LosslessConflict,
    NamedConflict,
    NotFound,
    PortFlapsNotAllowed,
    PreconditionFailed,
    PreconditionRequired,
    PrometheusBadAnswer,
    PrometheusError,
    PrometheusQueryInvalid,
    PrometheusUnreachable,
    SluiceError,
    SouthboundError,
    SouthboundProtocolError,
    SouthboundRejected,
    SouthboundSetOutcomeUnknown,
    SouthboundSetUnconfirmed,
    SouthboundUnreachable,
    Unauthenticated,
    WatchdogNotStarted,
    WorkerTimeout,
)
from controller.services.health import database_outage

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:sluice:problem:"

STATUS_OF: dict[type[SluiceError], int] = {
    IntentInvalid: 422,
    DeviationUnsupported: 422,
    LosslessBufferInvalid: 422,
    HeadroomDoesNotFit: 422,
    KmaxAboveXoff: 422,
    # The same invariants with the headroom SONiC's buffer manager gives a port.
    BuffermgrdHeadroomDoesNotFit: 422,
    BuffermgrdKmaxAboveXoff: 422,
    # JSON or YAML sluice cannot read (not UTF-8, too deep, a key twice): named, never a 500.
    DocumentInvalid: 400,
    # Refused by its Content-Length, or once more than the limit arrived (api/body.py).
    BodyTooLarge: 413,
    NotFound: 404,
    Conflict: 409,
    PreconditionFailed: 412,
    PreconditionRequired: 428,
    Unauthenticated: 401,
    Forbidden: 403,
    # A client-side error; should one ever surface in the server it is an upstream failure.
    ApiUnreachable: 502,
    WorkerTimeout: 504,
    # The compiler refused its own output: a bug in sluice, nothing reached a switch.
    CompiledConfigInvalid: 500,
    # A switch, the API's upstream, failed: bad gateway, or gateway timeout when silent.
    SouthboundError: 502,
    SouthboundRejected: 502,
    SouthboundProtocolError: 502,
    SouthboundUnreachable: 504,
    # Prometheus, where telemetry history lives: down is unavailable, a wrong answer bad gateway.
    PrometheusUnreachable: 503,
    PrometheusQueryInvalid: 502,
    PrometheusBadAnswer: 502,
    PrometheusError: 502,
    SouthboundSetUnconfirmed: 504,
    SouthboundSetOutcomeUnknown: 504,
    PortFlapsNotAllowed: 409,
    # The intent disagrees with the switch: its ports, the operator's lossless traffic, or a
    # watchdog its config updater would refuse.
    NamedConflict: 409,
    InventoryMismatch: 409,
    LosslessConflict: 409,
    WatchdogNotStarted: 409,
    SluiceError: 400,
}


def status_of(error: SluiceError) -> int:
    """The status of the nearest mapped class in the error's ancestry."""
    for cls in type(error).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 400


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def problem(
    request: Request,
    *,
    status: int,
    title: str,
    detail: str,
    errors: list[dict[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + slug(title),
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        "request_id": getattr(request.state, "request_id", None),
    }
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def not_found(
    request: Request, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The 404 a ``NotFound`` gets, for a route that answers it with headers of its own."""
    return problem(
        request, status=STATUS_OF[NotFound], title=NotFound.title, detail=detail, headers=headers
    )


def field_of(loc: tuple[int | str, ...]) -> str:
    """``("body", "intent", "switches", 0, "name")`` -> ``intent.switches[0].name``; the
    request part (body/query/header/path) is dropped."""
    parts = loc[1:] if loc and loc[0] in ("body", "query", "header", "path", "cookie") else loc
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "body"


async def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SluiceError)
    status = status_of(exc)
    errors = None
    if isinstance(exc, IntentInvalid | NamedConflict):
        errors = [{"field": p.path, "reason": p.reason} for p in exc.problems]
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if status >= 500:
        log.error("request %s failed: %s", getattr(request.state, "request_id", "-"), exc.detail)
    return problem(
        request, status=status, title=exc.title, detail=exc.detail, errors=errors, headers=headers
    )


async def _request_invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"field": field_of(tuple(err.get("loc", ()))), "reason": str(err.get("msg", "invalid"))}
        for err in exc.errors()
    ]
    detail = "; ".join(f"{e['field']}: {e['reason']}" for e in errors)
    return problem(request, status=422, title="request invalid", detail=detail, errors=errors)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    title = {404: "not found", 405: "method not allowed"}.get(exc.status_code, "http error")
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # The router names only the methods of the first route matching the path; Allow
        # must list every method the path supports (RFC 9110, section 15.5.6).
        headers["Allow"] = ", ".join(allowed_methods(request))
    return problem(
        request, status=exc.status_code, title=title, detail=str(exc.detail), headers=headers
    )


def allowed_methods(request: Request) -> list[str]:
    """The methods the OpenAPI document lists for this path: those of the literal path when
    it is one (``/hosts/apply``), else those of every template matching it."""
    path = request.url.path
    paths: dict[str, dict[str, object]] = request.app.openapi().get("paths", {})
    if path in paths:
        return sorted(method.upper() for method in paths[path])
    methods: set[str] = set()
    for template, item in paths.items():
        pattern = "^" + re.sub(r"\{[^/]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            methods.update(method.upper() for method in item)
    return sorted(methods)


# Seconds a client should wait before retrying while the database is away.
RETRY_AFTER_S = 2


def database_unavailable(request: Request) -> JSONResponse:
    return problem(
        request,
        status=503,
        title="database unavailable",
        detail="the database does not answer; retry after Retry-After seconds",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    outage = database_outage(exc)
    if outage is not None:
        # One line, no traceback: an outage is an operational state, not a bug.
        log.warning(
            "request %s: database unavailable: %s",
            getattr(request.state, "request_id", "-"),
            outage,
        )
        return database_unavailable(request)
    return await _unexpected(request, exc)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # The traceback goes to the log with the request id; the client learns only the id.
    log.exception("request %s failed", getattr(request.state, "request_id", "-"))
    return problem(
        request,
        status=500,
        title="internal error",
        detail="the server failed; quote the request id when reporting it",
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(SluiceError, _domain_error)
    app.add_exception_handler(RequestValidationError, _request_invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # Database errors get their own handlers (the catch-all re-raises after answering).
    for error in (SQLAlchemyError, psycopg.Error, ConnectionError):
        app.add_exception_handler(error, _database_error)
    app.add_exception_handler(Exception, _unexpected)
