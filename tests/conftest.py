"""Shared fixtures: a real PostgreSQL cluster for the whole test session, and fresh migrated
databases copied from a template migrated once per session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from controller.store.migrate import upgrade
from lab.localpg import LocalPostgres, throwaway_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    """A throwaway PostgreSQL on 127.0.0.1, started once per session and stopped after.

    Not under pytest's tmp_path: that folder is private to root and the server runs as the
    ``postgres`` user.
    """
    with throwaway_postgres("sluice-pg-") as server:
        yield server


TEMPLATE_DB = "sluice_migrated_template"


def _admin_execute(server: LocalPostgres, sql: str) -> None:
    """Run one statement on the maintenance database outside a transaction (CREATE DATABASE)."""
    dsn = server.url().replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(scope="session")
def migrated_template(pg_server: LocalPostgres) -> str:
    """A database migrated to head once per session; tests get copies of it."""
    _admin_execute(pg_server, f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
    _admin_execute(pg_server, f"CREATE DATABASE {TEMPLATE_DB}")
    upgrade(pg_server.url(TEMPLATE_DB))
    return TEMPLATE_DB


@pytest.fixture
def empty_db_url(pg_server: LocalPostgres) -> Iterator[str]:
    """A fresh, empty (unmigrated) database for migration tests; dropped afterwards."""
    with _database_from(pg_server, None) as url:
        yield url


@contextmanager
def _database_from(server: LocalPostgres, template: str | None) -> Iterator[str]:
    """A new database with a unique name (a copy of ``template``, or empty without one),
    dropped when the block ends."""
    name = f"sluice_test_{uuid.uuid4().hex[:12]}"
    copy_of = f" TEMPLATE {template}" if template is not None else ""
    _admin_execute(server, f"CREATE DATABASE {name}{copy_of}")
    try:
        yield server.url(name)
    finally:
        _admin_execute(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def db_url(pg_server: LocalPostgres, migrated_template: str) -> Iterator[str]:
    """A fresh database at the head revision, copied from the template (fast); dropped after."""
    with _database_from(pg_server, migrated_template) as url:
        yield url


@pytest.fixture(scope="module")
def module_db_url(pg_server: LocalPostgres, migrated_template: str) -> Iterator[str]:
    """Like ``db_url`` but shared by one test module (for tests that change nothing shared)."""
    with _database_from(pg_server, migrated_template) as url:
        yield url
