"""Tuning proposals: what the tuner found, with every change's evidence, and its decision."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from api.schemas.common import ViewOut


class ProposalOut(ViewOut):
    id: int
    state: str = Field(
        description="queued or running (a searching pass the worker has yet to finish), then "
        "pending, no_change, approved, rejected or stale"
    )
    base_version: int = Field(description="the intent version the proposal was made against")
    new_version: int | None = Field(description="the version its approval wrote")
    changes: list[dict[str, Any]] = Field(
        description="each change with its evidence: inputs, rule, outputs, bounds"
    )
    held: list[dict[str, Any]] = Field(description="new values a stability guard held back")
    diff: list[dict[str, Any]]
    plans: list[dict[str, Any]]
    reason: str
    window_start: datetime
    window_end: datetime
    created_by: str
    created_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    prediction: list[dict[str, Any]] = Field(
        description="the search's predicted small-flow p99 FCT per class: service_class, "
        "before_us, after_us, change_pct, and its spread over seeds min_pct, max_pct (empty "
        "when the search changed nothing)"
    )
    baseline: dict[str, Any] | None = Field(
        description="the hosts' small-flow p99 FCT (us) and finished flows per class over "
        "the proposal's window: what the outcome is measured against"
    )
    outcome: dict[str, Any] | None = Field(
        description="after the rollout: verdict (agrees, disagrees, not_measurable, "
        "rolled_back, superseded), reason, rollout_id, the measured window, and per class the "
        "predicted beside the measured change (docs/tuning.md); null until then"
    )
    outcome_at: datetime | None
    started_at: datetime | None = Field(
        description="when a worker started the searching pass (null for a pass run at once)",
    )
