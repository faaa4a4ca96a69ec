"""Schema: intent versions, desired and running state, audit log, API tokens.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "intent_versions",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("intent", JSONB, nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("author", sa.String(128), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_intent_versions"),
        sa.UniqueConstraint("number", name="uq_intent_versions_number"),
        sa.CheckConstraint("number > 0", name="ck_intent_versions_number_positive"),
    )
    op.create_table(
        "desired_states",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("config", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_desired_states"),
        sa.ForeignKeyConstraint(
            ["version"],
            ["intent_versions.number"],
            name="fk_desired_states_version_intent_versions",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("version", "switch_name", name="uq_desired_states_version_switch_name"),
    )
    op.create_table(
        "running_states",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("config", JSONB, nullable=False),
        sa.Column("recorded_at", TZ, nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_running_states"),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("resource_type", sa.String(32), nullable=False),
        sa.Column("resource_id", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer, nullable=True),
        sa.Column("before", JSONB, nullable=True),
        sa.Column("after", JSONB, nullable=True),
        sa.Column("at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("revoked_at", TZ, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("token_sha256", name="uq_api_tokens_token_sha256"),
        # Revision 0002 relaxes this to "unique among tokens not revoked".
        sa.UniqueConstraint("name", name="uq_api_tokens_name"),
        sa.CheckConstraint(
            "role IN ('viewer', 'operator', 'admin')", name="ck_api_tokens_role_known"
        ),
    )


def downgrade() -> None:
    op.drop_table("api_tokens")
    op.drop_table("audit_log")
    op.drop_table("running_states")
    op.drop_table("desired_states")
    op.drop_table("intent_versions")
