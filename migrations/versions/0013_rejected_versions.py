"""Rejected intent versions: a version whose rollout rolled back is marked rejected.

``intent_versions`` gains ``rejected_at``, ``rejected_by_rollout`` (the rollout that rolled
back; NULL once that rollout row is gone) and ``rejected_reason``. A rejected version stays in
the history; the head returns to the last good version by a new version with its content
(``controller/store/rollout_store.py``), so neither the tuner nor a plain ``rollout start``
builds on or pushes the rejected one (docs/rollouts.md, "Rejected versions").

Revision ID: 0013_rejected
Revises: 0012_twin_runs
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013_rejected"
down_revision: str | None = "0012_twin_runs"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column(
        "intent_versions", sa.Column("rejected_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column(
        "intent_versions",
        sa.Column(
            "rejected_by_rollout",
            sa.BigInteger(),
            sa.ForeignKey(
                "rollouts.id",
                name="fk_intent_versions_rejected_by_rollout_rollouts",
                ondelete="SET NULL",
            ),
            nullable=True,
        ),
    )
    op.add_column("intent_versions", sa.Column("rejected_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("intent_versions", "rejected_reason")
    op.drop_column("intent_versions", "rejected_by_rollout")
    op.drop_column("intent_versions", "rejected_at")
