"""Engine mode's reconcile with real processes on a real PostgreSQL and a fleet of virtual
switches served over TLS. Three ``python -m controller.worker`` processes share one pass, each
switch's drift corrected exactly once; one worker is killed with SIGKILL mid-pass and the others
reconcile its switches within the same pass (its jobs are queued again by the reaper). Two
workers split the drift watch (one ON_CHANGE stream per switch in all), each reported drift is
reconciled as a job, and when one worker dies the other takes over its switches' streams."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.engine_fleet import CREDS, Fleet, running_fleet, start_worker, stop_worker
from controller.intent.loader import dump_intent
from controller.intent.models import Intent, Reconcile
from controller.reconcile.access import GnmiAccess
from controller.reconcile.shard import owner
from controller.rollout.engine import RECONCILE_TASK
from controller.rollout.switches import RolloutRunner
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.southbound.credentials import environment_resolver
from controller.southbound.gnmi import SessionPool, TlsOptions
from controller.store.db import make_engine, make_sessions
from controller.store.rollout_store import SqlRolloutStore
from tests.integration.conftest import StepClock
from vsonic.changes import MemoryFeed
from vsonic.db import CONFIG_DB, redis_key
from vsonic.gnmi_server import TlsFiles

from .conftest import POLICY, kill_mid_job, wait_for

OPERATOR = Actor(name="test-operator", request_id="test")
SWITCHES = 60
WORKERS = 3
MAX_PARALLEL = 2  # jobs at once per worker: at most this many in flight when one dies
SET_DELAY_S = 0.25  # each Set takes a while, so the kill lands with corrections in flight
WAIT_S = 120.0  # an upper bound for a wait on a loaded machine, never a pass/fail measure
DRIFTED = "999"  # the value written behind sluice's back


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[Fleet]:
    with running_fleet(SWITCHES, switch_tls, SET_DELAY_S) as running:
        yield running


def one_pass_only(intent: Intent) -> Intent:
    """A reconcile interval far beyond the test: the pass each worker finds due when it
    starts is the only one, so every run recorded belongs to it."""
    fabric = intent.fabric.model_copy(
        update={"reconcile": Reconcile(interval_s=3600.0, jitter_pct=0.0)}
    )
    return intent.model_copy(update={"fabric": fabric})


def roll_out_in_process(db_url: str, fleet: Fleet, intent: Intent) -> None:
    """Every fleet switch verified at version 1, by one in-process runner (single mode)."""
    engine = make_engine(db_url, pool_size=4)
    sessions = make_sessions(engine)
    clock = StepClock()
    intents = IntentService(sessions, clock=clock)
    intents.replace(dump_intent(intent), expected=intents.head(), actor=OPERATOR, reason="fleet")
    rollouts = RolloutService(sessions, clock=clock)
    first = RolloutPolicy(None, batch_size=len(fleet.names), allow_port_flaps=True)
    info = rollouts.start(first, actor=OPERATOR)
    pool = SessionPool(policy=POLICY, max_in_flight=32, sleep=time.sleep)
    access = GnmiAccess(
        pool,
        environment_resolver({"SLUICE_GNMI_PASSWORD": CREDS.password}),
        username=CREDS.username,
        tls=TlsOptions(root_cert=fleet.tls.cert),
    )
    runner = RolloutRunner(SqlRolloutStore(sessions, clock=clock), access, clock, max_parallel=32)
    try:
        while rollouts.get(info.id).state not in {"completed", "failed", "aborted"}:
            assert runner.run_once() > 0
        assert rollouts.get(info.id).state == "completed"
    finally:
        pool.close()
        engine.dispose()


def drift(fleet: Fleet, name: str) -> tuple[str, str, str]:
    """Change one sluice-owned SCHEDULER weight on the switch straight in its CONFIG_DB
    (not through gNMI: as an operator's redis-cli would); the entry, field and wanted value."""
    store = fleet.targets.resolve(name).store
    entries = store.read_prefixed(CONFIG_DB, redis_key(CONFIG_DB, "SCHEDULER", ""))
    rkey, fields = next((k, f) for k, f in sorted(entries.items()) if "weight" in f)
    assert fields["weight"] != DRIFTED
    store.write_atomically(CONFIG_DB, {rkey: {**fields, "weight": DRIFTED}})
    return rkey, "weight", fields["weight"]


def test_three_workers_share_a_reconcile_pass_and_survive_one_killed(
    db_url: str, fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pass alone: the drift watch is the next test's subject.
    monkeypatch.setenv("SLUICE_WORKER_WATCH_DRIFT", "false")
    names = fleet.names
    roll_out_in_process(db_url, fleet, one_pass_only(fleet.intent()))
    wanted = {name: drift(fleet, name) for name in names}
    sets_before = dict(fleet.counter.sets)
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    engine = make_engine(db_url, pool_size=2)

    def runs_recorded() -> int:
        with engine.connect() as connection:
            found: int = connection.execute(
                text("SELECT count(DISTINCT switch_name) FROM reconcile_runs")
            ).scalar_one()
        return found

    with ExitStack() as stack:
        workers = [start_worker(db_url, fleet, log, max_parallel=MAX_PARALLEL) for log in logs]
        for worker in workers:
            stack.callback(stop_worker, worker)
        wait_for(
            "each worker to correct a switch",
            lambda: all(": corrected" in log.read_text() for log in logs),
            within_s=WAIT_S,
        )
        assert runs_recorded() < SWITCHES * 2 // 3, "killed too late to test a takeover"
        kill_mid_job(workers[1], logs[1], RECONCILE_TASK, within_s=WAIT_S)
        wait_for("every switch reconciled", lambda: runs_recorded() == SWITCHES, within_s=WAIT_S)
        with engine.connect() as connection:
            wait_for(
                "no reconcile job left queued or running",
                lambda: (
                    not connection.execute(
                        text(
                            "SELECT count(*) FROM procrastinate_jobs WHERE task_name = :task"
                            " AND status::text IN ('todo', 'doing')"
                        ),
                        {"task": RECONCILE_TASK},
                    ).scalar_one()
                ),
                within_s=WAIT_S,
            )
            connection.rollback()

    # Every switch is back on its desired value.
    for name, (rkey, field, value) in wanted.items():
        stored = fleet.targets.resolve(name).store.read_hash(CONFIG_DB, rkey)
        assert stored is not None, name
        assert stored[field] == value, name
    # Each drift was written back by exactly one Set: no two workers ever corrected one
    # switch, and the killed worker's switches were not corrected twice.
    corrections = {name: fleet.counter.sets[name] - sets_before.get(name, 0) for name in names}
    assert corrections == dict.fromkeys(names, 1)
    with engine.connect() as connection:
        runs = connection.execute(
            text("SELECT switch_name, status FROM reconcile_runs ORDER BY id")
        ).all()
        jobs = connection.execute(
            text("SELECT status::text, attempts FROM procrastinate_jobs WHERE task_name = :task"),
            {"task": RECONCILE_TASK},
        ).all()
    engine.dispose()
    # One pass: one job per switch, queued by one worker (the others found it queued), each
    # finished; a job of the killed worker was queued again and finished elsewhere.
    assert len(jobs) == SWITCHES, jobs
    assert {status for status, _ in jobs} == {"succeeded"}, jobs
    # procrastinate counts a finished run as one attempt; a reaped job put back is two.
    requeued = sum(1 for _, attempts in jobs if attempts > 1)
    assert 1 <= requeued <= MAX_PARALLEL, jobs
    # A switch is corrected once. Only a switch in flight on the killed worker has another
    # run: the retried job found it converged (the killed one's Set had landed).
    corrected = [name for name, status in runs if status == "corrected"]
    assert len(corrected) == len(set(corrected)), corrected
    others = [(name, status) for name, status in runs if status != "corrected"]
    assert {status for _, status in others} <= {"converged"}, others
    assert len(set(names) - set(corrected)) <= MAX_PARALLEL
    assert len(others) <= MAX_PARALLEL, others
    # The pass was shared: the survivors corrected what the killed worker did not.
    counts = [log.read_text().count(": corrected") for log in logs]
    assert all(count > 0 for count in counts), counts
    print(f"corrections logged per worker: {counts}; jobs queued again: {requeued}")


WATCHED = 16
SHARE_LINE = re.compile(r"this worker \((\d+)\) watches (\d+) of (\d+) switches \((\d+) live")


@pytest.fixture
def watch_fleet(switch_tls: TlsFiles) -> Iterator[Fleet]:
    with running_fleet(WATCHED, switch_tls, 0.0) as running:
        yield running


def last_share(log: Path) -> tuple[int, int, int] | None:
    """(worker id, switches watched, live workers) from a worker's last share line."""
    found = SHARE_LINE.findall(log.read_text())
    if not found:
        return None
    me, mine, _every, live = found[-1]
    return int(me), int(mine), int(live)


def streams(fleet: Fleet) -> dict[str, int]:
    """How many change listeners each switch's store has: one per ON_CHANGE stream open on
    it (vsonic's in-memory feed, ``vsonic/changes.py``)."""
    return {
        name: len(fleet.targets.resolve(name).store.feed(MemoryFeed)._listeners)  # type: ignore[attr-defined]
        for name in fleet.names
    }


def test_two_workers_split_the_drift_watch_and_one_takes_over_when_the_other_dies(
    db_url: str, watch_fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet, names = watch_fleet, watch_fleet.names
    roll_out_in_process(db_url, fleet, one_pass_only(fleet.intent()))
    monkeypatch.setenv("SLUICE_WORKER_WATCH_DRIFT", "true")
    monkeypatch.setenv("SLUICE_WORKER_AUDIT_S", "86400")  # the first pass is the only one
    logs = [tmp_path / f"watcher{i}.log" for i in range(2)]
    engine = make_engine(db_url, pool_size=2)

    def count(query: str, **params: object) -> int:
        with engine.connect() as connection:
            found: int = connection.execute(text(query), params).scalar_one()
        return found

    def split(live: int) -> bool:
        shares = [last_share(log) for log in logs[2 - live :]]
        return (
            all(s is not None and s[2] == live for s in shares)
            and sum(s[1] for s in shares if s is not None) == WATCHED
            and streams(fleet) == dict.fromkeys(names, 1)
        )

    def corrected(name: str) -> int:
        return count(
            "SELECT count(*) FROM reconcile_runs WHERE switch_name = :name"
            " AND status = 'corrected'",
            name=name,
        )

    def drift_corrected(name: str) -> None:
        rkey, field, value = drift(fleet, name)
        wait_for(f"{name}'s drift corrected", lambda: corrected(name) == 1, within_s=WAIT_S)
        stored = fleet.targets.resolve(name).store.read_hash(CONFIG_DB, rkey)
        assert stored is not None
        assert stored[field] == value

    with ExitStack() as stack:
        workers = [start_worker(db_url, fleet, log, max_parallel=2) for log in logs]
        for worker in workers:
            stack.callback(stop_worker, worker)
        # The first pass (queued by one of them) finds every switch converged.
        wait_for(
            "the first pass",
            lambda: count("SELECT count(*) FROM reconcile_runs") == WATCHED,
            within_s=WAIT_S,
        )
        # One stream per switch in all, the switches split between the two.
        wait_for("the watch split in two", lambda: split(2), within_s=WAIT_S)
        ids = [share[0] for share in (last_share(log) for log in logs) if share is not None]
        owners = {name: owner(name, ids) for name in names}
        assert set(owners.values()) == set(ids)
        # A drift on a switch either worker watches is reconciled as a job.
        for member in ids:
            drift_corrected(next(n for n in names if owners[n] == member))
        victim = workers[0]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        # Once its heartbeat is stale the survivor watches every switch, one stream each.
        wait_for("the survivor to watch everything", lambda: split(1), within_s=WAIT_S)
        orphan = next(n for n in reversed(names) if owners[n] == ids[0])
        drift_corrected(orphan)
    jobs = count(
        "SELECT count(*) FROM procrastinate_jobs WHERE task_name = :task", task=RECONCILE_TASK
    )
    engine.dispose()
    # The first pass's jobs, one per reported drift (three), and one for each switch the
    # survivor gained, once its new stream synced (what changed while unwatched is unknown).
    watched_by_victim = sum(1 for member in owners.values() if member == ids[0])
    assert jobs >= WATCHED + 3 + watched_by_victim
    print(f"reconcile jobs: {jobs}; the killed worker watched {watched_by_victim} of {WATCHED}")
