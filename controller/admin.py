"""``sluice-admin``: the operator's bootstrap commands, run next to the database.

- ``sluice-admin migrate [--revision REV]``: bring the schema to a revision (default head);
- ``sluice-admin create-token --name N --role admin|operator|viewer``: print a new API token
  once on stdout (nothing else goes to stdout, so ``TOKEN=$(sluice-admin create-token ...)``
  works). Only its SHA-256 is stored.

The database URL comes from ``DATABASE_URL`` (settings), never from a flag, so it does not
land in shell history or process listings.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from controller.errors import SluiceError
from controller.intent.models import NAME_RE
from controller.services.common import Actor, utc_now
from controller.services.tokens import AccessRole, TokenService
from controller.settings import Settings
from controller.store.db import make_engine, make_sessions
from controller.store.migrate import current_revision, upgrade
from controller.store.outage import is_database_outage, outage_summary

app = typer.Typer(
    help="sluice administration: schema migrations and API tokens.",
    no_args_is_help=True,
    add_completion=False,
)

EXIT_NO_DATABASE = 2
EXIT_REFUSED = 4
EXIT_DATABASE_UNAVAILABLE = 3


@contextmanager
def _database_failures() -> Iterator[None]:
    """The database away (or refusing us) is one line on stderr and a non-zero exit, not a
    traceback: the operator needs what failed, not where in the driver."""
    try:
        yield
    except Exception as error:
        if not is_database_outage(error):
            raise
        typer.echo(f"database unavailable: {outage_summary(error)}", err=True)
        raise typer.Exit(EXIT_DATABASE_UNAVAILABLE) from None


def _database_url() -> str:
    url = Settings().database.url
    if url is None:
        typer.echo("DATABASE_URL is not set", err=True)
        raise typer.Exit(EXIT_NO_DATABASE)
    return url.get_secret_value()


@app.command()
def migrate(
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Upgrade the database schema (committed Alembic revisions only)."""
    url = _database_url()
    with _database_failures():
        upgrade(url, revision)
        typer.echo(f"database at revision {current_revision(url)}", err=True)


def _token_name(value: str) -> str:
    if not re.match(NAME_RE, value) or len(value) > 64:
        raise typer.BadParameter("letters, digits, '.', '_' or '-', starting with a letter/digit")
    return value


@app.command("create-token")
def create_token(
    name: Annotated[str, typer.Option(help="who or what uses it", callback=_token_name)],
    role: Annotated[AccessRole, typer.Option(help="viewer < operator < admin")],
) -> None:
    """Create an API token and print it once (stdout). Keep it: it cannot be shown again."""
    engine = make_engine(_database_url(), pool_size=1)
    try:
        with _database_failures():
            tokens = TokenService(make_sessions(engine), clock=utc_now)
            actor = Actor(name="sluice-admin", request_id=f"cli-{uuid.uuid4().hex}")
            issued = tokens.create(name=name, role=role, actor=actor)
    except SluiceError as exc:
        typer.echo(f"refused: {exc.detail}", err=True)
        raise typer.Exit(EXIT_REFUSED) from None
    finally:
        engine.dispose()
    typer.echo(f"token {issued.info.name!r} (id {issued.info.id}, {role.value}) created", err=True)
    typer.echo(issued.secret)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
