"""SQLAlchemy 2 models: the schema the Alembic revisions in ``migrations/`` build.

The application never calls ``create_all``; these classes describe the head revision so the
repositories can be typed, and a test compares them with the migrated database.

Every uniqueness rule is a named constraint (the naming convention below names the rest), so
an ``IntegrityError`` can be mapped back to the rule it broke.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from controller.types import JsonObject

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Constraint names the services translate into domain errors.
UQ_INTENT_VERSION_NUMBER = "uq_intent_versions_number"
UQ_DESIRED_VERSION_SWITCH = "uq_desired_states_version_switch_name"
UQ_TOKEN_HASH = "uq_api_tokens_token_sha256"
UQ_TOKEN_ACTIVE_NAME = "uq_api_tokens_active_name"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {JsonObject: JSONB}  # noqa: RUF012 - SQLAlchemy reads this class attribute


class IntentVersion(Base):
    """One immutable version of the whole intent; numbers start at 1 and only grow."""

    __tablename__ = "intent_versions"
    __table_args__ = (
        UniqueConstraint("number", name=UQ_INTENT_VERSION_NUMBER),
        CheckConstraint("number > 0", name="number_positive"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    number: Mapped[int] = mapped_column(Integer)
    intent: Mapped[JsonObject]
    content_sha256: Mapped[str] = mapped_column(String(64))
    author: Mapped[str] = mapped_column(String(128))
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Set when a rollout of this version rolled back (revision 0013_rejected).
    rejected_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    rejected_by_rollout: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("rollouts.id", ondelete="SET NULL")
    )
    rejected_reason: Mapped[str | None] = mapped_column(Text)

    def __repr__(self) -> str:
        return f"IntentVersion(number={self.number}, author={self.author!r})"


class DesiredState(Base):
    """The compiled CONFIG_DB tables of one switch at one intent version.

    ``config`` maps ``"TABLE|key"`` to the entry's fields, a snapshot per version so a diff
    between any two versions needs no recompilation.
    """

    __tablename__ = "desired_states"
    __table_args__ = (UniqueConstraint("version", "switch_name", name=UQ_DESIRED_VERSION_SWITCH),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    version: Mapped[int] = mapped_column(
        Integer, ForeignKey("intent_versions.number", ondelete="CASCADE")
    )
    switch_name: Mapped[str] = mapped_column(String(63))
    config: Mapped[JsonObject]

    def __repr__(self) -> str:
        return f"DesiredState(version={self.version}, switch_name={self.switch_name!r})"


class RunningState(Base):
    """What a switch was last known to run (read back after an apply); newest row wins."""

    __tablename__ = "running_states"
    __table_args__ = (
        Index("ix_running_states_switch_name_recorded_at", "switch_name", "recorded_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    switch_name: Mapped[str] = mapped_column(String(63))
    config: Mapped[JsonObject]
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(String(64))

    def __repr__(self) -> str:
        return f"RunningState(switch_name={self.switch_name!r}, source={self.source!r})"


class AuditEntry(Base):
    """One change: who, in which request, to what, and the resource before and after."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_at", "at"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    request_id: Mapped[str] = mapped_column(String(64))
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    resource_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[str] = mapped_column(String(128))
    version: Mapped[int | None] = mapped_column(Integer)
    before: Mapped[JsonObject | None]
    after: Mapped[JsonObject | None]
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return (
            f"AuditEntry(action={self.action!r}, resource={self.resource_type}/{self.resource_id})"
        )


