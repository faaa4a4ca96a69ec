"""API tokens: a new one's name and role, a token's record, and the secret shown once."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from api.schemas.common import Strict, ViewOut
from controller.intent.models import NAME_RE
from controller.services.tokens import AccessRole, IssuedToken


class TokenIn(Strict):
    name: str = Field(pattern=NAME_RE, max_length=64)
    role: AccessRole


class TokenOut(ViewOut):
    id: int
    name: str
    role: AccessRole
    created_at: datetime
    revoked_at: datetime | None


class IssuedTokenOut(TokenOut):
    token: str = Field(description="the bearer token; shown this once, stored only hashed")

    @classmethod
    def of(cls, view: IssuedToken) -> IssuedTokenOut:
        return cls(**TokenOut.of(view.info).model_dump(), token=view.secret)
