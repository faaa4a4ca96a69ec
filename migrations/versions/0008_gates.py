"""Health gates of rollouts and host runs: the policy and soak state on each, every reading.

Revision ID: 0008_gates
Revises: 0007_whatif
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0008_gates"
down_revision: str | None = "0007_whatif"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
STAGES = ("precheck", "baseline", "soak")
VERDICTS = ("pass", "fail")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.add_column("rollouts", sa.Column("gate_policy", JSONB(), nullable=True))
    op.add_column("rollouts", sa.Column("soak_batch", sa.Integer(), nullable=True))
    op.add_column("rollouts", sa.Column("soak_until", sa.DateTime(timezone=True), nullable=True))
    op.add_column("host_runs", sa.Column("gate_policy", JSONB(), nullable=True))
    op.add_column("host_runs", sa.Column("soak_batch", sa.Integer(), nullable=True))
    op.add_column("host_runs", sa.Column("soak_until", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "rollout_gate_evaluations",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("rollout_id", sa.BigInteger(), nullable=True),
        sa.Column("host_run_id", sa.BigInteger(), nullable=True),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("gate", sa.String(63), nullable=False),
        sa.Column("expression", sa.Text(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("baseline", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("comparison", sa.String(32), nullable=False),
        sa.Column("limit_value", sa.Float(), nullable=True),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            _one_of("stage", STAGES), name="ck_rollout_gate_evaluations_stage_known"
        ),
        sa.CheckConstraint(
            _one_of("verdict", VERDICTS), name="ck_rollout_gate_evaluations_verdict_known"
        ),
        sa.CheckConstraint(
            "(rollout_id IS NULL) <> (host_run_id IS NULL)",
            name="ck_rollout_gate_evaluations_one_owner",
        ),
        sa.ForeignKeyConstraint(
            ["host_run_id"],
            ["host_runs.id"],
            name="fk_rollout_gate_evaluations_host_run_id_host_runs",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["rollout_id"],
            ["rollouts.id"],
            name="fk_rollout_gate_evaluations_rollout_id_rollouts",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_rollout_gate_evaluations"),
    )
    op.create_index(
        "ix_rollout_gate_evaluations_rollout_id_batch",
        "rollout_gate_evaluations",
        ["rollout_id", "batch"],
    )
    op.create_index(
        "ix_rollout_gate_evaluations_host_run_id_batch",
        "rollout_gate_evaluations",
        ["host_run_id", "batch"],
    )


def downgrade() -> None:
    op.drop_table("rollout_gate_evaluations")
    op.drop_column("host_runs", "soak_until")
    op.drop_column("host_runs", "soak_batch")
    op.drop_column("host_runs", "gate_policy")
    op.drop_column("rollouts", "soak_until")
    op.drop_column("rollouts", "soak_batch")
    op.drop_column("rollouts", "gate_policy")
