"""Engine and session factories. Built by the entry point from injected settings."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

# A transaction-scoped advisory lock key serialising intent writers (the ASCII of "sluice").
INTENT_WRITE_LOCK_KEY = 0x736C75696365


def normalise_url(url: str) -> str:
    """Use the psycopg 3 driver whatever PostgreSQL URL spelling the operator gave."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


# A database that does not answer within this is treated as away (503, worker backoff)
# rather than holding a request thread for the operating system's TCP timeout.
CONNECT_TIMEOUT_S = 3
# How long a request waits for a pooled connection before it is answered 503.
POOL_TIMEOUT_S = 5.0


def make_engine(url: str, *, pool_size: int = 5) -> Engine:
    """An engine for ``url``; ``pool_pre_ping`` so a restarted database is survived (a dead
    pooled connection is replaced, not handed to a request), and a short connect timeout."""
    return create_engine(
        normalise_url(url),
        pool_size=pool_size,
        pool_pre_ping=True,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
    )


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    # expire_on_commit=False: services hand plain values out after the transaction ends.
    return sessionmaker(bind=engine, expire_on_commit=False)
