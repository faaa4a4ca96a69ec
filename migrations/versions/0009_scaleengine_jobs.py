"""The job queue of engine mode: procrastinate's tables, types and functions.

procrastinate keeps its jobs in PostgreSQL (controller/rollout/shard.py); its schema is the
SQL file shipped with the installed package (``procrastinate/sql/schema.sql``), applied here
so that the database has one migration history. A later procrastinate release that changes
its schema ships migration files (``procrastinate/sql/migrations``), applied by a later
revision of ours.

Revision ID: 0009_scaleengine
Revises: 0008_gates
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op
from procrastinate.schema import SchemaManager

revision: str = "0009_scaleengine"
down_revision: str | None = "0008_gates"
branch_labels: str | None = None
depends_on: str | None = None

# What the schema file creates, named by prefix: every object is ``procrastinate_*``.
DROP_ALL = """
DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs,
    procrastinate_workers CASCADE;
DO $$
DECLARE fn regprocedure;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p
              JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%'
    LOOP
        EXECUTE 'DROP FUNCTION ' || fn || ' CASCADE';
    END LOOP;
END $$;
DROP TYPE IF EXISTS procrastinate_job_to_defer_v1, procrastinate_job_event_type,
    procrastinate_job_status CASCADE;
"""


def _execute_script(sql: str) -> None:
    # The script holds many statements and literal percent signs: run it as psycopg's own
    # parameterless query, which takes several statements and formats nothing.
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    driver.execute(sql)


def upgrade() -> None:
    _execute_script(SchemaManager.get_schema())


def downgrade() -> None:
    _execute_script(DROP_ALL)
