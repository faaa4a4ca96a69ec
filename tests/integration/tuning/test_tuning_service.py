"""TuningService.tick, the periodic entry: at most one pass per window, none while off; and
the tuner after a rollback: it builds on the restored head, never proposes the rejected
version again, and refuses to build on a head that is itself rejected. Real PostgreSQL
(migrated) and a real Prometheus with history.py backfilled; the clock is stepped by hand
(the summary is read at the history's end whatever the clock says)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict
from controller.prometheus.promql import PromQL
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.services.tuning import TuningService
from controller.sonic.discovery import DiscoveredPort, Discovery
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import discoveries as discoveries_repo
from controller.store.repositories import rollouts as rollouts_repo
from controller.store.rollout_store import SqlRolloutStore
from controller.telemetry.tuning_summary import read_summary
from tests.integration.tuning.history import SWITCH, HandClock, history_promql, tuner_intent
from tests.support.lossless import SPECTRUM_2

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromQL, datetime]]:
    with history_promql(tmp_path_factory.mktemp("tuner-service")) as made:
        yield made


@dataclass
class Tuner:
    """A tuning service over one fresh database and the history, on a hand-moved clock."""

    sessions: sessionmaker[Session]
    intents: IntentService
    service: TuningService
    clock: HandClock
    end: datetime


@pytest.fixture
def tuner(db_url: str, history: tuple[PromQL, datetime]) -> Iterator[Tuner]:
    promql, end = history
    clock = HandClock(end)
    engine = make_engine(db_url, pool_size=2)
    sessions = make_sessions(engine)
    intents = IntentService(sessions, clock=clock)
    service = TuningService(
        sessions, intents, lambda _at, window: read_summary(promql, end, window), clock=clock
    )
    try:
        yield Tuner(sessions, intents, service, clock, end)
    finally:
        engine.dispose()


def test_tick_runs_once_per_window_and_not_while_off(tuner: Tuner) -> None:
    service, intents, clock, end = tuner.service, tuner.intents, tuner.clock, tuner.end
    off = tuner_intent()
    off["fabric"]["tuning"]["mode"] = "off"
    intents.replace(off, expected=0, actor=ACTOR, reason="off")
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


def _finished(tuner: Tuner, version: int, state: str) -> int:
    """A rollout of ``version`` ended ``state`` (completed, or rolled back after it began to),
    recorded as the worker's runner records it (``SqlRolloutStore.transition``: a rollback
    rejects there); its switch work is the rollout tests'."""
    info = RolloutService(tuner.sessions, clock=tuner.clock).start(
        RolloutPolicy(version, allow_port_flaps=True), actor=ACTOR
    )
    expected, reason = "pending", None
    if state == "rolled_back":
        with tuner.sessions.begin() as session:
            moved = rollouts_repo.set_state(
                session=session,
                rollout_id=info.id,
                state="rolling_back",
                expected=(expected,),
                at=tuner.clock(),
            )
            assert moved
        expected, reason = "rolling_back", "batch 0 failed"
    store = SqlRolloutStore(tuner.sessions, clock=tuner.clock)
    assert store.transition(info.id, state, (expected,), reason)
    return info.id


def test_the_tuner_builds_on_the_restored_head_and_never_proposes_a_rejected_version_again(
    tuner: Tuner,
) -> None:
    service, intents = tuner.service, tuner.intents
    intents.replace(tuner_intent(), expected=0, actor=ACTOR, reason="propose")
    _finished(tuner, 1, "completed")
    first = service.run(ACTOR)
    assert first.state == "pending"
    assert service.approve(first.id, ACTOR).new_version == 2
    rollout = _finished(tuner, 2, "rolled_back")

    assert intents.head() == 3  # version 1's content again
    assert intents.current().data == intents.version(1).data
    # Past every parameter's minimum interval, the same telemetry asks for the same change,
    # on the restored head: the intent it would make is version 2's, rejected.
    tuner.clock.now = tuner.end + timedelta(seconds=1000)
    again = service.run(ACTOR)
    assert (again.state, again.base_version, again.new_version) == ("no_change", 3, None)
    why = f"version 2's, which was rejected (rollout {rollout} rolled back: batch 0 failed)"
    assert why in again.reason
    assert again.changes == []
    assert again.diff == []
    assert {c["parameter"] for c in again.held if why in c["held"]} == {
        c["parameter"] for c in first.changes
    }


