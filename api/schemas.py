"""Request and response bodies. Intent bodies stay plain JSON objects here: the intent's own
parser (``controller.policy.loader.parse_intent``) checks them and names every bad field."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from controller.policy.models import NAME_RE
from controller.services.common import Page
from controller.services.tokens import AccessRole
from controller.sonic.model import Plan

T = TypeVar("T")

JsonObject = dict[str, Any]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PageOut(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


def page_out(page: Page[Any], items: list[T]) -> PageOut[T]:
    return PageOut[T](items=items, total=page.total, limit=page.limit, offset=page.offset)


class ViewOut(BaseModel):
    """An answer body filled from a service's view object: every field read from the
    attribute of the same name (nested answer bodies likewise), so a field added to both
    needs no copying code."""

    @classmethod
    def of(cls, view: object) -> Self:
        return cls.model_validate(view, from_attributes=True)


class VersionOut(ViewOut):
    number: int
    author: str
    reason: str
    created_at: datetime
    content_sha256: str


class IntentOut(BaseModel):
    version: VersionOut
    intent: JsonObject


class IntentIn(Strict):
    intent: JsonObject = Field(description="the whole intent (see docs/intent.md)")
    reason: str = Field(min_length=1, max_length=2000, description="why; kept in the history")


class WriteOut(BaseModel):
    version: VersionOut
    changed: bool = Field(description="false when the intent already said this (no new version)")


class ValidateOut(BaseModel):
    valid: bool
    intent: JsonObject = Field(description="the intent as it would be stored, defaults filled")


class OpOut(BaseModel):
    kind: str
    table: str
    key: str
    path: str
    fields: dict[str, str]
    old_fields: dict[str, str]
    removed_fields: list[str]
    whole_entry: bool


class PlanOut(BaseModel):
    switch: str
    counts: dict[str, int]
    counts_by_table: dict[str, dict[str, int]]
    ops: list[OpOut]

    @classmethod
    def of(cls, plan: Plan) -> PlanOut:
        return cls.model_validate(plan.as_dict())


class PlanRequest(Strict):
    intent: JsonObject | None = Field(
        default=None, description="a proposed intent; the current one when absent"
    )
    switches: list[str] | None = Field(default=None, description="only these switches")


class PlansOut(BaseModel):
    base_version: int
    proposed: bool
    plans: list[PlanOut]


class DiffOut(BaseModel):
    from_version: int
    to_version: int
    plans: list[PlanOut]


class AuditOut(ViewOut):
    id: int
    request_id: str
    actor: str
    action: str
    resource_type: str
    resource_id: str
    version: int | None
    before: JsonObject | None
    after: JsonObject | None
    at: datetime


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


class HealthOut(BaseModel):
    status: str
    database: str
