"""Alembic: every revision goes up and down on a real PostgreSQL, and head matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, pool

from controller.store.migrate import current_revision, downgrade, revisions, upgrade
from controller.store.models import Base

TABLES_0001 = {"intent_versions", "desired_states", "running_states", "audit_log", "api_tokens"}
SCHEMA_TABLES = TABLES_0001 | {
    # 0003: rollouts and reconciliation
    "rollouts",
    "rollout_results",
    "reconcile_runs",
    "drift_events",
    # 0004: host configuration runs
    "host_runs",
    "host_results",
    # 0005_house: an operator's reconcile-now, answered by the worker
    "reconcile_requests",
    # 0006_tuner: tuning proposals
    "tuning_proposals",
    # 0007_whatif: what-if simulations, run by the worker
    "simulations",
    # 0008_gates: rollout health-gate readings
    "rollout_gate_evaluations",
    # 0009_scaleengine: procrastinate's job queue (engine mode)
    "procrastinate_jobs",
    "procrastinate_workers",
    "procrastinate_events",
    "procrastinate_periodic_defers",
    # 0010_collshard: which engine worker records are telemetry collectors
    "telemetry_collectors",
}


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
    assert _tables(empty_db_url) == TABLES_0001
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


# Keyed on procrastinate's worker records, so kept with its schema, outside our models.
ENGINE_SIDE_TABLES = {"telemetry_collectors"}  # 0010_collshard


def _ours(name: str | None, kind: str, _parents: object) -> bool:
    """procrastinate's tables are its own schema (0009_scaleengine), not our models'."""
    table = name or ""
    return not (
        kind == "table" and (table.startswith("procrastinate_") or table in ENGINE_SIDE_TABLES)
    )


def _differences_from_models(url: str) -> list[object]:
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"include_name": _ours})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_head_schema_matches_the_models(db_url: str) -> None:
    assert _differences_from_models(db_url) == []


def test_the_model_comparison_sees_a_missing_revision(empty_db_url: str) -> None:
    # At 0001 the indexes of 0002 are missing: the comparison above is not vacuous.
    upgrade(empty_db_url, "0001")
    text = repr(_differences_from_models(empty_db_url))
    assert "ix_audit_log_at" in text
    assert "uq_api_tokens_active_name" in text


def test_every_revision_steps_up_and_down_one_at_a_time(empty_db_url: str) -> None:
    """Generic over the revision list, so revisions added later are walked too."""
    chain = revisions()
    for revision in chain:
        upgrade(empty_db_url, revision)
        assert current_revision(empty_db_url) == revision
    assert _tables(empty_db_url) == SCHEMA_TABLES
    for below in [*reversed(chain[:-1]), None]:
        downgrade(empty_db_url, below or "base")
        assert current_revision(empty_db_url) == below
    assert _tables(empty_db_url) == set()
