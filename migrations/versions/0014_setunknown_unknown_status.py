"""A switch whose unanswered Set never showed is in an ``unknown`` state: a rollout result and
a reconcile run may say so (not ``unreachable``: the switch answered reads, and the Set may
still be applying; it is never sent again).

Revision ID: 0014_setunknown
Revises: 0013_rejected
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision: str = "0014_setunknown"
down_revision: str | None = "0013_rejected"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
RESULT_BEFORE = ("pending", "applied_verified", "failed", "unreachable", "mismatch", "skipped")
RECONCILE_BEFORE = ("converged", "corrected", "alerted", "failed", "unreachable")
UNKNOWN = "unknown"
CONSTRAINTS = {
    "rollout_results": ("ck_rollout_results_status_known", RESULT_BEFORE),
    "reconcile_runs": ("ck_reconcile_runs_status_known", RECONCILE_BEFORE),
}


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _statuses(table: str, values: tuple[str, ...]) -> None:
    name, _ = CONSTRAINTS[table]
    op.drop_constraint(name, table, type_="check")
    op.create_check_constraint(name, table, _one_of("status", values))


def upgrade() -> None:
    for table, (_, before) in CONSTRAINTS.items():
        _statuses(table, (*before, UNKNOWN))


def downgrade() -> None:
    # The old schema knows no unknown state: the nearest it has is unreachable.
    for table, (_, before) in CONSTRAINTS.items():
        op.execute(f"UPDATE {table} SET status = 'unreachable' WHERE status = '{UNKNOWN}'")
        _statuses(table, before)
