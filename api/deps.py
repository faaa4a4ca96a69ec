"""Every dependency and parameter of a route as an ``Annotated`` alias: the services, the
settings, the caller and their role, paging, If-Match and why, ids, versions and names.

Nothing here is global: the services (``controller/services/wiring.py``) and the settings
hang off ``request.app.state``, put there by the app factory; ``get_services`` is the one
way a route reaches a service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.schemas.common import DB_BIGINT_MAX, DB_INTEGER_MAX, NO_NUL, PAGE_SIZE_LIMIT
from controller.errors import PreconditionFailed, PreconditionRequired, Unauthenticated
from controller.intent.models import NAME_RE, PORT_RE
from controller.services.common import Actor
from controller.services.intents import WriteResult
from controller.services.tokens import AccessRole, Principal
from controller.services.wiring import Services
from controller.settings import Settings

_bearer = HTTPBearer(auto_error=False, description="an API token from `sluice-admin create-token`")

# A strong entity tag naming an intent version: "12". Weak tags never match If-Match.
_ETAG = re.compile(r'^"(\d{1,9})"$')

# Path and query parameters, each bounded in its schema (``api/schemas/common.py``).
# The one id type: a row's id as a list or a create answered it (rollouts, host runs, twin
# runs, tuning proposals, tokens: PostgreSQL ``bigint``).
RecordId = Annotated[
    int, Path(ge=1, le=DB_BIGINT_MAX, description="the id a list or a create answered")
]
# An intent version (PostgreSQL ``integer``).
VersionNumber = Annotated[int, Path(ge=1, le=DB_INTEGER_MAX, description="an intent version")]
# A switch, host or service class of the intent, by its name.
NameParam = Annotated[str, Path(pattern=NAME_RE, description="its name in the intent")]
SwitchName = Annotated[str, Path(pattern=NAME_RE, description="a switch of the intent")]
PortName = Annotated[str, Path(pattern=PORT_RE, description="a port of the switch")]
SwitchQuery = Annotated[str | None, Query(pattern=NAME_RE, description="only this switch")]
ReasonParam = Annotated[
    str | None,
    Query(max_length=2000, pattern=NO_NUL, description="why; kept in the version history"),
]
# A discovery's answer with every QoS table entry it read, or without them.
IncludeTables = Annotated[bool, Query(description="include every QoS table entry read")]
# A list's length, for lists answered whole (not paged).
LimitParam = Annotated[int, Query(ge=1, le=PAGE_SIZE_LIMIT, description="at most this many")]


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def current_principal(
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthenticated("send Authorization: Bearer <token>")
    return services.tokens.authenticate(credentials.credentials)


def authorize(request: Request, needed: AccessRole) -> Principal:
    """The caller of ``request`` if they hold ``needed``: the check ``require_role`` makes,
    for code that must run it before FastAPI reads the body (``api/body.py``)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("send Authorization: Bearer <token>")
    principal = get_services(request).tokens.authenticate(token.strip())
    principal.require(needed)
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


def require_role(needed: AccessRole) -> Any:
    """A dependency that lets the request through only for ``needed`` or a stronger role."""

    def check(principal: CurrentPrincipal) -> Principal:
        principal.require(needed)
        return principal

    # Read by api/body.py (authorise before the body) and api/openapi.py (403 declared).
    check.required_role = needed  # type: ignore[attr-defined]
    return Depends(check)


def _actor_with(needed: AccessRole) -> Any:
    # A default rather than Annotated: with postponed annotations FastAPI could not resolve
    # an annotation that names the local ``needed``.
    def actor(request: Request, principal: Principal = require_role(needed)) -> Actor:
        return Actor(name=principal.name, request_id=request.state.request_id)

    return Depends(actor)


Viewer = Annotated[Principal, require_role(AccessRole.VIEWER)]
OperatorActor = Annotated[Actor, _actor_with(AccessRole.OPERATOR)]
AdminActor = Annotated[Actor, _actor_with(AccessRole.ADMIN)]


@dataclass(frozen=True, slots=True)
class Paging:
    limit: int
    offset: int


def paging(
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=PAGE_SIZE_LIMIT, description="page size")] = 50,
    offset: Annotated[int, Query(ge=0, le=DB_BIGINT_MAX, description="items to skip")] = 0,
) -> Paging:
    if limit > settings.api.page_size_max:
        raise RequestValidationError(
            [
                {
                    "type": "less_than_equal",
                    "loc": ("query", "limit"),
                    "msg": f"Input should be less than or equal to {settings.api.page_size_max}",
                    "input": limit,
                }
            ]
        )
    return Paging(limit=limit, offset=offset)


PagingDep = Annotated[Paging, Depends(paging)]


def expected_version(
    if_match: Annotated[
        str | None,
        Header(alias="If-Match", description='the ETag you read, e.g. "3" ("0": no intent yet)'),
    ] = None,
) -> int:
    """The intent version a writer read; writes without one are refused (428)."""
    if if_match is None or not if_match.strip():
        raise PreconditionRequired(
            'send If-Match with the ETag of the intent you read (e.g. If-Match: "3")'
        )
    match = _ETAG.match(if_match.strip())
    if match is None:
        raise PreconditionFailed(
            f'If-Match must be one strong ETag such as "3"; got {if_match.strip()[:40]!r}'
        )
    return int(match.group(1))


ExpectedVersion = Annotated[int, Depends(expected_version)]


def etag(version: int) -> str:
    return f'"{version}"'


def mark_written(response: Response, result: WriteResult, location: str | None = None) -> None:
    """``ETag``: the intent version the write made; 201 (and ``Location``, when given) when
    the write created what it names."""
    response.headers["ETag"] = etag(result.version.number)
    if result.created:
        response.status_code = 201
        if location is not None:
            response.headers["Location"] = location


@dataclass(frozen=True, slots=True)
class IntentWrite:
    """What a write to the intent needs besides its body: the operator making it, the
    version they read (``If-Match``), and why."""

    actor: Actor
    expected: int
    reason: str


def intent_write(
    request: Request, actor: OperatorActor, expected: ExpectedVersion, reason: ReasonParam = None
) -> IntentWrite:
    # Without a reason the history still says what was done: the method and the path.
    return IntentWrite(actor, expected, reason or f"{request.method} {request.url.path}")


IntentWriteDep = Annotated[IntentWrite, Depends(intent_write)]
