"""The router shape shared by switches, hosts and service classes: list, get, create,
replace, delete one named entry of the current intent. Every write needs ``If-Match`` and
makes a new intent version; the ``ETag`` of a resource is the intent version it was read at.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import IntentWriteDep, NameParam, PagingDep, ServicesDep, Viewer, etag, mark_written
from api.schemas.common import IntentJson, PageOut
from controller.services.intents import ResourceKind


def resource_router(kind: ResourceKind, prefix: str, singular: str) -> APIRouter:
    """Routes for ``kind`` under ``prefix``; operation ids read ``list_switches``,
    ``get_switch``... from ``singular``."""
    router = APIRouter(prefix=prefix, tags=[prefix.strip("/")])
    plural = kind.value

    @router.get("", response_model=PageOut[IntentJson], name=f"list_{plural}")
    def list_entries(
        response: Response, services: ServicesDep, paging: PagingDep, _: Viewer
    ) -> PageOut[IntentJson]:
        version, entries = services.intents.resources(kind)
        response.headers["ETag"] = etag(version)
        items = entries[paging.offset : paging.offset + paging.limit]
        return PageOut[IntentJson](
            items=items, total=len(entries), limit=paging.limit, offset=paging.offset
        )

    @router.get("/{name}", response_model=IntentJson, name=f"get_{singular}")
    def get_entry(
        name: NameParam, response: Response, services: ServicesDep, _: Viewer
    ) -> IntentJson:
        version, entry = services.intents.resource(kind, name)
        response.headers["ETag"] = etag(version)
        return entry

    @router.post("", response_model=IntentJson, status_code=201, name=f"create_{singular}")
    def create_entry(
        body: IntentJson, response: Response, services: ServicesDep, write: IntentWriteDep
    ) -> IntentJson:
        result = services.intents.add_resource(
            kind, body, expected=write.expected, actor=write.actor, reason=write.reason
        )
        mark_written(response, result, f"/api/v1{prefix}/{body.get('name')}")
        return result.resource or {}

    @router.put("/{name}", response_model=IntentJson, name=f"put_{singular}")
    def put_entry(
        name: NameParam,
        body: IntentJson,
        response: Response,
        services: ServicesDep,
        write: IntentWriteDep,
    ) -> IntentJson:
        result = services.intents.put_resource(
            kind, name, body, expected=write.expected, actor=write.actor, reason=write.reason
        )
        mark_written(response, result, f"/api/v1{prefix}/{name}")
        return result.resource or {}

    @router.delete("/{name}", status_code=204, name=f"delete_{singular}")
    def delete_entry(name: NameParam, services: ServicesDep, write: IntentWriteDep) -> Response:
        result = services.intents.delete_resource(
            kind, name, expected=write.expected, actor=write.actor, reason=write.reason
        )
        return Response(status_code=204, headers={"ETag": etag(result.version.number)})

    return router
