"""Running state: what each switch was last known to run, recorded after read-backs."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from controller.store.models import RunningState
from controller.types import JsonObject


def record_running_state(
    *, session: Session, switch_name: str, config: JsonObject, recorded_at: datetime, source: str
) -> RunningState:
    row = RunningState(
        switch_name=switch_name, config=config, recorded_at=recorded_at, source=source
    )
    session.add(row)
    session.flush()
    return row


def latest_running_states(
    *, session: Session, switches: Collection[str] | None = None
) -> dict[str, JsonObject]:
    """Switch name -> the newest recorded config; switches never recorded are absent."""
    query = (
        select(RunningState.switch_name, RunningState.config)
        .ext(distinct_on(RunningState.switch_name))
        .order_by(RunningState.switch_name, RunningState.recorded_at.desc(), RunningState.id.desc())
    )
    if switches is not None:
        query = query.where(RunningState.switch_name.in_(list(switches)))
    return dict(session.execute(query).all())
