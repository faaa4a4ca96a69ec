"""Indexes for the read paths; token names unique only among tokens not revoked.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Plans read the newest running state per switch; the audit list pages by time.
    op.create_index(
        "ix_running_states_switch_name_recorded_at",
        "running_states",
        ["switch_name", "recorded_at"],
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    # An operator who revoked token "ci" may create a new "ci".
    op.drop_constraint("uq_api_tokens_name", "api_tokens", type_="unique")
    op.create_index(
        "uq_api_tokens_active_name",
        "api_tokens",
        ["name"],
        unique=True,
        postgresql_where=sa.text("revoked_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_api_tokens_active_name", table_name="api_tokens")
    # Going back to globally unique names fails if a revoked and an active token share a
    # name; refuse loudly rather than drop audit-relevant rows.
    op.create_unique_constraint("uq_api_tokens_name", "api_tokens", ["name"])
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_index("ix_running_states_switch_name_recorded_at", table_name="running_states")
