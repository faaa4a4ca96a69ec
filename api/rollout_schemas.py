"""Bodies of the rollout, drift and reconcile endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from api.schemas import Strict, ViewOut
from controller.policy.models import NAME_RE


class RolloutIn(Strict):
    to_version: int | None = Field(
        default=None, ge=1, description="the intent version to roll out; the current one if absent"
    )
    canary: list[Annotated[str, Field(pattern=NAME_RE)]] = Field(
        default_factory=list,
        max_length=1000,
        description="switches that go first, alone in batch 0",
    )
    batch_size: int = Field(
        default=1, ge=1, le=10_000, description="switches per batch after the canary"
    )
    failure_budget: int = Field(
        default=0,
        ge=0,
        description="halt once more switches than this failed, were unreachable or mismatched",
    )


class ResultOut(ViewOut):
    phase: str = Field(description="rollout, or rollback")
    switch: str
    batch: int
    status: str = Field(
        description="pending, applied_verified, failed, unreachable, mismatch or skipped"
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


class RolloutOut(RolloutSummaryOut):
    results: list[ResultOut]


class DriftOut(ViewOut):
    id: int
    switch: str
    table: str
    key: str
    field: str | None = Field(description="None: the entry itself")
    expected: str | None = Field(description="the desired value; None: should be absent")
    observed: str | None = Field(description="what the switch held; None: absent")
    action: str = Field(description="corrected, or alerted")
    detected_at: datetime
    run_id: int


class ReconcileRunOut(ViewOut):
    id: int
    switch: str
    version: int = Field(description="the intent version the switch was reconciled against")
    mode: str
    status: str = Field(description="converged, corrected, alerted, failed or unreachable")
    drift_count: int
    error: str | None
    started_at: datetime
    finished_at: datetime


class ReconcileRunsOut(BaseModel):
    items: list[ReconcileRunOut]
