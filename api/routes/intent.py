"""The whole intent: current, replace, validate, and its version history."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse

from api.deps import (
    DB_INTEGER_MAX,
    ExpectedVersion,
    OperatorActor,
    PagingDep,
    ServicesDep,
    Viewer,
    etag,
    mark_written,
)
from api.errors import problem
from api.schemas import (
    IntentIn,
    IntentOut,
    PageOut,
    ValidateOut,
    VersionOut,
    WriteOut,
    page_out,
)
from controller.errors import NotFound
from controller.intent.loader import dump_intent
from controller.types import JsonObject

router = APIRouter(prefix="/intent", tags=["intent"])


@router.get("", response_model=IntentOut, responses={404: {"description": "no intent yet"}})
def get_intent(
    request: Request, response: Response, services: ServicesDep, _: Viewer
) -> IntentOut | JSONResponse:
    """The current intent; ``ETag`` names its version. With no intent yet: 404 and ETag "0"."""
    try:
        record = services.intents.current()
    except NotFound as exc:
        return problem(
            request, status=404, title=exc.title, detail=exc.detail, headers={"ETag": etag(0)}
        )
    response.headers["ETag"] = etag(record.info.number)
    return IntentOut(version=VersionOut.of(record.info), intent=record.data)


@router.put("", response_model=WriteOut)
def replace_intent(
    body: IntentIn,
    response: Response,
    services: ServicesDep,
    actor: OperatorActor,
    expected: ExpectedVersion,
) -> WriteOut:
    """Replace the whole intent; needs ``If-Match`` with the version read ("0" for the first)."""
    result = services.intents.replace(
        body.intent, expected=expected, actor=actor, reason=body.reason
    )
    mark_written(response, result)
    return WriteOut(version=VersionOut.of(result.version), changed=result.changed)


# The intent's own parser checks every field; the document says at least what the top level
# needs (docs/intent.md), so a client generating bodies from it starts from a real shape.
INTENT_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["fabric"],
    "properties": {
        "api_version": {"type": "string", "enum": ["sluice/v1"]},
        "fabric": {"type": "object", "required": ["base_rtt_us", "port_buffer_bytes"]},
        "switches": {"type": "array", "items": {"type": "object"}},
        "hosts": {"type": "array", "items": {"type": "object"}},
        "service_classes": {"type": "array", "items": {"type": "object"}},
    },
}


@router.post(
    "/validate",
    response_model=ValidateOut,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": INTENT_BODY}},
        }
    },
)
def validate_intent(body: JsonObject, services: ServicesDep, _: Viewer) -> ValidateOut:
    """Check a proposed intent (the intent object itself); nothing is stored."""
    intent = services.intents.validate(body)
    return ValidateOut(valid=True, intent=dump_intent(intent))


@router.get("/versions", response_model=PageOut[VersionOut])
def list_versions(services: ServicesDep, paging: PagingDep, _: Viewer) -> PageOut[VersionOut]:
    """Stored versions, newest first."""
    page = services.intents.versions(limit=paging.limit, offset=paging.offset)
    return page_out(page, [VersionOut.of(info) for info in page.items])


@router.get("/versions/{number}", response_model=IntentOut)
def get_version(
    number: Annotated[int, Path(ge=1, le=DB_INTEGER_MAX)],
    response: Response,
    services: ServicesDep,
    _: Viewer,
) -> IntentOut:
    record = services.intents.version(number)
    response.headers["ETag"] = etag(record.info.number)
    return IntentOut(version=VersionOut.of(record.info), intent=record.data)
