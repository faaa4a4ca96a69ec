"""Liveness: is the database answering, and is a failure the database being away?"""

from __future__ import annotations

import logging

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from controller.store.outage import is_database_outage, outage_summary
from controller.store.repositories import health

log = logging.getLogger(__name__)


def database_outage(error: BaseException) -> str | None:
    """One line naming what failed when ``error`` means PostgreSQL cannot be reached now (the
    API answers those 503 with ``Retry-After``); None for every other failure."""
    return outage_summary(error) if is_database_outage(error) else None


class HealthService:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def database_reachable(self) -> bool:
        try:
            with self._sessions() as session:
                return health.ping(session=session)
        except SQLAlchemyError as exc:
            # The class name only: driver messages can carry the connection URL.
            log.warning("database unreachable: %s", type(exc).__name__)
            return False
