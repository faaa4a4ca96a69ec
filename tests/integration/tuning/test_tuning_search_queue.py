"""A tuning pass with ``fabric.tuning.search: twin`` is queued by the API and run by the worker
outside the switch work lock: real PostgreSQL (migrated), the real app and the real worker
thread (``tests/support/worker.py``), summaries built by hand, and a fake twin
(``HeldTwin``) that holds the search mid-run until the test lets it go, so what happens
meanwhile is seen without minutes of netsim. (The real twin behind the same pass is
``test_tuning_search.py``'s.)"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from api.main import create_app
from controller.intent.models import Intent
from controller.services.common import Actor, utc_now
from controller.services.intents import IntentService
from controller.services.tokens import AccessRole
from controller.services.tuning import TuningService
from controller.settings import GnmiSettings, Settings, WorkerSettings
from controller.store.db import make_engine, make_sessions
from controller.store.locks import SWITCH_WORK_LOCK_KEY
from controller.tuning.counterfactual import TwinReading, TwinUnavailable
from controller.tuning.search import Traffic
from controller.tuning.summary import TelemetrySummary
from controller.worker import TunerIO
from tests.integration.conftest import issue_token, put_intent
from tests.integration.tuning.test_tuning_search import intent_data, unreproducible
from tests.support.worker import running_worker

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")
# How long a test waits for the worker or the fake twin before it fails (not a threshold:
# every wait ends as soon as what it waits for happens).
WAIT_S = 60.0
FAKE_TWIN_REASON = "fake twin: let go by the test"


class HeldTwin:
    """A fake twin (nothing real can be held mid-run on purpose): the first run calls
    ``meanwhile``, then signals ``entered`` and waits for ``release``; every run then reports
    the twin unavailable, so the pass records the search's reason and proposes nothing."""

    def __init__(self, meanwhile: Callable[[], None] = lambda: None) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.meanwhile = meanwhile
        self.runs = 0

    def __call__(self, _intent: Intent, _traffic: Traffic) -> TwinReading:
        self.runs += 1
        if self.runs == 1:
            self.meanwhile()
            self.entered.set()
            if not self.release.wait(WAIT_S):
                raise TwinUnavailable("fake twin: never let go")
        raise TwinUnavailable(FAKE_TWIN_REASON)


def read_unreproducible(_at: datetime, _window_s: float) -> TelemetrySummary:
    """A window the search reads: traffic for the twin, so it runs (held) at once."""
    return unreproducible()


def waited(event: threading.Event, what: str) -> None:
    assert event.wait(WAIT_S), f"{what} did not happen within {WAIT_S:.0f} s"


def proposal_state(db_url: str, proposal_id: int) -> str:
    engine = make_engine(db_url, pool_size=1)
    try:
        with engine.connect() as connection:
            state = connection.execute(
                text("SELECT state FROM tuning_proposals WHERE id = :id"), {"id": proposal_id}
            ).scalar_one()
            return str(state)
    finally:
        engine.dispose()


def settled(read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``read`` again until the pass is neither queued nor running."""
    done = threading.Event()
    for _ in range(int(WAIT_S / 0.05)):
        doc = read()
        if doc["state"] not in ("queued", "running"):
            return doc
        done.wait(0.05)
    raise AssertionError(f"the searching pass did not end within {WAIT_S:.0f} s")


@pytest.fixture
def worker_side(db_url: str) -> Iterator[Callable[[HeldTwin], TuningService]]:
    """A worker's tuning service over ``db_url`` with a given twin, the hand-built window."""
    engine = make_engine(db_url, pool_size=4)
    sessions = make_sessions(engine)

    def make(twin: HeldTwin) -> TuningService:
        intents = IntentService(sessions, clock=utc_now)
        return TuningService(sessions, intents, read_unreproducible, clock=utc_now, simulate=twin)

    try:
        yield make
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Stored:
    engine: Engine
    intents: IntentService


@pytest.fixture
def stored(db_url: str) -> Iterator[Stored]:
    """An engine of its own over ``db_url``, whose intents hold the example with the twin
    search as version 1."""
    engine = make_engine(db_url, pool_size=2)
    intents = IntentService(make_sessions(engine), clock=utc_now)
    try:
        intents.replace(intent_data(), expected=0, actor=ACTOR, reason="search in the twin")
        yield Stored(engine, intents)
    finally:
        engine.dispose()


def test_the_api_answers_before_the_search_and_one_worker_runs_it(
    db_url: str, worker_side: Callable[[HeldTwin], TuningService]
) -> None:
    operator = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.OPERATOR)}"}
    admin = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.ADMIN)}"}
    with TestClient(create_app(Settings.for_database(db_url))) as client:
        assert put_intent(client, admin, intent_data(), 0).status_code in (200, 201)
        made = client.post("/api/v1/tuning/proposals", headers=operator)
        # Answered with no worker running: the API records the pass, it searches nothing.
        assert made.status_code == 202, made.text
        queued = made.json()
        assert queued["state"] == "queued"
        assert made.headers["Location"] == f"/api/v1/tuning/proposals/{queued['id']}"

        def get() -> dict[str, Any]:
            answer = client.get(made.headers["Location"], headers=operator)
            assert answer.status_code == 200, answer.text
            body: dict[str, Any] = answer.json()
            return body

        twin = HeldTwin()
        # A second worker asks while the first is searching: the pass is not run twice.
        second: list[object] = []
        twin.meanwhile = lambda: second.append(worker_side(HeldTwin()).run_queued())
        results: list[object] = []
        first = threading.Thread(target=lambda: results.append(worker_side(twin).run_queued()))
        first.start()
        try:
            waited(twin.entered, "the worker's search")
            running = get()
            assert running["state"] == "running"
            assert running["started_at"] is not None
            assert second == [None]
            again = client.post("/api/v1/tuning/proposals", headers=operator)
            assert again.status_code == 409, again.text
            assert again.headers["content-type"].startswith("application/problem+json")
            assert f"tuning proposal {queued['id']} is running" in again.json()["detail"]
        finally:
            twin.release.set()
            first.join(WAIT_S)
        done = get()
        assert done["state"] == "no_change"
        assert done["base_version"] == 1
        assert f"the twin could not run the current intent: {FAKE_TWIN_REASON}]" in done["reason"]
        assert len(results) == 1


