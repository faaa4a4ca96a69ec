"""API tokens (admin only). A new token is shown once in the create response."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from api.deps import DB_BIGINT_MAX, AdminActor, PagingDep, ServicesDep
from api.schemas import IssuedTokenOut, PageOut, TokenIn, TokenOut, page_out

router = APIRouter(prefix="/tokens", tags=["tokens"])


@router.get("", response_model=PageOut[TokenOut])
def list_tokens(services: ServicesDep, paging: PagingDep, _: AdminActor) -> PageOut[TokenOut]:
    page = services.tokens.list(limit=paging.limit, offset=paging.offset)
    return page_out(page, [TokenOut.of(info) for info in page.items])


@router.post("", response_model=IssuedTokenOut, status_code=201)
def create_token(body: TokenIn, services: ServicesDep, actor: AdminActor) -> IssuedTokenOut:
    issued = services.tokens.create(name=body.name, role=body.role, actor=actor)
    public = TokenOut.of(issued.info)
    return IssuedTokenOut(**public.model_dump(), token=issued.secret)


@router.delete("/{token_id}", status_code=204)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=DB_BIGINT_MAX)], services: ServicesDep, actor: AdminActor
) -> Response:
    services.tokens.revoke(token_id, actor=actor)
    return Response(status_code=204)
