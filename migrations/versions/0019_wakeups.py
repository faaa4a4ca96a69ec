"""Wake an idle worker when work is recorded: the tables that hold the worker's work notify
channel ``sluice_worker`` when a row is added (``controller/store/wakeups.py`` listens), so
a request is taken up at once instead of at the worker's next poll. Inserts only: the
worker's own progress is written as updates, which must not wake every worker again.

Revision ID: 0019_wakeups
Revises: 0018_searchlock
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision: str = "0019_wakeups"
down_revision: str | None = "0018_searchlock"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out rather than imported: a revision must keep meaning what it meant when written.
CHANNEL = "sluice_worker"
FUNCTION = "sluice_wake_worker"
WORK_TABLES = (
    "rollouts",
    "host_runs",
    "reconcile_requests",
    "discoveries",
    "releases",
    "twin_runs",
    "tuning_proposals",
)


def _trigger(table: str) -> str:
    return f"{table}_wakes_worker"


def upgrade() -> None:
    # A statement trigger: one notification per writing statement, and PostgreSQL folds the
    # same notification sent twice in one transaction into one, delivered at commit.
    op.execute(
        f"""
        CREATE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('{CHANNEL}', TG_TABLE_NAME);
            RETURN NULL;
        END $$
        """
    )
    for table in WORK_TABLES:
        op.execute(
            f"CREATE TRIGGER {_trigger(table)} AFTER INSERT ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        )


def downgrade() -> None:
    for table in WORK_TABLES:
        op.execute(f"DROP TRIGGER {_trigger(table)} ON {table}")
    op.execute(f"DROP FUNCTION {FUNCTION}()")
