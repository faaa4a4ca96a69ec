"""Which engine members are telemetry collectors.

A collector sharing its switches through the engine (``SLUICE_TELEMETRY_SHARE=engine``,
controller/telemetry/collector.py) registers and heartbeats as a procrastinate worker record
(``procrastinate_workers``), like the controller's workers. This table only names its record a
collector's, so the collectors share the switches among themselves and the workers' drift watch
among themselves; a pruned worker record takes its row with it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010_collshard"
down_revision: str | None = "0009_scaleengine"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "telemetry_collectors",
        sa.Column(
            "worker_id",
            sa.BigInteger(),
            sa.ForeignKey("procrastinate_workers.id", ondelete="CASCADE"),
            primary_key=True,
        ),
    )


def downgrade() -> None:
    op.drop_table("telemetry_collectors")
