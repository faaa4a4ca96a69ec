"""Schema migrations as functions: ``upgrade(url)`` / ``downgrade(url, rev)``.

The schema only ever changes through the committed revisions in ``migrations/versions``.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, pool

from controller.store.db import normalise_url

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    """A config that needs no alembic.ini: script location here, URL injected."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    return config


def upgrade(url: str, rev: str = "head") -> None:
    command.upgrade(alembic_config(url), rev)


def downgrade(url: str, rev: str) -> None:
    command.downgrade(alembic_config(url), rev)


def revisions() -> list[str]:
    """Revision ids from base to head."""
    script = ScriptDirectory.from_config(alembic_config(""))
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def current_revision(url: str) -> str | None:
    engine = create_engine(normalise_url(url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
