"""Database reachability, for the health endpoint."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session


def ping(*, session: Session) -> bool:
    return bool(session.scalar(text("SELECT 1")) == 1)
