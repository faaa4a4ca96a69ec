"""The router shape shared by switches, hosts and service classes: list, get, create,
replace, delete one named entry of the current intent. Every write needs ``If-Match`` and
makes a new intent version; the ``ETag`` of a resource is the intent version it was read at.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from api.deps import ExpectedVersion, OperatorActor, PagingDep, ServicesDep, Viewer, etag
from api.schemas import JsonObject, PageOut
from controller.policy.models import NAME_RE
from controller.services.intents import ResourceKind, WriteResult

NameParam = Annotated[str, Path(pattern=NAME_RE)]
ReasonParam = Annotated[
    str | None, Query(max_length=2000, description="why; kept in the version history")
]


def _reason(reason: str | None, request: Request) -> str:
    return reason or f"{request.method} {request.url.path}"


def _written(response: Response, result: WriteResult, prefix: str, name: str) -> None:
    response.headers["ETag"] = etag(result.version.number)
    if result.created:
        response.status_code = 201
        response.headers["Location"] = f"/api/v1{prefix}/{name}"


def resource_router(kind: ResourceKind, prefix: str, singular: str) -> APIRouter:
    """Routes for ``kind`` under ``prefix``; operation ids read ``list_switches``,
    ``get_switch``... from ``singular``."""
    router = APIRouter(prefix=prefix, tags=[prefix.strip("/")])
    plural = kind.value

    @router.get("", response_model=PageOut[JsonObject], name=f"list_{plural}")
    def list_entries(
        response: Response, services: ServicesDep, paging: PagingDep, _: Viewer
    ) -> PageOut[JsonObject]:
        version, entries = services.intents.resources(kind)
        response.headers["ETag"] = etag(version)
        items = entries[paging.offset : paging.offset + paging.limit]
        return PageOut[JsonObject](
            items=items, total=len(entries), limit=paging.limit, offset=paging.offset
        )

    @router.get("/{name}", response_model=JsonObject, name=f"get_{singular}")
    def get_entry(
        name: NameParam, response: Response, services: ServicesDep, _: Viewer
    ) -> JsonObject:
        version, entry = services.intents.resource(kind, name)
        response.headers["ETag"] = etag(version)
        return entry

    @router.post("", response_model=JsonObject, status_code=201, name=f"create_{singular}")
    def create_entry(
        body: JsonObject,
        request: Request,
        response: Response,
        services: ServicesDep,
        actor: OperatorActor,
        expected: ExpectedVersion,
        reason: ReasonParam = None,
    ) -> JsonObject:
        result = services.intents.add_resource(
            kind, body, expected=expected, actor=actor, reason=_reason(reason, request)
        )
        _written(response, result, prefix, str(body.get("name")))
        return result.resource or {}

    @router.put("/{name}", response_model=JsonObject, name=f"put_{singular}")
    def put_entry(
        name: NameParam,
        body: JsonObject,
        request: Request,
        response: Response,
        services: ServicesDep,
        actor: OperatorActor,
        expected: ExpectedVersion,
        reason: ReasonParam = None,
    ) -> JsonObject:
        result = services.intents.put_resource(
            kind, name, body, expected=expected, actor=actor, reason=_reason(reason, request)
        )
        _written(response, result, prefix, name)
        return result.resource or {}

    @router.delete("/{name}", status_code=204, name=f"delete_{singular}")
    def delete_entry(
        name: NameParam,
        request: Request,
        services: ServicesDep,
        actor: OperatorActor,
        expected: ExpectedVersion,
        reason: ReasonParam = None,
    ) -> Response:
        result = services.intents.delete_resource(
            kind, name, expected=expected, actor=actor, reason=_reason(reason, request)
        )
        return Response(status_code=204, headers={"ETag": etag(result.version.number)})

    return router
