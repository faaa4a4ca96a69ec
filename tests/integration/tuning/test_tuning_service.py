"""TuningService.tick, the periodic entry: at most one pass per window, none while off.
Real PostgreSQL (migrated) and a real Prometheus with history.py backfilled; the clock is
stepped by hand (the summary is read at the history's end whatever the clock says)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.tuning import TuningService
from controller.store.db import make_engine, make_sessions
from controller.telemetry.promql import PromQL
from controller.telemetry.tuning_summary import read_summary
from tests.integration.tuning.history import HandClock, history_promql, tuner_intent

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromQL, datetime]]:
    with history_promql(tmp_path_factory.mktemp("tuner-service")) as made:
        yield made


def test_tick_runs_once_per_window_and_not_while_off(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    clock = HandClock(end)
    engine = make_engine(db_url, pool_size=2)
    try:
        sessions = make_sessions(engine)
        intents = IntentService(sessions, clock=clock)
        off = tuner_intent()
        off["fabric"]["tuning"]["mode"] = "off"
        intents.replace(off, expected=0, actor=ACTOR, reason="off")
        service = TuningService(
            sessions, intents, lambda _at, window: read_summary(promql, end, window), clock=clock
        )
        assert service.tick(ACTOR) is None  # off: nothing runs

        intents.replace(tuner_intent(), expected=1, actor=ACTOR, reason="propose")
        first = service.tick(ACTOR)
        assert first is not None
        assert first.state == "pending"
        clock.now = end + timedelta(seconds=599)  # window_s is 600 by default
        assert service.tick(ACTOR) is None
        clock.now = end + timedelta(seconds=600)
        second = service.tick(ACTOR)
        assert second is not None
        assert second.id == first.id + 1
    finally:
        engine.dispose()