def test_a_pass_whose_head_moved_during_the_search_proposes_nothing(
    stored: Stored, worker_side: Callable[[HeldTwin], TuningService]
) -> None:
    intents = stored.intents
    moved = intent_data()
    moved["fabric"]["tuning"]["search_flows"] = 300

    def operator_writes() -> None:
        intents.replace(moved, expected=1, actor=ACTOR, reason="an operator, meanwhile")

    twin = HeldTwin(operator_writes)
    twin.release.set()
    tuning = worker_side(twin)
    queued = tuning.request(ACTOR)
    assert queued.state == "queued"
    record = tuning.run_queued()
    assert record is not None
    assert record.id == queued.id
    assert record.state == "stale"
    assert record.base_version == 1
    assert record.reason.startswith(
        "tuner: the intent moved from version 1 to 2 during the search: nothing proposed"
    )
    assert (record.changes, record.diff, record.plans) == ([], [], [])
    assert intents.head() == 2
    assert tuning.run_queued() is None  # nothing left to run


def test_a_searching_pass_in_the_worker_holds_no_switch_work_lock(
    db_url: str, stored: Stored
) -> None:
    settings = Settings.for_database(
        db_url,
        gnmi=GnmiSettings(deadline_s=1.0),
        worker=WorkerSettings(poll_s=0.05, watch_drift=False),
    )
    engine, intents = stored.engine, stored.intents
    twin = HeldTwin()
    with running_worker(settings, tuner_io=TunerIO(read_unreproducible, twin)):
        try:
            # The worker's own pass (its window is due): queued inside the lock, searched
            # outside it.
            waited(twin.entered, "the worker's tuning pass")
            assert proposal_state(db_url, 1) == "running"
            # What a rollout or reconcile step of another worker takes first: free.
            with engine.connect() as connection:
                took = connection.execute(
                    text("SELECT pg_try_advisory_lock(:key)"), {"key": SWITCH_WORK_LOCK_KEY}
                ).scalar_one()
                assert took is True
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": SWITCH_WORK_LOCK_KEY}
                )
        finally:
            twin.release.set()
        sessions = make_sessions(engine)
        tuning = TuningService(sessions, intents, read_unreproducible, clock=utc_now)
        done = settled(lambda: {"state": tuning.get(1).state})
    assert done["state"] == "no_change"
    assert f"the twin could not run the current intent: {FAKE_TWIN_REASON}]" in tuning.get(1).reason


def test_a_pass_left_running_by_a_stopped_worker_is_claimed_again_only_once_overdue(
    stored: Stored, worker_side: Callable[[HeldTwin], TuningService]
) -> None:
    engine = stored.engine
    twin = HeldTwin()
    twin.release.set()
    tuning = worker_side(twin)
    queued = tuning.request(ACTOR)
    window_s = tuning.settings().window_s
    # Default margin: 600 s past the window (the worker passes the twin's timeout + 60).
    for age_s, claimed in ((window_s + 590.0, False), (window_s + 610.0, True)):
        with engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE tuning_proposals SET state = 'running', started_at = "
                    "now() - make_interval(secs => :age) WHERE id = :id"
                ),
                {"age": age_s, "id": queued.id},
            )
        record = tuning.run_queued()
        assert (record is not None) is claimed, age_s
    assert tuning.get(queued.id).state == "no_change"
    assert twin.entered.is_set()
