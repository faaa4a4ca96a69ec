"""Alembic: every revision goes up and down on a real PostgreSQL, and head matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, pool

from controller.store.migrate import current_revision, downgrade, revisions, upgrade
from controller.store.models import Base

SCHEMA_TABLES = {"intent_versions", "desired_states", "running_states", "audit_log", "api_tokens"}


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _index_names(url: str, table: str) -> set[str]:
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        return {str(ix["name"]) for ix in inspect(engine).get_indexes(table)}
    finally:
        engine.dispose()


def test_there_are_at_least_two_revisions_in_a_line() -> None:
    assert revisions()[:2] == ["0001", "0002"]


def test_walk_up_and_down_every_revision(empty_db_url: str) -> None:
    assert _tables(empty_db_url) == set()
    upgrade(empty_db_url, "0001")
    assert current_revision(empty_db_url) == "0001"
    assert _tables(empty_db_url) == SCHEMA_TABLES
    assert "ix_audit_log_at" not in _index_names(empty_db_url, "audit_log")

    upgrade(empty_db_url, "0002")
    assert current_revision(empty_db_url) == "0002"
    assert "ix_audit_log_at" in _index_names(empty_db_url, "audit_log")
    assert "uq_api_tokens_active_name" in _index_names(empty_db_url, "api_tokens")

    downgrade(empty_db_url, "0001")
    assert current_revision(empty_db_url) == "0001"
    assert "ix_audit_log_at" not in _index_names(empty_db_url, "audit_log")
    assert "uq_api_tokens_active_name" not in _index_names(empty_db_url, "api_tokens")

    downgrade(empty_db_url, "base")
    assert current_revision(empty_db_url) is None
    assert _tables(empty_db_url) == set()

    upgrade(empty_db_url)
    assert current_revision(empty_db_url) == revisions()[-1]
    assert _tables(empty_db_url) == SCHEMA_TABLES


def test_head_schema_matches_the_models(db_url: str) -> None:
    engine = create_engine(db_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection)
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []
