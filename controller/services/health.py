"""Liveness: is the database answering?"""

from __future__ import annotations

import logging

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from controller.store.repositories import health

log = logging.getLogger(__name__)


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
