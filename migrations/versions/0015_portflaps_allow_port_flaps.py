"""A rollout records whether the operator allowed it to take switch ports down: SONiC's config
updater takes a port admin down and up for every change to QUEUE, BUFFER_QUEUE, PORT_QOS_MAP
and the port's buffer lists, and a rollout whose plan holds such changes fails before writing
anything unless ``allow_port_flaps`` is set.

Revision ID: 0015_portflaps
Revises: 0014_setunknown
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015_portflaps"
down_revision: str | None = "0014_setunknown"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Rollouts recorded before were never asked: they count as not allowed.
    op.add_column(
        "rollouts",
        sa.Column("allow_port_flaps", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.alter_column("rollouts", "allow_port_flaps", server_default=None)


def downgrade() -> None:
    op.drop_column("rollouts", "allow_port_flaps")
