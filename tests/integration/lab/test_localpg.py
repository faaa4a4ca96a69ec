"""The session's PostgreSQL is real: it answers SQL over TCP on loopback."""

import psycopg

from lab.localpg import LocalPostgres


def test_pg_server_answers_sql(pg_server: LocalPostgres) -> None:
    dsn = pg_server.url().replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select 40 + 2, current_setting('listen_addresses')").fetchone()
    assert row == (42, "127.0.0.1")
