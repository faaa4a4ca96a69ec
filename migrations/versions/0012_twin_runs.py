"""The twin has one name: the table of twin runs, ``simulations`` until now, becomes
``twin_runs``, with its index, constraints and identity sequence (docs/architecture.md,
"Renames"). Rows are kept as they are.

Revision ID: 0012_twin_runs
Revises: 0011_hostgates
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision: str = "0012_twin_runs"
down_revision: str | None = "0011_hostgates"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than derived: a revision must keep meaning what it meant when written.
OLD, NEW = "simulations", "twin_runs"
# 0007 spelled its check constraint's full name, which the models' naming convention
# prefixed again; the new name is the one the convention gives ``TwinRun``'s "state_known".
OLD_CHECK, NEW_CHECK = "ck_simulations_ck_simulations_state_known", "ck_twin_runs_state_known"


def _rename(before: str, after: str, check_before: str, check_after: str) -> None:
    op.rename_table(before, after)
    op.execute(f"ALTER INDEX ix_{before}_state RENAME TO ix_{after}_state")
    op.execute(f"ALTER TABLE {after} RENAME CONSTRAINT pk_{before} TO pk_{after}")
    op.execute(f"ALTER TABLE {after} RENAME CONSTRAINT {check_before} TO {check_after}")
    op.execute(f"ALTER SEQUENCE {before}_id_seq RENAME TO {after}_id_seq")


def upgrade() -> None:
    _rename(OLD, NEW, OLD_CHECK, NEW_CHECK)


def downgrade() -> None:
    _rename(NEW, OLD, NEW_CHECK, OLD_CHECK)
