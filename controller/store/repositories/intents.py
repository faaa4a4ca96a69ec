"""Intent versions and the desired-state snapshot compiled for each version."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from controller.store.db import INTENT_WRITE_LOCK_KEY
from controller.store.models import DesiredState, IntentVersion
from controller.store.repositories.paging import page_of
from controller.types import JsonObject


def lock_intent_writes(*, session: Session) -> None:
    """Serialise intent writers until the transaction ends.

    A row lock on the head version would not cover the very first insert (no row to lock),
    so writers queue on one advisory lock; each then reads the head afresh and compares it
    with the version its client read.
    """
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": INTENT_WRITE_LOCK_KEY})


def head_number(*, session: Session) -> int:
    """The newest version number, 0 when no intent was ever stored."""
    return int(session.scalar(select(func.coalesce(func.max(IntentVersion.number), 0))) or 0)


def latest_version(*, session: Session) -> IntentVersion | None:
    query = select(IntentVersion).order_by(IntentVersion.number.desc()).limit(1)
    return session.scalars(query).first()


def get_version(*, session: Session, number: int) -> IntentVersion | None:
    return session.scalars(select(IntentVersion).where(IntentVersion.number == number)).first()


def list_versions(*, session: Session, limit: int, offset: int) -> tuple[list[IntentVersion], int]:
    """Newest first, with the total count for paging."""
    order = (IntentVersion.number.desc(),)
    return page_of(
        session=session, query=select(IntentVersion), order=order, limit=limit, offset=offset
    )


def insert_version(
    *,
    session: Session,
    number: int,
    intent: JsonObject,
    content_sha256: str,
    author: str,
    reason: str,
    created_at: datetime,
) -> IntentVersion:
    row = IntentVersion(
        number=number,
        intent=intent,
        content_sha256=content_sha256,
        author=author,
        reason=reason,
        created_at=created_at,
    )
    session.add(row)
    session.flush()
    return row


def insert_desired_states(
    *, session: Session, version: int, configs: Mapping[str, JsonObject]
) -> None:
    session.add_all(
        DesiredState(version=version, switch_name=name, config=config)
        for name, config in configs.items()
    )
    session.flush()


def desired_states(
    *, session: Session, version: int, switches: Collection[str] | None = None
) -> dict[str, JsonObject]:
    """Switch name -> ``{"TABLE|key": fields}`` at ``version`` (only ``switches`` if given)."""
    query = select(DesiredState.switch_name, DesiredState.config).where(
        DesiredState.version == version
    )
    if switches is not None:
        query = query.where(DesiredState.switch_name.in_(list(switches)))
    return dict(session.execute(query).all())


def mark_rejected(
    *, session: Session, number: int, rollout_id: int, reason: str, at: datetime
) -> None:
    session.execute(
        update(IntentVersion)
        .where(IntentVersion.number == number)
        .values(rejected_at=at, rejected_by_rollout=rollout_id, rejected_reason=reason)
    )


def clear_rejection(*, session: Session, number: int) -> bool:
    """Whether ``number`` was rejected (it is not any more)."""
    done = session.execute(
        update(IntentVersion)
        .where(IntentVersion.number == number, IntentVersion.rejected_at.is_not(None))
        .values(rejected_at=None, rejected_by_rollout=None, rejected_reason=None)
    )
    return bool(done.rowcount)  # type: ignore[attr-defined]


def rejected_with_content(*, session: Session, content_sha256: str) -> IntentVersion | None:
    """The newest rejected version whose content has this digest, if any."""
    query = (
        select(IntentVersion)
        .where(
            IntentVersion.content_sha256 == content_sha256, IntentVersion.rejected_at.is_not(None)
        )
        .order_by(IntentVersion.number.desc())
        .limit(1)
    )
    return session.scalars(query).first()
