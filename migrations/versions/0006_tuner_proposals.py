"""Tuning proposals: each tuner pass, its changes with evidence, and the version it wrote.

Revision ID: 0006_tuner
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0006_tuner"
down_revision: str | None = "0005_house"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
STATES = ("pending", "approved", "rejected", "stale", "no_change")


def upgrade() -> None:
    op.create_table(
        "tuning_proposals",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column("new_version", sa.Integer(), nullable=True),
        sa.Column("changes", JSONB(), nullable=False),
        sa.Column("held", JSONB(), nullable=False),
        sa.Column("diff", JSONB(), nullable=False),
        sa.Column("plans", JSONB(), nullable=False),
        sa.Column("proposed_intent", JSONB(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_by", sa.String(128), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN (" + ", ".join(repr(s) for s in STATES) + ")",
            name="ck_tuning_proposals_state_known",
        ),
        sa.ForeignKeyConstraint(
            ["base_version"],
            ["intent_versions.number"],
            name="fk_tuning_proposals_base_version_intent_versions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tuning_proposals"),
    )
    op.create_index("ix_tuning_proposals_created_at", "tuning_proposals", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_tuning_proposals_created_at", table_name="tuning_proposals")
    op.drop_table("tuning_proposals")