class ApiToken(Base):
    """A bearer token; only its SHA-256 is stored, the plain token is shown once at creation.

    Names are unique among tokens that are not revoked, so a revoked name can be reused.
    """

    __tablename__ = "api_tokens"
    __table_args__ = (
        UniqueConstraint("token_sha256", name=UQ_TOKEN_HASH),
        CheckConstraint("role IN ('viewer', 'operator', 'admin')", name="role_known"),
        Index(
            UQ_TOKEN_ACTIVE_NAME,
            "name",
            unique=True,
            postgresql_where=text("revoked_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    token_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        # The hash is left out too: it is a credential verifier, not something to log.
        return f"ApiToken(id={self.id}, name={self.name!r}, role={self.role!r})"


# --- rollouts and reconciliation (revision 0003) --------------------------------------------

ROLLOUT_STATES = (
    "pending",
    "running",
    "paused",
    "halted",
    "completed",
    "rolling_back",
    "rolled_back",
)
RESULT_STATUSES = (
    "pending",
    "applied_verified",
    "failed",
    "unreachable",
    "mismatch",
    "skipped",
    "unknown",
)
RESULT_PHASES = ("rollout", "rollback")
DRIFT_ACTIONS = ("corrected", "alerted")
RECONCILE_STATUSES = ("converged", "corrected", "alerted", "failed", "unreachable", "unknown")
UQ_ROLLOUT_RESULT = "uq_rollout_results_rollout_id_phase_switch_name"


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Rollout(Base):
    """A staged rollout of one intent version: canary switches, then batches; its state is
    the whole truth a runner needs to resume after a restart."""

    __tablename__ = "rollouts"
    __table_args__ = (
        CheckConstraint(_one_of("state", ROLLOUT_STATES), name="state_known"),
        CheckConstraint("batch_size > 0", name="batch_size_positive"),
        CheckConstraint("failure_budget >= 0", name="failure_budget_not_negative"),
        Index("ix_rollouts_state", "state"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    from_version: Mapped[int] = mapped_column(Integer)
    to_version: Mapped[int] = mapped_column(
        Integer, ForeignKey("intent_versions.number", ondelete="CASCADE")
    )
    canary: Mapped[list[str]] = mapped_column(JSONB)
    batch_size: Mapped[int] = mapped_column(Integer)
    failure_budget: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Health gates (revision 0008_gates): the policy, and the batch soaking until when.
    gate_policy: Mapped[JsonObject | None] = mapped_column(JSONB)
    soak_batch: Mapped[int | None] = mapped_column(Integer)
    soak_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Whether the operator allowed changes that take switch ports down (revision 0013).
    allow_port_flaps: Mapped[bool] = mapped_column(Boolean, default=False)

    def __repr__(self) -> str:
        return f"Rollout(id={self.id}, to_version={self.to_version}, state={self.state!r})"


class RolloutResult(Base):
    """One switch of a rollout (phase ``rollout``) or of its rollback (phase ``rollback``)."""

    __tablename__ = "rollout_results"
    __table_args__ = (
        UniqueConstraint("rollout_id", "phase", "switch_name", name=UQ_ROLLOUT_RESULT),
        CheckConstraint(_one_of("status", RESULT_STATUSES), name="status_known"),
        CheckConstraint(_one_of("phase", RESULT_PHASES), name="phase_known"),
        Index("ix_rollout_results_switch_name_finished_at", "switch_name", "finished_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    rollout_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("rollouts.id", ondelete="CASCADE")
    )
    phase: Mapped[str] = mapped_column(String(16))
    switch_name: Mapped[str] = mapped_column(String(63))
    batch: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer)
    detail: Mapped[JsonObject | None] = mapped_column(JSONB)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return (
            f"RolloutResult(rollout_id={self.rollout_id}, switch_name={self.switch_name!r}, "
            f"phase={self.phase!r}, status={self.status!r})"
        )


class ReconcileRun(Base):
    """One reconcile of one switch: when, against which version, what it found and did."""

    __tablename__ = "reconcile_runs"
    __table_args__ = (
        CheckConstraint(_one_of("status", RECONCILE_STATUSES), name="status_known"),
        Index("ix_reconcile_runs_switch_name_started_at", "switch_name", "started_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    switch_name: Mapped[str] = mapped_column(String(63))
    version: Mapped[int] = mapped_column(Integer)
    mode: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    drift_count: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"ReconcileRun(switch_name={self.switch_name!r}, status={self.status!r})"


class DriftEvent(Base):
    """One value a switch held that the desired state did not ask for (or lacked one it did).
    ``field`` None: the entry itself; ``expected``/``observed`` None: absent."""

    __tablename__ = "drift_events"
    __table_args__ = (
        CheckConstraint(_one_of("action", DRIFT_ACTIONS), name="action_known"),
        Index("ix_drift_events_switch_name_detected_at", "switch_name", "detected_at"),
        Index("ix_drift_events_detected_at", "detected_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("reconcile_runs.id", ondelete="CASCADE")
    )
    switch_name: Mapped[str] = mapped_column(String(63))
    table_name: Mapped[str] = mapped_column(String(64))
    entry_key: Mapped[str] = mapped_column(String(256))
    field: Mapped[str | None] = mapped_column(String(64))
    expected: Mapped[str | None] = mapped_column(Text)
    observed: Mapped[str | None] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String(16))
    detected_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return (
            f"DriftEvent(switch_name={self.switch_name!r}, "
            f"entry={self.table_name}|{self.entry_key}, field={self.field!r})"
        )


# --- host configuration runs through Ansible (revisions 0004, 0005_house, 0011_hostgates) ------

HOST_RUN_MODES = ("plan", "apply")
# ``interrupted``: only runs from before revision 0005_house (the worker resumes runs now).
# ``rolling_back``/``rolled_back``: a failed health gate put hosts back (0011_hostgates).
HOST_RUN_STATES = (
    "pending",
    "running",
    "completed",
    "halted",
    "interrupted",
    "error",
    "rolling_back",
    "rolled_back",
)
HOST_RESULT_STATUSES = ("pending", "ok", "changed", "failed", "unreachable", "not_run")
# ``apply``: the host brought to the run's version; ``rollback``: put back to ``from_version``.
HOST_RESULT_PHASES = ("apply", "rollback")
UQ_HOST_RESULT = "uq_host_results_run_id_phase_host_name"
# At most one apply pending, running or rolling back at a time: two would race each other on
# the same hosts.
UQ_HOST_RUN_ONE_ACTIVE_APPLY = "uq_host_runs_one_active_apply"


class HostRun(Base):
    """One ansible-playbook rollout over the hosts of one intent version: a plan (check mode)
    or an apply in batches with a failure budget. Recorded by the API as ``pending`` with a
    ``pending`` result per host; the worker runs it, writing progress after every batch."""

    __tablename__ = "host_runs"
    __table_args__ = (
        CheckConstraint(_one_of("mode", HOST_RUN_MODES), name="mode_known"),
        CheckConstraint(_one_of("state", HOST_RUN_STATES), name="state_known"),
        CheckConstraint("batch_size > 0", name="batch_size_positive"),
        CheckConstraint("failure_budget >= 0", name="failure_budget_not_negative"),
        Index("ix_host_runs_started_at", "started_at"),
        Index(
            UQ_HOST_RUN_ONE_ACTIVE_APPLY,
            "mode",
            unique=True,
            postgresql_where=text(
                "state IN ('pending', 'running', 'rolling_back') AND mode = 'apply'"
            ),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    mode: Mapped[str] = mapped_column(String(8))
    state: Mapped[str] = mapped_column(String(16))
    intent_version: Mapped[int] = mapped_column(
        Integer, ForeignKey("intent_versions.number", ondelete="CASCADE")
    )
    hosts: Mapped[list[str]] = mapped_column(JSONB)
    batch_size: Mapped[int] = mapped_column(Integer)
    failure_budget: Mapped[int] = mapped_column(Integer)
    batches_total: Mapped[int] = mapped_column(Integer)
    batches_done: Mapped[int] = mapped_column(Integer)
    failures: Mapped[int] = mapped_column(Integer)
    requested_by: Mapped[str] = mapped_column(String(128))
    request_id: Mapped[str] = mapped_column(String(64))
    message: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Health gates (revision 0008_gates), as on rollouts.
    gate_policy: Mapped[JsonObject | None] = mapped_column(JSONB)
    soak_batch: Mapped[int | None] = mapped_column(Integer)
    soak_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"HostRun(id={self.id}, mode={self.mode!r}, state={self.state!r})"


class HostRunResult(Base):
    """One host of a host run: its status and the tasks that changed or failed (with diffs)."""

    __tablename__ = "host_results"
    __table_args__ = (
        UniqueConstraint("run_id", "phase", "host_name", name=UQ_HOST_RESULT),
        CheckConstraint(_one_of("status", HOST_RESULT_STATUSES), name="status_known"),
        CheckConstraint(_one_of("phase", HOST_RESULT_PHASES), name="phase_known"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("host_runs.id", ondelete="CASCADE"))
    host_name: Mapped[str] = mapped_column(String(63))
    batch: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    phase: Mapped[str] = mapped_column(String(8), default="apply")
    # The version the host ran when the run was recorded (None: none), what a rollback restores.
    from_version: Mapped[int | None] = mapped_column(Integer)
    changed_tasks: Mapped[list[JsonObject]] = mapped_column(JSONB)
    failed_tasks: Mapped[list[JsonObject]] = mapped_column(JSONB)
    message: Mapped[str | None] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return (
            f"HostRunResult(run_id={self.run_id}, host_name={self.host_name!r}, "
            f"status={self.status!r})"
        )


RECONCILE_REQUEST_STATES = ("pending", "done")


class ReconcileRequest(Base):
    """An operator's "reconcile every switch now", recorded by the API and answered by the
    worker with one pass (revision 0005_house)."""

    __tablename__ = "reconcile_requests"
    __table_args__ = (
        CheckConstraint(_one_of("state", RECONCILE_REQUEST_STATES), name="state_known"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16))
    requested_by: Mapped[str] = mapped_column(String(128))
    request_id: Mapped[str] = mapped_column(String(64))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"ReconcileRequest(id={self.id}, state={self.state!r})"


# ``queued`` and ``running``: a searching pass the API recorded, waiting for or being run by
# a worker (revision 0018_searchlock); the others are a pass's outcome and its decision.
TUNING_PROPOSAL_STATES = (
    "queued",
    "running",
    "pending",
    "approved",
    "rejected",
    "stale",
    "no_change",
)


class TuningProposal(Base):
    """One tuning pass (docs/tuning.md): the changes it found with their evidence, the intent
    version it read, and, once approved, the version it wrote (authored by ``tuner``)."""

    __tablename__ = "tuning_proposals"
    __table_args__ = (
        CheckConstraint(_one_of("state", TUNING_PROPOSAL_STATES), name="state_known"),
        Index("ix_tuning_proposals_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16))
    base_version: Mapped[int] = mapped_column(
        Integer, ForeignKey("intent_versions.number", ondelete="CASCADE")
    )
    new_version: Mapped[int | None] = mapped_column(Integer)
    changes: Mapped[list[JsonObject]] = mapped_column(JSONB)
    held: Mapped[list[JsonObject]] = mapped_column(JSONB)
    diff: Mapped[list[JsonObject]] = mapped_column(JSONB)
    plans: Mapped[list[JsonObject]] = mapped_column(JSONB)
    proposed_intent: Mapped[JsonObject] = mapped_column(JSONB)
    reason: Mapped[str] = mapped_column(Text)
    window_start: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    window_end: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Revision 0017_predcheck: the hosts' small-flow figures over the window the proposal was
    # made from (what its outcome is measured against), and, once its rollout settled or
    # ended, the outcome (controller/tuning/outcome.py).
    baseline: Mapped[JsonObject | None] = mapped_column(JSONB)
    outcome: Mapped[JsonObject | None] = mapped_column(JSONB)
    outcome_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Revision 0018_searchlock: when a worker claimed the queued pass (a ``running`` one
    # older than its search budget was left by a worker that stopped, and is claimed again).
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"TuningProposal(id={self.id}, state={self.state!r})"


TWIN_RUN_STATES = ("pending", "running", "completed", "error")


class TwinRun(Base):
    """A run of an intent version in the packet-level twin (docs/netsim.md), recorded by the
    API and run by the worker (revision 0007_whatif; renamed from simulations by 0012_twin_runs)."""

    __tablename__ = "twin_runs"
    __table_args__ = (
        CheckConstraint(_one_of("state", TWIN_RUN_STATES), name="state_known"),
        Index("ix_twin_runs_state", "state"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16))
    intent_version: Mapped[int] = mapped_column(Integer)
    compare_version: Mapped[int | None] = mapped_column(Integer)
    request: Mapped[JsonObject] = mapped_column(JSONB)
    progress: Mapped[str | None] = mapped_column(Text)
    result: Mapped[JsonObject | None] = mapped_column(JSONB)
    message: Mapped[str | None] = mapped_column(Text)
    requested_by: Mapped[str] = mapped_column(String(128))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"TwinRun(id={self.id}, state={self.state!r})"


# --- rollout health gates (revision 0008_gates) ---------------------------------------------

GATE_STAGES = ("precheck", "baseline", "soak")
GATE_VERDICTS = ("pass", "fail")


class GateEvaluation(Base):
    """One reading of one health gate of a rollout or of a host run (exactly one of the two;
    ``controller/rollout/gates.py``): the expression, the value seen, the baseline and
    threshold it was judged against, the verdict."""

    __tablename__ = "rollout_gate_evaluations"
    __table_args__ = (
        CheckConstraint(_one_of("stage", GATE_STAGES), name="stage_known"),
        CheckConstraint(_one_of("verdict", GATE_VERDICTS), name="verdict_known"),
        CheckConstraint("(rollout_id IS NULL) <> (host_run_id IS NULL)", name="one_owner"),
        Index("ix_rollout_gate_evaluations_rollout_id_batch", "rollout_id", "batch"),
        Index("ix_rollout_gate_evaluations_host_run_id_batch", "host_run_id", "batch"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    rollout_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("rollouts.id", ondelete="CASCADE")
    )
    host_run_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("host_runs.id", ondelete="CASCADE")
    )
    batch: Mapped[int] = mapped_column(Integer)
    stage: Mapped[str] = mapped_column(String(16))
    gate: Mapped[str] = mapped_column(String(63))
    expression: Mapped[str] = mapped_column(Text)
    value: Mapped[float | None] = mapped_column(Float)
    baseline: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float] = mapped_column(Float)
    comparison: Mapped[str] = mapped_column(String(32))
    limit_value: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[str] = mapped_column(String(8))
    detail: Mapped[str] = mapped_column(Text)
    evaluated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return (
            f"GateEvaluation(rollout_id={self.rollout_id}, batch={self.batch}, "
            f"gate={self.gate!r}, verdict={self.verdict!r})"
        )


# --- adopting a running switch (revision 0016_adoption) --------------------------------------

UQ_ADOPTION_ACTIVE = "uq_adoptions_active_switch_name"
DISCOVERY_STATES = ("pending", "done")
RELEASE_STATES = ("pending", "released", "failed", "unreachable", "unknown")


class Adoption(Base):
    """sluice took over a switch: what the operator's QoS config was before its first write
    (``baseline``, ``controller/sonic/coexist.py``), restored when it lets go. At most one
    active (not released) record per switch; a switch adopted again gets a new one."""

    __tablename__ = "adoptions"
    __table_args__ = (
        Index(
            UQ_ADOPTION_ACTIVE,
            "switch_name",
            unique=True,
            postgresql_where=text("released_at IS NULL"),
        ),
        Index("ix_adoptions_switch_name_adopted_at", "switch_name", "adopted_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    switch_name: Mapped[str] = mapped_column(String(63))
    baseline: Mapped[JsonObject]
    adopted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    adopted_by: Mapped[str] = mapped_column(String(128))
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    released_by: Mapped[str | None] = mapped_column(String(128))

    def __repr__(self) -> str:
        return f"Adoption(id={self.id}, switch_name={self.switch_name!r})"


class Discovery(Base):
    """An operator's "what do these switches run", recorded by the API and answered by the
    worker: the request (switches and how to reach them) and, once done, what each runs."""

    __tablename__ = "discoveries"
    __table_args__ = (
        CheckConstraint(_one_of("state", DISCOVERY_STATES), name="state_known"),
        Index("ix_discoveries_state", "state"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16))
    request: Mapped[JsonObject]
    result: Mapped[JsonObject | None] = mapped_column(JSONB)
    requested_by: Mapped[str] = mapped_column(String(128))
    request_id: Mapped[str] = mapped_column(String(64))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"Discovery(id={self.id}, state={self.state!r})"


class Release(Base):
    """An operator's "let go of this switch": recorded by the API, carried out by the worker
    (the adoption's baseline restored, sluice's own entries removed, read back)."""

    __tablename__ = "releases"
    __table_args__ = (
        CheckConstraint(_one_of("state", RELEASE_STATES), name="state_known"),
        Index("ix_releases_state", "state"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    switch_name: Mapped[str] = mapped_column(String(63))
    adoption_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("adoptions.id", ondelete="CASCADE")
    )
    state: Mapped[str] = mapped_column(String(16))
    allow_port_flaps: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[JsonObject | None] = mapped_column(JSONB)
    requested_by: Mapped[str] = mapped_column(String(128))
    request_id: Mapped[str] = mapped_column(String(64))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"Release(id={self.id}, switch_name={self.switch_name!r}, state={self.state!r})"
