"""The worker runs what the API records: host runs start ``pending`` with a row per host, and
an operator's "reconcile now" is a request row the worker answers.

Host runs lose ``owner`` (the API no longer runs them on its threads, so there is no process
liveness to check); at most one apply is pending or running at a time.

Revision ID: 0005_house
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005_house"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
RUN_STATES_BEFORE = ("running", "completed", "halted", "interrupted", "error")
RUN_STATES = ("pending", *RUN_STATES_BEFORE)
RESULT_STATUSES_BEFORE = ("ok", "changed", "failed", "unreachable", "not_run")
RESULT_STATUSES = ("pending", *RESULT_STATUSES_BEFORE)
REQUEST_STATES = ("pending", "done")
ONE_APPLY = "uq_host_runs_one_active_apply"


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _checks(run_states: tuple[str, ...], result_statuses: tuple[str, ...]) -> None:
    op.drop_constraint("ck_host_runs_state_known", "host_runs", type_="check")
    op.create_check_constraint(
        "ck_host_runs_state_known", "host_runs", _one_of("state", run_states)
    )
    op.drop_constraint("ck_host_results_status_known", "host_results", type_="check")
    op.create_check_constraint(
        "ck_host_results_status_known", "host_results", _one_of("status", result_statuses)
    )


def _one_apply(where: str) -> None:
    op.drop_index(ONE_APPLY, table_name="host_runs")
    op.create_index(ONE_APPLY, "host_runs", ["mode"], unique=True, postgresql_where=sa.text(where))


def upgrade() -> None:
    _checks(RUN_STATES, RESULT_STATUSES)
    _one_apply("state IN ('pending', 'running') AND mode = 'apply'")
    op.drop_column("host_runs", "owner")
    op.create_table(
        "reconcile_requests",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            _one_of("state", REQUEST_STATES), name="ck_reconcile_requests_state_known"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_reconcile_requests"),
    )


def downgrade() -> None:
    op.drop_table("reconcile_requests")
    op.add_column(
        "host_runs",
        sa.Column("owner", sa.String(128), nullable=False, server_default="worker"),
    )
    op.alter_column("host_runs", "owner", server_default=None)
    # Runs and hosts the worker had not reached yet cannot be told apart by the old schema.
    op.execute("UPDATE host_runs SET state = 'interrupted' WHERE state IN ('pending', 'running')")
    op.execute("UPDATE host_results SET status = 'not_run' WHERE status = 'pending'")
    _one_apply("state = 'running' AND mode = 'apply'")
    _checks(RUN_STATES_BEFORE, RESULT_STATUSES_BEFORE)
