"""Host configuration runs (Ansible plan/apply in batches) and their per-host results.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
MODES = ("plan", "apply")
STATES = ("running", "completed", "halted", "interrupted", "error")
STATUSES = ("ok", "changed", "failed", "unreachable", "not_run")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _time(name: str, *, nullable: bool) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _create_host_runs() -> None:
    op.create_table(
        "host_runs",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("mode", sa.String(8), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("intent_version", sa.Integer(), nullable=False),
        sa.Column("hosts", JSONB(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("failure_budget", sa.Integer(), nullable=False),
        sa.Column("batches_total", sa.Integer(), nullable=False),
        sa.Column("batches_done", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        _time("started_at", nullable=False),
        _time("finished_at", nullable=True),
        sa.CheckConstraint(_one_of("mode", MODES), name="ck_host_runs_mode_known"),
        sa.CheckConstraint(_one_of("state", STATES), name="ck_host_runs_state_known"),
        sa.CheckConstraint("batch_size > 0", name="ck_host_runs_batch_size_positive"),
        sa.CheckConstraint("failure_budget >= 0", name="ck_host_runs_failure_budget_not_negative"),
        sa.ForeignKeyConstraint(
            ["intent_version"],
            ["intent_versions.number"],
            name="fk_host_runs_intent_version_intent_versions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_host_runs"),
    )
    op.create_index("ix_host_runs_started_at", "host_runs", ["started_at"])
    # Two applies at once would race on the same hosts: one running apply at most.
    op.create_index(
        "uq_host_runs_one_active_apply",
        "host_runs",
        ["mode"],
        unique=True,
        postgresql_where=sa.text("state = 'running' AND mode = 'apply'"),
    )


def _create_host_results() -> None:
    op.create_table(
        "host_results",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("host_name", sa.String(63), nullable=False),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("changed_tasks", JSONB(), nullable=False),
        sa.Column("failed_tasks", JSONB(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        _time("recorded_at", nullable=False),
        sa.CheckConstraint(_one_of("status", STATUSES), name="ck_host_results_status_known"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["host_runs.id"],
            name="fk_host_results_run_id_host_runs",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_host_results"),
        sa.UniqueConstraint("run_id", "host_name", name="uq_host_results_run_id_host_name"),
    )


def upgrade() -> None:
    _create_host_runs()
    _create_host_results()


def downgrade() -> None:
    op.drop_table("host_results")
    op.drop_index("uq_host_runs_one_active_apply", table_name="host_runs")
    op.drop_index("ix_host_runs_started_at", table_name="host_runs")
    op.drop_table("host_runs")
