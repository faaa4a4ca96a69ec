"""``sluice-admin``: migrate an empty database, create tokens printed once, refuse bad input."""

from __future__ import annotations

import socket

import pytest
from sqlalchemy import create_engine, inspect, pool
from typer.testing import CliRunner

from controller.admin import EXIT_DATABASE_UNAVAILABLE, EXIT_NO_DATABASE, EXIT_REFUSED, app
from controller.services.tokens import AccessRole, TokenService
from controller.store.db import make_engine, make_sessions
from controller.store.migrate import current_revision, revisions
from tests.integration.conftest import StepClock


def _run(*args: str, url: str | None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"DATABASE_URL": url})
    return result.exit_code, result.stdout, result.stderr


def test_migrate_brings_an_empty_database_to_head(empty_db_url: str) -> None:
    code, _, err = _run("migrate", url=empty_db_url)
    assert code == 0, err
    assert current_revision(empty_db_url) == revisions()[-1]
    engine = create_engine(empty_db_url, poolclass=pool.NullPool)
    try:
        assert "intent_versions" in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_create_token_prints_only_the_token_and_it_authenticates(db_url: str) -> None:
    code, out, err = _run("create-token", "--name", "first-admin", "--role", "admin", url=db_url)
    assert code == 0, err
    secret = out.strip()
    assert "\n" not in secret
    assert secret not in err
    engine = make_engine(db_url, pool_size=1)
    try:
        principal = TokenService(make_sessions(engine), clock=StepClock()).authenticate(secret)
    finally:
        engine.dispose()
    assert (principal.name, principal.role) == ("first-admin", AccessRole.ADMIN)


def test_create_token_refusals(db_url: str) -> None:
    assert _run("create-token", "--name", "x", "--role", "root", url=db_url)[0] == 2
    assert _run("create-token", "--name", "bad name", "--role", "viewer", url=db_url)[0] == 2
    assert _run("create-token", "--name", "x", "--role", "viewer", url=None)[0] == EXIT_NO_DATABASE
    assert _run("create-token", "--name", "dup", "--role", "viewer", url=db_url)[0] == 0
    code, out, err = _run("create-token", "--name", "dup", "--role", "viewer", url=db_url)
    assert code == EXIT_REFUSED
    assert out == ""
    assert "dup" in err


@pytest.mark.parametrize(
    "args",
    [("migrate",), ("create-token", "--name", "x", "--role", "viewer")],
    ids=["migrate", "create-token"],
)
def test_database_down_is_one_line_and_a_non_zero_exit(args: tuple[str, ...]) -> None:
    with socket.socket() as sock:  # a port nothing listens on: bound, then released
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+psycopg://postgres:secret-pw@127.0.0.1:{port}/sluice"
    result = CliRunner().invoke(app, list(args), env={"DATABASE_URL": url})
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == EXIT_DATABASE_UNAVAILABLE
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("database unavailable:")
    assert "secret-pw" not in result.stderr
