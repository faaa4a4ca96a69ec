"""Switch rollouts: a start's policy, a rollout's summary, and one with every switch's result
and its gates' readings."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from api.schemas.common import DB_INTEGER_MAX, Strict, ViewOut, WholeNumber
from api.schemas.gates import GatePolicyIn, GatesOut
from controller.intent.models import NAME_RE


class RolloutIn(Strict):
    to_version: WholeNumber | None = Field(
        default=None,
        ge=1,
        le=DB_INTEGER_MAX,
        description="the intent version to roll out; the current one if absent",
    )
    canary: list[Annotated[str, Field(pattern=NAME_RE)]] = Field(
        default_factory=list,
        max_length=1000,
        description="switches that go first, alone in batch 0",
    )
    batch_size: WholeNumber = Field(
        default=1, ge=1, le=10_000, description="switches per batch after the canary"
    )
    failure_budget: WholeNumber = Field(
        default=0,
        ge=0,
        le=DB_INTEGER_MAX,
        description="halt once more switches than this failed, were unreachable or unknown, "
        "or mismatched",
    )
    gates: GatePolicyIn | None = Field(
        default=None, description="health gates read before and after each batch (soak)"
    )
    allow_port_flaps: bool = Field(
        default=False,
        strict=True,
        description="allow changes that take switch ports admin down and up (QUEUE, "
        "BUFFER_QUEUE, PORT_QOS_MAP ...: a class or port added, a queue moved, a first "
        "rollout); without it such a rollout is refused (409 port-flaps-not-allowed)",
    )


class ResultOut(ViewOut):
    phase: str = Field(description="rollout, or rollback")
    switch: str
    batch: int
    status: str = Field(
        description="pending, applied_verified, failed, unreachable, unknown, mismatch or skipped"
    )
    reason: str | None
    attempts: int
    detail: dict[str, Any] | None = Field(
        description="the apply result: ops written, Set requests, failed op, read-back differences"
    )
    started_at: datetime | None
    finished_at: datetime | None


class RolloutSummaryOut(ViewOut):
    id: int
    from_version: int
    to_version: int
    canary: list[str]
    batch_size: int
    failure_budget: int
    state: str = Field(
        description="pending, running, paused, halted, completed, rolling_back or rolled_back"
    )
    reason: str | None = Field(description="why it halted, or what is not verified")
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    counts: dict[str, int] = Field(description="switches per status (rollback_<status> too)")
    allow_port_flaps: bool = Field(
        description="whether its changes may take switch ports admin down and up"
    )


class RolloutOut(RolloutSummaryOut, GatesOut):
    results: list[ResultOut]
