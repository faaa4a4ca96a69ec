"""API tokens (admin only). A new token is shown once in the create response."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import AdminActor, PagingDep, RecordId, ServicesDep
from api.schemas.common import PageOut, page_out
from api.schemas.tokens import IssuedTokenOut, TokenIn, TokenOut

router = APIRouter(prefix="/tokens", tags=["tokens"])


@router.get("", response_model=PageOut[TokenOut])
def list_tokens(services: ServicesDep, paging: PagingDep, _: AdminActor) -> PageOut[TokenOut]:
    page = services.tokens.list(limit=paging.limit, offset=paging.offset)
    return page_out(page, [TokenOut.of(info) for info in page.items])


@router.post("", response_model=IssuedTokenOut, status_code=201)
def create_token(body: TokenIn, services: ServicesDep, actor: AdminActor) -> IssuedTokenOut:
    return IssuedTokenOut.of(services.tokens.create(name=body.name, role=body.role, actor=actor))


@router.delete("/{token_id}", status_code=204)
def revoke_token(token_id: RecordId, services: ServicesDep, actor: AdminActor) -> Response:
    services.tokens.revoke(token_id, actor=actor)
    return Response(status_code=204)