def test_the_tuner_does_not_build_on_a_rejected_head(tuner: Tuner) -> None:
    tuner.intents.replace(tuner_intent(), expected=0, actor=ACTOR, reason="propose")
    _finished(tuner, 1, "rolled_back")  # the first rollout: no good version to return to
    assert tuner.intents.head() == 1
    with pytest.raises(Conflict, match="the tuner does not build on it"):
        tuner.service.run(ACTOR)


def test_a_lossless_ramp_stays_below_the_xoff_point_of_the_cables_the_switches_report(
    tuner: Tuner,
) -> None:
    # leaf1 reports 300 m on its 100 Gb/s port (CONFIG_DB CABLE_LENGTH, a finished discovery):
    # the version written from a proposal is sized for it, so the ramp's ceiling is that
    # port's XOFF point (916 544 B, tests/unit/tuning/test_dcqcn.py), not the 5 m default's.
    found = Discovery(
        SWITCH, SWITCH, None, None, "traditional", None,
        (DiscoveredPort("Ethernet0", 25_000), DiscoveredPort("Ethernet4", 100_000, cable_m=300)),
        (), {("CABLE_LENGTH", "AZURE"): {"Ethernet4": "300m"}},
    )  # fmt: skip
    with tuner.sessions.begin() as session:
        row = discoveries_repo.insert(
            session=session, request={}, requested_by="test", request_id="r", at=tuner.clock()
        )
        discoveries_repo.finish(
            session=session,
            discovery_id=row.id,
            result={"switches": [found.as_json()]},
            at=tuner.clock(),
        )
    data = tuner_intent()
    data["fabric"]["lossless"] = dict(SPECTRUM_2)
    storage = next(c for c in data["service_classes"] if c["name"] == "storage")
    storage |= {"ecn": "standard", "lossless": {"pfc_priority": 3}}
    tuner.intents.replace(data, expected=0, actor=ACTOR, reason="lossless storage")
    proposal = tuner.service.run(ACTOR)
    # The history's storage port sent pause frames (2/s): mark earlier, Kmax 200 000 -> 150 000.
    (ramp,) = [c for c in proposal.changes if c["parameter"] == "dcqcn/storage"]
    assert list(ramp["proposed"]) == [3_750, 150_000, 1]
    assert ramp["evidence"]["inputs"]["kmax_ceiling_bytes"] == 916_543
    assert ramp["evidence"]["inputs"]["pfc_pauses_sent_per_s"] == pytest.approx(2.0)


def test_the_ramp_rule_judges_its_last_approved_step_from_the_stored_proposal(
    tuner: Tuner,
) -> None:
    # Storage's Kmax 22 000 B sits at its floor (25 Gb/s marking port: 3.125e9 B/s x 40 us x
    # 0.17 = 21 250 B, inside the 10 % band): the history's pauses (2/s) raise Pmax 1 -> 2 %.
    # Approved, and a minimum interval later the same telemetry: pauses 2 -> 2/s, the raise
    # did not help, so the rule holds, reading the step from the approved proposal's record.
    data = tuner_intent()
    data["fabric"]["lossless"] = dict(SPECTRUM_2)
    storage = next(c for c in data["service_classes"] if c["name"] == "storage")
    storage |= {"ecn": "standard", "lossless": {"pfc_priority": 3, "kmax_bytes": 22_000}}
    tuner.intents.replace(data, expected=0, actor=ACTOR, reason="lossless storage")
    first = tuner.service.run(ACTOR)
    (raised,) = [c for c in first.changes if c["parameter"] == "dcqcn/storage"]
    assert list(raised["proposed"]) == [5_000, 22_000, 2]
    tuner.service.approve(first.id, ACTOR)
    tuner.clock.now = tuner.end + timedelta(seconds=900)
    second = tuner.service.run(ACTOR)
    assert not [c for c in second.changes if c["parameter"] == "dcqcn/storage"]
    (held,) = [c for c in second.held if c["parameter"] == "dcqcn/storage"]
    assert "raising Pmax did not help, no further raise (Pmax stays 2 %)" in held["held"]
    inputs = held["evidence"]["inputs"]
    assert inputs["last_step"] == "(5000, 22000, 1) -> (5000, 22000, 2)"
    assert inputs["last_step_pauses_sent_per_s"] == pytest.approx(2.0)
