"""The whole intent: current, replace, validate, and its version history."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from api.deps import (
    ExpectedVersion,
    OperatorActor,
    PagingDep,
    ServicesDep,
    VersionNumber,
    Viewer,
    etag,
    mark_written,
)
from api.errors import not_found
from api.schemas.common import IntentJson, PageOut, page_out
from api.schemas.intent import IntentIn, IntentOut, ValidateOut, VersionOut, WriteOut
from controller.services.intents import NO_INTENT_YET

router = APIRouter(prefix="/intent", tags=["intent"])


@router.get("", response_model=IntentOut, responses={404: {"description": "no intent yet"}})
def get_intent(
    request: Request, response: Response, services: ServicesDep, _: Viewer
) -> IntentOut | JSONResponse:
    """The current intent; ``ETag`` names its version. With no intent yet: 404 and ETag "0"."""
    record = services.intents.latest()
    if record is None:
        # The ETag a first write sends as If-Match ("0": no version yet).
        return not_found(request, NO_INTENT_YET, headers={"ETag": etag(0)})
    response.headers["ETag"] = etag(record.info.number)
    return IntentOut.of(record)


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
    return WriteOut.of(result)


# The body's schema is the intent's own (api/openapi.py, controller/intent/schema.py).
@router.post("/validate", response_model=ValidateOut)
def validate_intent(body: IntentJson, services: ServicesDep, _: Viewer) -> ValidateOut:
    """Check a proposed intent (the intent object itself); nothing is stored."""
    return ValidateOut(valid=True, intent=services.intents.validate(body))


@router.get("/versions", response_model=PageOut[VersionOut])
def list_versions(services: ServicesDep, paging: PagingDep, _: Viewer) -> PageOut[VersionOut]:
    """Stored versions, newest first."""
    page = services.intents.versions(limit=paging.limit, offset=paging.offset)
    return page_out(page, [VersionOut.of(info) for info in page.items])


@router.get("/versions/{number}", response_model=IntentOut)
def get_version(
    number: VersionNumber, response: Response, services: ServicesDep, _: Viewer
) -> IntentOut:
    record = services.intents.version(number)
    response.headers["ETag"] = etag(record.info.number)
    return IntentOut.of(record)
