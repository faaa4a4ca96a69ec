"""Host runs: an apply's batches and budget, a run with every host's result and its gates'
readings, and the hosts' exporters as Prometheus targets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from api.schemas.common import Strict, ViewOut, WholeNumber
from api.schemas.gates import GatePolicyIn, GatesOut


class HostResultOut(ViewOut):
    host: str
    batch: int
    status: str = Field(description="ok, changed, failed, unreachable or not_run")
    changed_tasks: list[dict[str, Any]] = Field(description="{task, role, msg, diff} each")
    failed_tasks: list[dict[str, Any]]
    message: str | None
    phase: str = Field(
        description="apply, or rollback: the host put back to from_version after a failed gate"
    )
    from_version: int | None = Field(
        description="the intent version the host ran before this run (None: none)"
    )


class HostRunOut(GatesOut):
    id: int
    mode: str = Field(description="plan (check mode) or apply")
    state: str = Field(
        description="pending, running, completed, halted, error, interrupted, rolling_back or "
        "rolled_back (a health gate failed and hosts were put back)"
    )
    intent_version: int
    hosts: list[str]
    batch_size: int
    failure_budget: int
    batches_total: int
    batches_done: int
    failures: int
    counts: dict[str, int] = Field(description="hosts per status; pending: no result yet")
    requested_by: str
    message: str | None
    started_at: datetime
    finished_at: datetime | None
    results: list[HostResultOut]


class ApplyRequest(Strict):
    # WholeNumber: a boolean is not a number (pydantic would read true as 1), 2.0 is 2
    batch_size: WholeNumber | None = Field(
        default=None, ge=1, le=100_000, description="hosts per batch; default all"
    )
    failure_budget: WholeNumber = Field(
        default=0, ge=0, le=100_000, description="failed hosts tolerated"
    )
    gates: GatePolicyIn | None = Field(
        default=None, description="health gates read before and after each batch (soak)"
    )


class ExporterTargetOut(ViewOut):
    """A Prometheus HTTP service-discovery target group (``http_sd_configs``)."""

    targets: list[str] = Field(description="host:port of the host's exporter")
    labels: dict[str, str] = Field(description="host: the host's name")
