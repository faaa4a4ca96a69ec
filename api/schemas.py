"""Request and response bodies. Intent bodies stay plain JSON objects here: the intent's own
parser (``controller.intent.loader.parse_intent``) checks them and names every bad field."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from api.deps import DB_INTEGER_MAX, NO_NUL
from api.gate_schemas import GatePolicyIn, GatesOut
from controller.intent.models import NAME_RE
from controller.services.common import Page
from controller.services.tokens import AccessRole
from controller.sonic.model import Plan
from controller.types import JsonObject

T = TypeVar("T")


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
    rejected_at: datetime | None = Field(
        default=None, description="set when a rollout of this version rolled back"
    )
    rejected_by_rollout: int | None = Field(default=None, description="that rollout")
    rejected_reason: str | None = Field(default=None, description="why it rolled back")


class IntentOut(BaseModel):
    version: VersionOut
    intent: JsonObject


class IntentIn(Strict):
    intent: JsonObject = Field(description="the whole intent (see docs/intent.md)")
    reason: str = Field(
        min_length=1, max_length=2000, pattern=NO_NUL, description="why; kept in the history"
    )


class WriteOut(BaseModel):
    version: VersionOut
    changed: bool = Field(description="false when the intent already said this (no new version)")


class ValidateOut(BaseModel):
    valid: bool
    intent: JsonObject = Field(description="the intent as it would be stored, defaults filled")


class FieldOwnerOut(BaseModel):
    field: str
    owner: str = Field(description="sluice, operator_kept or operator_overwritten")
    value: str | None = Field(description="what the switch holds after the op; None: gone")
    saved: str | None = Field(description="the operator's value the adoption record keeps")
    source: str | None = Field(description="the operator's map a merged map's field came from")


class OpOut(BaseModel):
    kind: str
    table: str
    key: str
    path: str
    fields: dict[str, str]
    old_fields: dict[str, str]
    removed_fields: list[str]
    whole_entry: bool
    ownership: list[FieldOwnerOut] | None = Field(
        default=None,
        description="who owns each field of the entry, where the switch has operator config "
        '(docs/config-db.md, "Who owns what")',
    )


class PortFlapOut(BaseModel):
    port: str = Field(description="the port SONiC's config updater takes admin down and up")
    table: str
    key: str
    reason: str = Field(description="the entry and what happens to it")


class PlanOut(BaseModel):
    switch: str
    counts: dict[str, int]
    counts_by_table: dict[str, dict[str, int]]
    ops: list[OpOut]
    gcu_changes: int = Field(
        description="how many changes SONiC's config updater sorts the plan into (estimate)"
    )
    ports_down: list[str] = Field(description="the ports the plan takes admin down and up")
    port_flaps: list[PortFlapOut] = Field(
        description="every port-critical change (QUEUE, BUFFER_QUEUE, PORT_QOS_MAP ...), "
        "with its port and reason"
    )

    @classmethod
    def of(cls, plan: Plan) -> PlanOut:
        return cls.model_validate(plan.as_dict())


class PlanRequest(Strict):
    intent: JsonObject | None = Field(
        default=None, description="a proposed intent; the current one when absent"
    )
    switches: list[Annotated[str, Field(max_length=63, pattern=NO_NUL)]] | None = Field(
        default=None, max_length=10_000, description="only these switches"
    )


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


# --- rollouts, drift and reconcile -------------------------------------------------------


class RolloutIn(Strict):
    to_version: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        le=DB_INTEGER_MAX,
        description="the intent version to roll out; the current one if absent",
    )
    canary: list[Annotated[str, Field(pattern=NAME_RE)]] = Field(
        default_factory=list,
        max_length=1000,
        description="switches that go first, alone in batch 0",
    )
    batch_size: int = Field(
        default=1, strict=True, ge=1, le=10_000, description="switches per batch after the canary"
    )
    failure_budget: int = Field(
        default=0,
        strict=True,
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


class ReconcileRunsOut(BaseModel):
    items: list[ReconcileRunOut]


# --- host runs ----------------------------------------------------------------------------


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


class HostRunOut(ViewOut, GatesOut):
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
    # strict: a boolean is not a number (pydantic would read true as 1)
    batch_size: int | None = Field(
        default=None, strict=True, ge=1, le=100_000, description="hosts per batch; default all"
    )
    failure_budget: int = Field(
        default=0, strict=True, ge=0, le=100_000, description="failed hosts tolerated"
    )
    gates: GatePolicyIn | None = Field(
        default=None, description="health gates read before and after each batch (soak)"
    )
