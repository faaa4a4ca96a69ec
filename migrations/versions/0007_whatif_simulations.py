"""What-if simulations: the API records a request to run an intent version (and optionally a
second one to compare) in the packet-level twin; the worker runs netsim and stores the result.

Revision ID: 0007_whatif
Revises: 0006_tuner
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0007_whatif"
down_revision: str | None = "0006_tuner"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
STATES = ("pending", "running", "completed", "error")


def upgrade() -> None:
    op.create_table(
        "simulations",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("intent_version", sa.Integer, nullable=False),
        sa.Column("compare_version", sa.Integer, nullable=True),
        sa.Column("request", JSONB, nullable=False),
        sa.Column("progress", sa.Text, nullable=True),
        sa.Column("result", JSONB, nullable=True),
        sa.Column("message", sa.Text, nullable=True),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN (" + ", ".join(repr(s) for s in STATES) + ")",
            name="ck_simulations_state_known",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_simulations"),
    )
    op.create_index("ix_simulations_state", "simulations", ["state"])


def downgrade() -> None:
    op.drop_index("ix_simulations_state", table_name="simulations")
    op.drop_table("simulations")
