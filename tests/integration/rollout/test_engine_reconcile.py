"""Engine mode's reconcile passes with real processes: three ``python -m controller.worker``
processes on a real PostgreSQL share one pass over a fleet of virtual switches served over TLS,
each switch's drift corrected exactly once; one worker is killed with SIGKILL mid-pass and the
others reconcile its switches within the same pass (its jobs are queued again by the reaper)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.engine_fleet import CREDS, Fleet, running_fleet, start_worker, stop_worker
from controller.policy.loader import dump_intent
from controller.policy.models import Intent, Reconcile
from controller.reconcile.access import GnmiAccess
from controller.rollout.shard import RECONCILE_TASK
from controller.rollout.switches import RolloutRunner
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.southbound.credentials import environment_resolver
from controller.southbound.gnmi import SessionPool, TlsOptions
from controller.store.db import make_engine, make_sessions
from controller.store.rollout_store import SqlRolloutStore
from tests.integration.conftest import StepClock
from vsonic.db import CONFIG_DB, redis_key
from vsonic.gnmi_server import TlsFiles

from .conftest import POLICY, wait_for

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
    info = rollouts.start(RolloutPolicy(None, batch_size=SWITCHES), actor=OPERATOR)
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
    db_url: str, fleet: Fleet, tmp_path: Path
) -> None:
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
        victim = workers[1]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
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
