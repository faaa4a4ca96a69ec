"""API tokens and roles. Only the SHA-256 of a token is stored; the token itself is shown
once, to whoever created it, and never logged or kept.

A token is 32 random bytes (URL-safe base64) behind a ``slc_`` prefix, so a leaked one is
easy to recognise in a scan. SHA-256 without salt is enough here: the input is random and
long, not a password an attacker could guess from a dictionary.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, Forbidden, NotFound, Unauthenticated
from controller.services.audit import record_change
from controller.services.common import Actor, Page
from controller.store.models import UQ_TOKEN_ACTIVE_NAME, ApiToken
from controller.store.repositories import tokens
from controller.types import Clock

TOKEN_PREFIX = "slc_"


class AccessRole(StrEnum):
    """Roles in increasing power: each may do everything the ones before it may."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(AccessRole).index(self)

    def allows(self, needed: AccessRole) -> bool:
        return self.rank >= needed.rank


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request is from, as established by its bearer token."""

    token_id: int
    name: str
    role: AccessRole

    def require(self, needed: AccessRole) -> None:
        if not self.role.allows(needed):
            raise Forbidden(
                f"this needs the {needed.value} role; token {self.name!r} is a {self.role.value}"
            )


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: int
    name: str
    role: AccessRole
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new token: ``secret`` is the only copy of the plain token and is kept out of repr."""

    info: TokenInfo
    secret: str = field(repr=False)


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(plain: str) -> str:
    return hashlib.sha256(plain.encode()).hexdigest()


class TokenService:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        clock: Clock,
        new_secret: Callable[[], str] = new_token_secret,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._new_secret = new_secret

    def create(self, *, name: str, role: AccessRole, actor: Actor) -> IssuedToken:
        secret = self._new_secret()
        now = self._clock()
        try:
            with self._sessions.begin() as session:
                row = tokens.insert_token(
                    session=session,
                    name=name,
                    role=role.value,
                    token_sha256=hash_token(secret),
                    created_at=now,
                )
                info = _info(row)
                _audit(session, actor, "create", info, before=None, after=_public(info), at=now)
        except IntegrityError as exc:
            if UQ_TOKEN_ACTIVE_NAME in str(exc.orig):
                raise Conflict(f"an active token named {name!r} exists; revoke it first") from None
            raise
        return IssuedToken(info, secret)

    def authenticate(self, presented: str) -> Principal:
        """The principal a bearer token stands for; ``Unauthenticated`` if unknown or revoked."""
        digest = hash_token(presented)
        with self._sessions() as session:
            row = tokens.find_active_by_hash(session=session, token_sha256=digest)
            # The lookup is by hash, so timing says nothing about the token; the explicit
            # constant-time compare keeps it that way if the lookup ever changes.
            if row is None or not hmac.compare_digest(row.token_sha256, digest):
                raise Unauthenticated("the bearer token is unknown or revoked")
            return Principal(row.id, row.name, AccessRole(row.role))

    def list(self, *, limit: int, offset: int) -> Page[TokenInfo]:
        with self._sessions() as session:
            rows, total = tokens.list_tokens(session=session, limit=limit, offset=offset)
            return Page([_info(row) for row in rows], total, limit, offset)

    def revoke(self, token_id: int, *, actor: Actor) -> TokenInfo:
        now = self._clock()
        with self._sessions.begin() as session:
            row = tokens.get_token(session=session, token_id=token_id)
            if row is None or row.revoked_at is not None:
                raise NotFound(f"no active token with id {token_id}")
            before = _public(_info(row))
            tokens.revoke_token(session=session, token=row, at=now)
            info = _info(row)
            _audit(session, actor, "revoke", info, before=before, after=_public(info), at=now)
            return info


def _info(row: ApiToken) -> TokenInfo:
    return TokenInfo(row.id, row.name, AccessRole(row.role), row.created_at, row.revoked_at)


def _public(info: TokenInfo) -> dict[str, object]:
    """What the audit log keeps of a token: never the secret nor its hash."""
    return {
        "id": info.id,
        "name": info.name,
        "role": info.role.value,
        "revoked_at": None if info.revoked_at is None else info.revoked_at.isoformat(),
    }


def _audit(
    session: Session,
    actor: Actor,
    action: str,
    info: TokenInfo,
    *,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    at: datetime,
) -> None:
    record_change(
        session,
        actor,
        action,
        resource_type="token",
        resource_id=str(info.id),
        version=None,
        before=before,
        after=after,
        at=at,
    )
