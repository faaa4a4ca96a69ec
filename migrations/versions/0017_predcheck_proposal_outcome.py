"""A tuning proposal records the hosts' small-flow figures over the window it was made from
(``baseline``) and, after its rollout, the outcome: the search's predicted change per class
beside the measured one, or how the rollout ended when there is nothing to compare.

Revision ID: 0017_predcheck
Revises: 0016_adoption
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017_predcheck"
down_revision: str | None = "0016_adoption"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Proposals recorded before have no baseline: their outcome is "not measurable".
    op.add_column("tuning_proposals", sa.Column("baseline", postgresql.JSONB(), nullable=True))
    op.add_column("tuning_proposals", sa.Column("outcome", postgresql.JSONB(), nullable=True))
    op.add_column(
        "tuning_proposals", sa.Column("outcome_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("tuning_proposals", "outcome_at")
    op.drop_column("tuning_proposals", "outcome")
    op.drop_column("tuning_proposals", "baseline")
