"""An idle worker is woken when work is recorded (``controller/store/wakeups.py``, migration
``0019_wakeups``), against a real, migrated PostgreSQL: a request is taken up while the
worker's poll is an hour away."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import Engine

from controller.services.common import Actor, WorkerWait
from controller.services.reconcile import ReconcileService
from controller.settings import Settings, libpq_conninfo
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import reconcile
from controller.store.wakeups import WakeListener
from controller.worker import build_worker

WAIT_S = 60.0  # an upper bound for a loaded machine, not a measure: the poll is an hour
HOUR_S = 3600.0
T0 = datetime(2026, 11, 30, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


class Heard:
    """What a listener woke for, in order ("" when it began listening)."""

    def __init__(self) -> None:
        self.payloads: list[str] = []
        self._changed = threading.Condition()

    def __call__(self, payload: str) -> None:
        with self._changed:
            self.payloads.append(payload)
            self._changed.notify_all()

    def until(self, count: int) -> list[str]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.payloads) >= count, WAIT_S), (
                f"heard only {self.payloads}"
            )
            return list(self.payloads)


@pytest.fixture
def heard(db_url: str) -> Iterator[Heard]:
    heard = Heard()
    listener = WakeListener.for_conninfo(libpq_conninfo(db_url), heard)
    listener.start()
    try:
        heard.until(1)  # listening
        yield heard
    finally:
        listener.stop()


def _notify(db_url: str, sql: str) -> None:
    with psycopg.connect(libpq_conninfo(db_url), autocommit=True) as connection:
        connection.execute(sql)


def test_a_recorded_request_wakes_the_listener_with_its_table(engine: Engine, heard: Heard) -> None:
    with make_sessions(engine).begin() as session:
        reconcile.insert_request(session=session, requested_by="op", request_id="r1", at=T0)
    assert heard.until(2) == ["", "reconcile_requests"]


def test_an_uncommitted_write_or_another_channel_wakes_no_one(
    db_url: str, engine: Engine, heard: Heard
) -> None:
    with make_sessions(engine)() as session:
        reconcile.insert_request(session=session, requested_by="op", request_id="r1", at=T0)
        session.rollback()  # never committed: PostgreSQL sends nothing
    _notify(db_url, "NOTIFY some_other_channel, 'other'")
    # Notifications arrive in commit order: once this one is heard, the two above would have.
    _notify(db_url, "NOTIFY sluice_worker, 'control'")
    assert heard.until(2) == ["", "control"]


def test_a_listener_whose_database_is_away_says_so_once_and_listens_once_it_is_back(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[int] = []
    conninfo = libpq_conninfo(db_url)

    def connect() -> psycopg.Connection[tuple[object, ...]]:
        attempts.append(1)
        if len(attempts) <= 2:
            raise psycopg.OperationalError("connection refused (the test's)")
        return psycopg.connect(conninfo, autocommit=True)

    heard = Heard()
    listener = WakeListener(connect, heard, reconnect_s=0.01)
    with caplog.at_level(logging.INFO, logger="controller.store.wakeups"):
        listener.start()
        try:
            heard.until(1)
            _notify(db_url, "NOTIFY sluice_worker, 'after'")
            assert heard.until(2) == ["", "after"]
        finally:
            listener.stop()
    said = [r.getMessage() for r in caplog.records]
    assert len(attempts) == 3
    assert sum("not listening" in line for line in said) == 1, said
    assert sum("listening again" in line for line in said) == 1, said


def test_an_idle_worker_answers_a_request_made_while_its_poll_is_an_hour_away(
    db_url: str,
) -> None:
    settings = Settings.for_database(db_url)
    stop = threading.Event()
    with settings.gnmi.session_pool() as pool:
        worker, close = build_worker(settings, pool, environ=os.environ)
        thread = threading.Thread(target=worker.run, args=(stop, HOUR_S), daemon=True)
        thread.start()
        try:
            service = ReconcileService(
                make_sessions(make_engine(db_url)), clock=lambda: T0, wait=WorkerWait(WAIT_S)
            )
            # The first may be answered by the worker's first round; by the time it is, the
            # worker has gone idle (or is in the round its own write woke), with an hour to
            # wait: only a wake-up answers the second.
            for n in (1, 2):
                service.request_pass(actor=Actor(name="op", request_id=f"r{n}"))
        finally:
            stop.set()  # seen within a second, however long the poll
            thread.join(WAIT_S)
            close()
    assert not thread.is_alive()
