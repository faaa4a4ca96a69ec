"""Rollouts with per-switch results, reconcile runs and drift events.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the value lists in controller/store/models.py at this revision: a later
# model change must come with its own revision, not silently rewrite this one.
ROLLOUT_STATES = (
    "pending",
    "running",
    "paused",
    "halted",
    "completed",
    "rolling_back",
    "rolled_back",
)
RESULT_STATUSES = ("pending", "applied_verified", "failed", "unreachable", "mismatch", "skipped")
RESULT_PHASES = ("rollout", "rollback")
DRIFT_ACTIONS = ("corrected", "alerted")
RECONCILE_STATUSES = ("converged", "corrected", "alerted", "failed", "unreachable")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _time(name: str, *, nullable: bool) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _create_rollouts() -> None:
    op.create_table(
        "rollouts",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("from_version", sa.Integer(), nullable=False),
        sa.Column("to_version", sa.Integer(), nullable=False),
        sa.Column("canary", JSONB(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("failure_budget", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(128), nullable=False),
        _time("created_at", nullable=False),
        _time("started_at", nullable=True),
        _time("finished_at", nullable=True),
        _time("updated_at", nullable=False),
        sa.CheckConstraint(_one_of("state", ROLLOUT_STATES), name="ck_rollouts_state_known"),
        sa.CheckConstraint("batch_size > 0", name="ck_rollouts_batch_size_positive"),
        sa.CheckConstraint("failure_budget >= 0", name="ck_rollouts_failure_budget_not_negative"),
        sa.ForeignKeyConstraint(
            ["to_version"],
            ["intent_versions.number"],
            name="fk_rollouts_to_version_intent_versions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_rollouts"),
    )
    op.create_index("ix_rollouts_state", "rollouts", ["state"])


def _create_rollout_results() -> None:
    op.create_table(
        "rollout_results",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("rollout_id", sa.BigInteger(), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("detail", JSONB(), nullable=True),
        _time("started_at", nullable=True),
        _time("finished_at", nullable=True),
        sa.CheckConstraint(
            _one_of("status", RESULT_STATUSES), name="ck_rollout_results_status_known"
        ),
        sa.CheckConstraint(_one_of("phase", RESULT_PHASES), name="ck_rollout_results_phase_known"),
        sa.ForeignKeyConstraint(
            ["rollout_id"],
            ["rollouts.id"],
            name="fk_rollout_results_rollout_id_rollouts",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_rollout_results"),
        sa.UniqueConstraint(
            "rollout_id",
            "phase",
            "switch_name",
            name="uq_rollout_results_rollout_id_phase_switch_name",
        ),
    )
    # The reconcile loop asks "which version did this switch last verify?".
    op.create_index(
        "ix_rollout_results_switch_name_finished_at",
        "rollout_results",
        ["switch_name", "finished_at"],
    )


def _create_reconcile_tables() -> None:
    op.create_table(
        "reconcile_runs",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("drift_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _time("started_at", nullable=False),
        _time("finished_at", nullable=False),
        sa.CheckConstraint(
            _one_of("status", RECONCILE_STATUSES), name="ck_reconcile_runs_status_known"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_reconcile_runs"),
    )
    op.create_index(
        "ix_reconcile_runs_switch_name_started_at",
        "reconcile_runs",
        ["switch_name", "started_at"],
    )
    op.create_table(
        "drift_events",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("table_name", sa.String(64), nullable=False),
        sa.Column("entry_key", sa.String(256), nullable=False),
        sa.Column("field", sa.String(64), nullable=True),
        sa.Column("expected", sa.Text(), nullable=True),
        sa.Column("observed", sa.Text(), nullable=True),
        sa.Column("action", sa.String(16), nullable=False),
        _time("detected_at", nullable=False),
        sa.CheckConstraint(_one_of("action", DRIFT_ACTIONS), name="ck_drift_events_action_known"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["reconcile_runs.id"],
            name="fk_drift_events_run_id_reconcile_runs",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_drift_events"),
    )
    op.create_index(
        "ix_drift_events_switch_name_detected_at",
        "drift_events",
        ["switch_name", "detected_at"],
    )
    op.create_index("ix_drift_events_detected_at", "drift_events", ["detected_at"])


def upgrade() -> None:
    _create_rollouts()
    _create_rollout_results()
    _create_reconcile_tables()


def downgrade() -> None:
    op.drop_table("drift_events")
    op.drop_table("reconcile_runs")
    op.drop_table("rollout_results")
    op.drop_table("rollouts")
