"""Reconcile jobs on a real PostgreSQL: a pass is queued by one worker, whole (workers whose
passes fall due at once queue one job per switch between them; a switch still queued from an
earlier pass is not queued again), and a dead worker's jobs run once however many reapers find
them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Connection, text

from controller.rollout.engine import RECONCILE_TASK, EngineOptions, EngineWorker, ReconcileDispatch
from controller.store.db import make_engine

from .conftest import wait_for

SWITCHES = [f"leaf{i}" for i in range(200)]
WORKERS = 4
SPACING_S = 60.0  # far longer than the test: every dispatch after the first finds it recent


@pytest.fixture
def dispatches(db_url: str) -> Iterator[list[ReconcileDispatch]]:
    opened = [ReconcileDispatch(db_url) for _ in range(WORKERS)]
    for dispatch in opened:
        dispatch.open()
    try:
        yield opened
    finally:
        for dispatch in opened:
            dispatch.close()


@contextmanager
def database(db_url: str) -> Iterator[Connection]:
    """One transaction on the test's database, committed at the end."""
    engine = make_engine(db_url, pool_size=1)
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        engine.dispose()


def reconcile_jobs(db_url: str) -> list[tuple[str, str]]:
    with database(db_url) as connection:
        rows = connection.execute(
            text(
                "SELECT lock, status::text FROM procrastinate_jobs WHERE task_name = :task"
                " ORDER BY id"
            ),
            {"task": RECONCILE_TASK},
        ).all()
    return [(lock, status) for lock, status in rows]


def test_workers_due_at_once_queue_one_pass_between_them(
    db_url: str, dispatches: list[ReconcileDispatch]
) -> None:
    start = threading.Barrier(WORKERS)
    queued: list[int] = []
    failures: list[BaseException] = []

    def due(dispatch: ReconcileDispatch) -> None:
        start.wait()
        try:
            queued.append(dispatch(SWITCHES, SPACING_S))
        except BaseException as error:  # collected: a thread's exception is otherwise lost
            failures.append(error)

    threads = [threading.Thread(target=due, args=(d,)) for d in dispatches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert sorted(queued) == [0] * (WORKERS - 1) + [len(SWITCHES)]
    assert sorted(lock for lock, _ in reconcile_jobs(db_url)) == sorted(SWITCHES)


def test_a_switch_still_queued_is_not_queued_again(
    db_url: str, dispatches: list[ReconcileDispatch]
) -> None:
    first, second = dispatches[:2]
    assert first(SWITCHES[:3], 0.0) == 3
    # A job that has started no longer holds its queueing lock: that switch is queued again.
    with database(db_url) as connection:
        connection.execute(
            text("UPDATE procrastinate_jobs SET status = 'doing' WHERE lock = :switch"),
            {"switch": SWITCHES[0]},
        )
    # A reported drift (spacing 0) always queues, but only what is not still waiting.
    assert second(SWITCHES[:5], 0.0) == 3
    jobs = reconcile_jobs(db_url)
    assert [lock for lock, _ in jobs] == [*SWITCHES[:3], SWITCHES[0], *SWITCHES[3:5]]
    assert [status for _, status in jobs].count("todo") == 5


def test_a_dead_workers_reconcile_jobs_run_once_whichever_reaper_finds_them(
    db_url: str, dispatches: list[ReconcileDispatch]
) -> None:
    """Two live workers' reapers find the same dead worker's jobs at once: each of its
    switches is reconciled exactly once, none left failed."""
    switches = SWITCHES[:12]
    orphaned = switches[:6]
    assert dispatches[0](switches, 0.0) == len(switches)
    with database(db_url) as connection:
        dead = connection.execute(
            text(
                "INSERT INTO procrastinate_workers (last_heartbeat)"
                " VALUES (now() - interval '1 hour') RETURNING id"
            )
        ).scalar_one()
        connection.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'doing', worker_id = :dead"
                " WHERE lock = ANY(:orphaned)"
            ),
            {"dead": dead, "orphaned": orphaned},
        )
    reconciled: list[str] = []
    guard = threading.Lock()

    def reconcile(switch: str) -> None:
        with guard:
            reconciled.append(switch)

    options = EngineOptions(concurrency=2, heartbeat_s=0.2, stalled_after_s=1.0)
    workers = [EngineWorker(db_url, lambda _r, _s: True, options, reconcile) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        wait_for(
            "every reconcile job finished",
            lambda: all(status in {"succeeded", "failed"} for _, status in reconcile_jobs(db_url)),
            within_s=60.0,
        )
    finally:
        for worker in workers:
            worker.stop()
    assert {status for _, status in reconcile_jobs(db_url)} == {"succeeded"}
    assert sorted(reconciled) == sorted(switches)
