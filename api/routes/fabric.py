"""Fabric parameters: base RTT, lambda, MTU, buffers, QJUMP and agent settings."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import IntentWriteDep, ServicesDep, Viewer, etag, mark_written
from api.schemas.common import IntentJson

router = APIRouter(prefix="/fabric", tags=["fabric"])


@router.get("", response_model=IntentJson)
def get_fabric(response: Response, services: ServicesDep, _: Viewer) -> IntentJson:
    version, fabric = services.intents.fabric()
    response.headers["ETag"] = etag(version)
    return fabric


@router.put("", response_model=IntentJson)
def put_fabric(
    body: IntentJson, response: Response, services: ServicesDep, write: IntentWriteDep
) -> IntentJson:
    """Set the fabric; on an empty store (If-Match "0") this creates the first version."""
    result = services.intents.put_fabric(
        body, expected=write.expected, actor=write.actor, reason=write.reason
    )
    mark_written(response, result)
    return result.resource or {}
