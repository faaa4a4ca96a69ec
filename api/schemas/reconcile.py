"""The reconcile loop's answers: drift events, and each switch's last run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import Field

from api.schemas.common import ViewOut
from controller.services.reconcile import RunInfo


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
    status: str = Field(description="converged, corrected, alerted, failed, unreachable or unknown")
    drift_count: int
    error: str | None
    started_at: datetime
    finished_at: datetime


class ReconcileRunsOut(ViewOut):
    items: list[ReconcileRunOut]

    @classmethod
    def of(cls, view: Sequence[RunInfo]) -> ReconcileRunsOut:
        return cls(items=[ReconcileRunOut.of(run) for run in view])
