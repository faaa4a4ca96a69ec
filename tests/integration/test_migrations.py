"""Alembic: every revision goes up and down on a real PostgreSQL, and head matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, pool, text

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
    # 0007_whatif: twin runs, run by the worker (named simulations until 0012_twin_runs)
    "twin_runs",
    # 0008_gates: rollout health-gate readings
    "rollout_gate_evaluations",
    # 0009_scaleengine: procrastinate's job queue (engine mode)
    "procrastinate_jobs",
    "procrastinate_workers",
    "procrastinate_events",
    "procrastinate_periodic_defers",
    # 0010_collshard: which engine worker records are telemetry collectors
    "telemetry_collectors",
    # 0016_adoption: adoption records, releases and discoveries (docs/adopting.md)
    "adoptions",
    "releases",
    "discoveries",
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


def _rows_and_names(url: str, table: str) -> tuple[list[tuple[object, ...]], set[str]]:
    """The (id, state, requested_by) rows of ``table`` and the names of its index, its
    constraints and its identity sequence."""
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(f"SELECT id, state, requested_by FROM {table} ORDER BY id")
            ).all()
            constraints = connection.execute(
                text("SELECT conname FROM pg_constraint WHERE conrelid = CAST(:t AS regclass)"),
                {"t": table},
            ).scalars()
            sequence = connection.execute(
                text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table}
            ).scalar_one()
            names = {*constraints, *_index_names(url, table), str(sequence)}
            return [tuple(row) for row in rows], names
    finally:
        engine.dispose()


def test_0012_renames_simulations_to_twin_runs_keeping_rows(empty_db_url: str) -> None:
    upgrade(empty_db_url, "0011_hostgates")
    engine = create_engine(empty_db_url, poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO simulations (state, intent_version, request, requested_by,"
                    " requested_at) VALUES ('completed', 1, '{}', 'ops', now())"
                )
            )
    finally:
        engine.dispose()
    before = _rows_and_names(empty_db_url, "simulations")

    upgrade(empty_db_url, "0012_twin_runs")
    assert "simulations" not in _tables(empty_db_url)
    rows, names = _rows_and_names(empty_db_url, "twin_runs")
    assert rows == before[0] == [(1, "completed", "ops")]
    assert names == {
        "pk_twin_runs",
        "ck_twin_runs_state_known",
        "ix_twin_runs_state",
        "public.twin_runs_id_seq",
    }

    downgrade(empty_db_url, "0011_hostgates")
    assert "twin_runs" not in _tables(empty_db_url)
    assert _rows_and_names(empty_db_url, "simulations") == before
