"""A reconcile pass is queued by one worker, whole, on a real PostgreSQL: workers whose passes
fall due at once queue one job per switch between them, and a switch still queued from an
earlier pass is not queued again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from controller.rollout.shard import RECONCILE_TASK, ReconcileDispatch
from controller.store.db import make_engine

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


def reconcile_jobs(db_url: str) -> list[tuple[str, str]]:
    engine = make_engine(db_url, pool_size=1)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT lock, status::text FROM procrastinate_jobs WHERE task_name = :task"
                    " ORDER BY id"
                ),
                {"task": RECONCILE_TASK},
            ).all()
    finally:
        engine.dispose()
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
    engine = make_engine(db_url, pool_size=1)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("UPDATE procrastinate_jobs SET status = 'doing' WHERE lock = :switch"),
                {"switch": SWITCHES[0]},
            )
    finally:
        engine.dispose()
    # A reported drift (spacing 0) always queues, but only what is not still waiting.
    assert second(SWITCHES[:5], 0.0) == 3
    jobs = reconcile_jobs(db_url)
    assert [lock for lock, _ in jobs] == [*SWITCHES[:3], SWITCHES[0], *SWITCHES[3:5]]
    assert [status for _, status in jobs].count("todo") == 5
