"""API tokens, looked up by the SHA-256 of the presented token."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.store.models import ApiToken
from controller.store.repositories.paging import page_of


def insert_token(
    *, session: Session, name: str, role: str, token_sha256: str, created_at: datetime
) -> ApiToken:
    row = ApiToken(name=name, role=role, token_sha256=token_sha256, created_at=created_at)
    session.add(row)
    session.flush()
    return row


def find_active_by_hash(*, session: Session, token_sha256: str) -> ApiToken | None:
    query = select(ApiToken).where(
        ApiToken.token_sha256 == token_sha256, ApiToken.revoked_at.is_(None)
    )
    return session.scalars(query).first()


def get_token(*, session: Session, token_id: int) -> ApiToken | None:
    return session.get(ApiToken, token_id)


def list_tokens(*, session: Session, limit: int, offset: int) -> tuple[list[ApiToken], int]:
    order = (ApiToken.id,)
    return page_of(session=session, query=select(ApiToken), order=order, limit=limit, offset=offset)


def revoke_token(*, session: Session, token: ApiToken, at: datetime) -> None:
    token.revoked_at = at
    session.flush()
