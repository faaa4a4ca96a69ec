"""Host runs roll back: a gate that fails after a batch brings its hosts (or every host the run
reached) back to the version each ran before.

``host_results`` gains ``phase`` (``apply``, or ``rollback`` for the row of a host being put
back) and ``from_version`` (the intent version the host ran when the run was recorded, the one
a rollback restores; NULL when it ran none). One row per host and phase of a run. Host runs
gain the states ``rolling_back`` and ``rolled_back``; a run rolling back still holds the one
active apply, so no other apply races it on the same hosts.

Revision ID: 0011_hostgates
Revises: 0010_collshard
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011_hostgates"
down_revision: str | None = "0010_collshard"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
RUN_STATES_BEFORE = ("pending", "running", "completed", "halted", "interrupted", "error")
RUN_STATES = (*RUN_STATES_BEFORE, "rolling_back", "rolled_back")
PHASES = ("apply", "rollback")
ONE_APPLY = "uq_host_runs_one_active_apply"
ONE_RESULT_BEFORE = "uq_host_results_run_id_host_name"
ONE_RESULT = "uq_host_results_run_id_phase_host_name"


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _run_states(states: tuple[str, ...], active: str) -> None:
    op.drop_constraint("ck_host_runs_state_known", "host_runs", type_="check")
    op.create_check_constraint("ck_host_runs_state_known", "host_runs", _one_of("state", states))
    op.drop_index(ONE_APPLY, table_name="host_runs")
    op.create_index(
        ONE_APPLY,
        "host_runs",
        ["mode"],
        unique=True,
        postgresql_where=sa.text(f"state IN ({active}) AND mode = 'apply'"),
    )


def upgrade() -> None:
    op.add_column(
        "host_results",
        sa.Column("phase", sa.String(8), nullable=False, server_default="apply"),
    )
    op.alter_column("host_results", "phase", server_default=None)
    op.add_column("host_results", sa.Column("from_version", sa.Integer(), nullable=True))
    op.create_check_constraint(
        "ck_host_results_phase_known", "host_results", _one_of("phase", PHASES)
    )
    op.drop_constraint(ONE_RESULT_BEFORE, "host_results", type_="unique")
    op.create_unique_constraint(ONE_RESULT, "host_results", ["run_id", "phase", "host_name"])
    _run_states(RUN_STATES, "'pending', 'running', 'rolling_back'")


def downgrade() -> None:
    # The old schema knows no rollback: a rollback's rows go, its runs read as halted.
    op.execute("DELETE FROM host_results WHERE phase = 'rollback'")
    op.execute(
        "UPDATE host_runs SET state = 'halted' WHERE state IN ('rolling_back', 'rolled_back')"
    )
    _run_states(RUN_STATES_BEFORE, "'pending', 'running'")
    op.drop_constraint(ONE_RESULT, "host_results", type_="unique")
    op.create_unique_constraint(ONE_RESULT_BEFORE, "host_results", ["run_id", "host_name"])
    op.drop_constraint("ck_host_results_phase_known", "host_results", type_="check")
    op.drop_column("host_results", "from_version")
    op.drop_column("host_results", "phase")
