"""The database being away, told apart from every other failure, and how long to wait for it.

``is_database_outage`` says whether an exception means PostgreSQL cannot be reached (refused,
reset, timed out, restarting): the API answers those 503 with ``Retry-After``, the worker and
``sluice-admin`` wait or say so in one line. ``Backoff`` is the pure part of waiting: the
delay doubles from ``first_s`` up to ``cap_s`` and falls back to ``first_s`` once a round works;
it reports state changes (down, up) so a caller logs one line per change, not per retry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from sqlalchemy import exc as sa_exc

# Errors a driver raises when the server is unreachable or went away mid-transaction; a
# constraint or syntax error is an IntegrityError/ProgrammingError and never lands here.
_OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,  # no pooled connection came free: the server is not answering
    psycopg.OperationalError,
    psycopg.InterfaceError,
    ConnectionError,
)


def is_database_outage(error: BaseException) -> bool:
    """True when ``error`` (or what it wraps) means the database cannot be reached now."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _OUTAGE_ERRORS):
            return True
        current = current.__cause__ or current.__context__
    return False


def outage_summary(error: BaseException) -> str:
    """One line naming what failed, without the URL or any secret: the driver's first line."""
    text = str(getattr(error, "orig", None) or error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


@dataclass
class Backoff:
    """Exponential backoff over rounds: ``failed`` answers the next delay and whether this
    failure started an outage; ``succeeded`` whether it ended one."""

    first_s: float = 0.5
    cap_s: float = 30.0
    _delay_s: float = field(default=0.0, init=False)
    _failures: int = field(default=0, init=False)

    @property
    def down(self) -> bool:
        return self._failures > 0

    @property
    def failures(self) -> int:
        return self._failures

    def failed(self) -> tuple[float, bool]:
        started = self._failures == 0
        self._failures += 1
        self._delay_s = self.first_s if started else min(self._delay_s * 2, self.cap_s)
        return self._delay_s, started

    def succeeded(self) -> bool:
        ended = self._failures > 0
        self._failures = 0
        self._delay_s = 0.0
        return ended
