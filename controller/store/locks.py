"""A cross-process lock on the switches: one writer at a time, whichever process it is.

The worker's rollout steps and reconcile passes, and a pass an operator asks the API for,
all write to switches; a PostgreSQL session-level advisory lock, held on its own
connection for the duration, keeps them from interleaving on the same switch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

# ASCII of "switch": distinct from the intent and rollout-start transaction locks.
SWITCH_WORK_LOCK_KEY = 0x737769746368
# ASCII of "tuning": a transaction lock serialising the queueing of searching tuning passes.
TUNING_QUEUE_LOCK_KEY = 0x74756E696E67


def lock_tuning_queue(session: Session) -> None:
    """Serialise queuers until the transaction ends, so the API and a worker cannot both see
    no searching pass and both queue one."""
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": TUNING_QUEUE_LOCK_KEY})


@contextmanager
def switch_work_lock(engine: Engine) -> Iterator[None]:
    """Wait for, hold, then release the switch-work lock. A crashed holder's lock goes
    with its connection, so a dead worker never blocks the next one."""
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SWITCH_WORK_LOCK_KEY})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(
                text("SELECT pg_advisory_unlock(:key)"), {"key": SWITCH_WORK_LOCK_KEY}
            )
            connection.commit()
