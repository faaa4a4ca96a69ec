"""A tuning pass that runs the twin search is recorded by the API as ``queued`` and run by a
worker outside the switch work lock (``running``, from ``started_at``): two more proposal
states and the time a worker claimed the pass.

Revision ID: 0018_searchlock
Revises: 0017_predcheck
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0018_searchlock"
down_revision: str | None = "0017_predcheck"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
STATES_BEFORE = ("pending", "approved", "rejected", "stale", "no_change")
SEARCHING = ("queued", "running")
CONSTRAINT = "ck_tuning_proposals_state_known"


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _states(values: tuple[str, ...]) -> None:
    op.drop_constraint(CONSTRAINT, "tuning_proposals", type_="check")
    op.create_check_constraint(CONSTRAINT, "tuning_proposals", _one_of("state", values))


def upgrade() -> None:
    _states((*SEARCHING, *STATES_BEFORE))
    op.add_column(
        "tuning_proposals", sa.Column("started_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    # The old schema has no pass in progress: one not yet done found nothing.
    op.execute(
        "UPDATE tuning_proposals SET state = 'no_change', reason = reason || "
        "' [the search never ran: schema downgraded]' WHERE state IN ('queued', 'running')"
    )
    op.drop_column("tuning_proposals", "started_at")
    _states(STATES_BEFORE)
