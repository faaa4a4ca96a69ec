"""The intent's bodies: the whole intent with its version, a replacement, a validation, the
version history. The intent itself stays a plain JSON object (``IntentJson``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from api.schemas.common import NO_NUL, IntentJson, Strict, ViewOut
from controller.services.intents import IntentRecord


class VersionOut(ViewOut):
    number: int
    author: str
    reason: str
    created_at: datetime
    content_sha256: str
    rejected_at: datetime | None = Field(
        default=None, description="set when a rollout of this version rolled back"
    )
    rejected_by_rollout: int | None = Field(default=None, description="that rollout")
    rejected_reason: str | None = Field(default=None, description="why it rolled back")


class IntentOut(ViewOut):
    version: VersionOut
    intent: IntentJson

    @classmethod
    def of(cls, view: IntentRecord) -> IntentOut:
        return cls(version=VersionOut.of(view.info), intent=view.data)


class IntentIn(Strict):
    intent: IntentJson = Field(description="the whole intent (see docs/intent.md)")
    reason: str = Field(
        min_length=1, max_length=2000, pattern=NO_NUL, description="why; kept in the history"
    )


class WriteOut(ViewOut):
    version: VersionOut
    changed: bool = Field(description="false when the intent already said this (no new version)")


class ValidateOut(BaseModel):
    valid: bool
    intent: IntentJson = Field(description="the intent as it would be stored, defaults filled")
