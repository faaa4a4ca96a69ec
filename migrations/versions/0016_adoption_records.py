"""Adopting a running switch: the adoption record (the operator's QoS config before sluice's
first write to a switch, restored when sluice lets go), discovery requests and their results,
and release requests, each recorded by the API and carried out by the worker.

Revision ID: 0016_adoption
Revises: 0015_portflaps
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016_adoption"
down_revision: str | None = "0015_portflaps"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
DISCOVERY_STATES = ("pending", "done")
RELEASE_STATES = ("pending", "released", "failed", "unreachable", "unknown")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "adoptions",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("baseline", postgresql.JSONB(), nullable=False),
        sa.Column("adopted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("adopted_by", sa.String(128), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("released_by", sa.String(128), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_adoptions"),
    )
    op.create_index(
        "uq_adoptions_active_switch_name",
        "adoptions",
        ["switch_name"],
        unique=True,
        postgresql_where=sa.text("released_at IS NULL"),
    )
    op.create_index(
        "ix_adoptions_switch_name_adopted_at", "adoptions", ["switch_name", "adopted_at"]
    )
    op.create_table(
        "discoveries",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("request", postgresql.JSONB(), nullable=False),
        sa.Column("result", postgresql.JSONB(), nullable=True),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(_one_of("state", DISCOVERY_STATES), name="ck_discoveries_state_known"),
        sa.PrimaryKeyConstraint("id", name="pk_discoveries"),
    )
    op.create_index("ix_discoveries_state", "discoveries", ["state"])
    op.create_table(
        "releases",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("switch_name", sa.String(63), nullable=False),
        sa.Column("adoption_id", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("allow_port_flaps", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("detail", postgresql.JSONB(), nullable=True),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(_one_of("state", RELEASE_STATES), name="ck_releases_state_known"),
        sa.ForeignKeyConstraint(
            ["adoption_id"],
            ["adoptions.id"],
            name="fk_releases_adoption_id_adoptions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_releases"),
    )
    op.create_index("ix_releases_state", "releases", ["state"])


def downgrade() -> None:
    op.drop_table("releases")
    op.drop_table("discoveries")
    op.drop_table("adoptions")
