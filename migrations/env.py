"""Alembic environment: the URL is injected, the metadata comes from the models.

URL, first found wins: ``config.attributes["url"]`` (set by ``controller.store.migrate``),
``-x url=...`` on the alembic command line, then ``DATABASE_URL`` through the settings.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from controller.settings import Settings
from controller.store.db import normalise_url
from controller.store.models import Base


def database_url() -> str:
    injected = context.config.attributes.get("url")
    if isinstance(injected, str):
        return normalise_url(injected)
    from_x = context.get_x_argument(as_dictionary=True).get("url")
    if from_x:
        return normalise_url(from_x)
    configured = Settings().database.url
    if configured is None:
        raise SystemExit("no database URL: pass -x url=... or set DATABASE_URL")
    return normalise_url(configured.get_secret_value())


def run_offline() -> None:
    context.configure(url=database_url(), target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    # NullPool: a migration leaves no idle connection behind (tests copy the migrated
    # database as a template, which PostgreSQL refuses while anyone is connected).
    engine = create_engine(database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
