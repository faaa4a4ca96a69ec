"""Fabric parameters: base RTT, lambda, MTU, buffers, QJUMP and agent settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from api.deps import ExpectedVersion, OperatorActor, ServicesDep, Viewer, etag
from api.schemas import JsonObject

router = APIRouter(prefix="/fabric", tags=["fabric"])


@router.get("", response_model=JsonObject)
def get_fabric(response: Response, services: ServicesDep, _: Viewer) -> JsonObject:
    version, fabric = services.intents.fabric()
    response.headers["ETag"] = etag(version)
    return fabric


@router.put("", response_model=JsonObject)
def put_fabric(
    body: JsonObject,
    request: Request,
    response: Response,
    services: ServicesDep,
    actor: OperatorActor,
    expected: ExpectedVersion,
    reason: Annotated[str | None, Query(max_length=2000)] = None,
) -> JsonObject:
    """Set the fabric; on an empty store (If-Match "0") this creates the first version."""
    result = services.intents.put_fabric(
        body, expected=expected, actor=actor, reason=reason or f"PUT {request.url.path}"
    )
    response.headers["ETag"] = etag(result.version.number)
    if result.created:
        response.status_code = 201
    return result.resource or {}
