"""Releases and adoption records: sluice gives a switch's config back to its operator."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import OperatorActor, PagingDep, RecordId, ServicesDep, SwitchQuery, Viewer
from api.schemas.adopting import AdoptionOut, ReleaseIn, ReleaseOut
from api.schemas.common import PageOut, page_out

router = APIRouter(tags=["releases"])


@router.post(
    "/releases",
    response_model=ReleaseOut,
    status_code=201,
    responses={200: {"model": ReleaseOut, "description": "a dry run: the plan, nothing recorded"}},
)
def request_release(
    body: ReleaseIn, services: ServicesDep, actor: OperatorActor, response: Response
) -> ReleaseOut:
    """Release a switch: its operator's config restored from the adoption record, sluice's
    own entries removed, verified by read-back (the worker does it). ``dry_run`` answers
    the plan only (200). 409 for a switch sluice has not adopted, while a rollout is under
    way, or when the plan takes ports down and ``allow_port_flaps`` is not set."""
    if body.dry_run:
        response.status_code = 200
        return ReleaseOut.of(services.releases.plan(body.switch))
    return ReleaseOut.of(
        services.releases.request(body.switch, allow_port_flaps=body.allow_port_flaps, actor=actor)
    )


@router.get("/releases", response_model=PageOut[ReleaseOut])
def list_releases(services: ServicesDep, paging: PagingDep, _: Viewer) -> PageOut[ReleaseOut]:
    """Newest first."""
    page = services.releases.list(limit=paging.limit, offset=paging.offset)
    return page_out(page, [ReleaseOut.of(info) for info in page.items])


@router.get("/releases/{release_id}", response_model=ReleaseOut)
def get_release(release_id: RecordId, services: ServicesDep, _: Viewer) -> ReleaseOut:
    return ReleaseOut.of(services.releases.get(release_id))


@router.get("/adoptions", response_model=PageOut[AdoptionOut])
def list_adoptions(
    services: ServicesDep, paging: PagingDep, _: Viewer, switch: SwitchQuery = None
) -> PageOut[AdoptionOut]:
    """Adoption records, newest first: when sluice took each switch over and let it go."""
    page = services.releases.adoptions(limit=paging.limit, offset=paging.offset, switch=switch)
    return page_out(page, [AdoptionOut.of(info) for info in page.items])
