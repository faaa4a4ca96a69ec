"""Engine mode with real processes: three ``python -m controller.worker`` processes share one
rollout of a fleet of virtual switches through procrastinate on a real PostgreSQL; one is
killed with SIGKILL mid-rollout; the others take its switches over and the rollout completes
with no switch written twice."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.engine_fleet import Fleet, running_fleet, start_worker, stop_worker
from controller.intent.loader import dump_intent
from controller.rollout.engine import TASK, EngineOptions, EngineWorker, JobDispatch
from controller.rollout.gates import Gate, GatePolicy
from controller.rollout.switches import RolloutRunner
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.store.db import make_engine, make_sessions
from controller.store.rollout_store import SqlRolloutStore
from tests.integration.conftest import StepClock
from tests.support.gate_collector import HandClock
from vsonic.gnmi_server import TlsFiles

from .conftest import Controller, kill_mid_job, wait_for

OPERATOR = Actor(name="test-operator", request_id="test")
SWITCHES = 1000
WORKERS = 3
MAX_PARALLEL = 4  # jobs at once per worker: at most this many in flight when one dies
SET_DELAY_S = 0.02  # each Set takes a little while, so a kill lands with switches in flight
WAIT_S = 180.0  # an upper bound for a wait on a loaded machine, never a pass/fail measure


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[Fleet]:
    with running_fleet(SWITCHES, switch_tls, SET_DELAY_S) as running:
        yield running


def test_three_workers_share_a_rollout_and_survive_one_killed(
    db_url: str, fleet: Fleet, tmp_path: Path
) -> None:
    names = fleet.names
    engine = make_engine(db_url, pool_size=4)
    sessions = make_sessions(engine)
    clock = StepClock()
    intents = IntentService(sessions, clock=clock)
    intents.replace(
        dump_intent(fleet.intent()), expected=intents.head(), actor=OPERATOR, reason="fleet"
    )
    rollouts = RolloutService(sessions, clock=clock)
    info = rollouts.start(
        RolloutPolicy(
            None, canary=(names[0],), batch_size=100, failure_budget=0, allow_port_flaps=True
        ),
        actor=OPERATOR,
    )
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]

    def pending() -> int:
        return sum(1 for r in rollouts.get(info.id).results if r.status == "pending")

    def completed() -> bool:
        # The rollout's state alone: polled every 50 ms, and a whole rollout (1,000 results)
        # read that often would take a core of this process from the fleet server in it.
        with engine.connect() as connection:
            state = connection.execute(
                text("SELECT state FROM rollouts WHERE id = :id"), {"id": info.id}
            ).scalar_one()
        return bool(state == "completed")

    with ExitStack() as stack:
        workers = [start_worker(db_url, fleet, log, max_parallel=MAX_PARALLEL) for log in logs]
        for worker in workers:
            stack.callback(stop_worker, worker)
        # Every worker has converged at least one switch: the work is shared.
        wait_for(
            "each worker to converge a switch",
            lambda: all("applied_verified" in log.read_text() for log in logs),
            within_s=WAIT_S,
        )
        assert pending() > SWITCHES // 3, "killed too late to test a takeover"
        kill_mid_job(workers[1], logs[1], TASK, within_s=WAIT_S)
        killed_at = logs[1].read_text().count("applied_verified")
        wait_for("completion", completed, within_s=WAIT_S)

    final = rollouts.get(info.id)
    # One result per switch, every one verified: the rollout completed with nothing lost.
    assert sorted(r.switch for r in final.results) == sorted(names)
    assert {r.status for r in final.results} == {"applied_verified"}
    # Every switch was written, and no entry of any switch was written twice: two workers
    # never converged one switch, and the switches in flight on the killed worker were
    # finished by another without repeating what had landed (vsonic counts every path a
    # Set writes, ``Switch.applied``).
    counter = fleet.counter
    assert set(counter.sets) == set(names)
    written_twice = {
        name: [path for path, n in fleet.targets.resolve(name).applied.items() if n > 1]
        for name in names
    }
    assert {name: paths for name, paths in written_twice.items() if paths} == {}
    # A fresh switch takes the same number of Sets as the canary, which one worker converged
    # before any other was busy: no switch took extra ones.
    assert set(counter.sets.values()) == {counter.sets[names[0]]}
    # The killed worker did real work before it died (its log may miss a last line: a
    # result is recorded before it is logged), and the other two finished the rest.
    assert killed_at > 0
    survivors = sum(logs[i].read_text().count("applied_verified") for i in (0, 2))
    assert survivors >= SWITCHES - killed_at - MAX_PARALLEL
    with engine.connect() as connection:
        # The switch jobs only: a worker also runs the periodic cleanup's jobs.
        jobs: dict[str, int] = dict(
            connection.execute(
                text(
                    "SELECT status::text, count(*) FROM procrastinate_jobs"
                    " WHERE task_name = :task GROUP BY status"
                ),
                {"task": TASK},
            ).all()
        )
    engine.dispose()
    # The killed worker's jobs in flight were found by the survivors' reapers (no heartbeat)
    # and failed, which freed their switch locks; their switches were queued again.
    assert jobs.get("failed", 0) >= 1, jobs
    assert set(jobs) <= {"succeeded", "failed"}, jobs  # nothing left queued or running
    # No switch queued again once its job had finished: a job per switch, plus one for each
    # reaped job's switch at most (the coordinator reads the live jobs before the rows).
    assert jobs["succeeded"] <= SWITCHES + jobs["failed"], jobs
    print(f"jobs by status: {jobs}; killed worker had converged {killed_at}")


class QueueStandIn:
    """Engine mode's job queue without procrastinate (the runner's side is the subject):
    records what each step queues, and queues a switch once, as ``queueing_lock`` does."""

    def __init__(self) -> None:
        self.queued: list[tuple[int, list[str]]] = []

    def live(self) -> frozenset[str]:
        return frozenset()

    def __call__(self, rollout_id: int, switches: Sequence[str], live: frozenset[str]) -> int:
        seen = {switch for _, batch in self.queued for switch in batch}
        fresh = [s for s in switches if s not in live and s not in seen]
        if fresh:
            self.queued.append((rollout_id, fresh))
        return len(fresh)


def test_engine_mode_queues_a_batch_and_a_job_converges_its_switch_once(
    controller: Controller,
) -> None:
    """The runner's two engine-mode halves without the queue: a step hands the batch's
    switches to ``dispatch`` instead of converging them; ``converge_one`` converges one
    switch, and a second run for the same switch (a duplicate job) writes nothing."""
    controller.store_intent(controller.fabric.intent)
    info = controller.rollouts.start(
        RolloutPolicy(
            None, canary=("leaf1",), batch_size=4, failure_budget=0, allow_port_flaps=True
        ),
        actor=OPERATOR,
    )
    dispatch = QueueStandIn()
    queued = dispatch.queued
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    runner = RolloutRunner(store, controller.access(), controller.clock, dispatch=dispatch)
    assert runner.run_once() == 1  # pending -> running
    assert runner.run_once() == 1  # the canary batch, queued
    assert queued == [(info.id, ["leaf1"])]
    assert controller.fabric.switches["leaf1"].sets.count == 0  # queued, not converged

    assert runner.converge_one(info.id, "leaf1") is True
    sets = controller.fabric.switches["leaf1"].sets.count
    assert sets > 0
    assert runner.converge_one(info.id, "leaf1") is False  # recorded: a duplicate does nothing
    assert controller.fabric.switches["leaf1"].sets.count == sets
    statuses = {r.switch: r.status for r in controller.rollouts.get(info.id).results}
    assert statuses["leaf1"] == "applied_verified"

    assert runner.run_once() == 1  # the next batch: the other three switches
    assert queued[-1] == (info.id, ["leaf2", "spine1", "spine2"])
    controller.rollouts.pause(info.id, actor=OPERATOR)
    # A paused rollout's jobs do nothing: only a running rollout's switches are converged.
    assert runner.converge_one(info.id, "leaf2") is False
    assert controller.fabric.switches["leaf2"].sets.count == 0


def test_finished_jobs_are_pruned_by_the_periodic_cleanup(db_url: str) -> None:
    """procrastinate's own cleanup as a periodic task, here every second with no retention:
    the switch jobs a worker finished are deleted. The job body is a stand-in recording its
    calls (the subject is the queue's bookkeeping, not converging a switch)."""
    converged: list[tuple[int, str]] = []

    def converge(rollout_id: int, switch: str) -> bool:
        converged.append((rollout_id, switch))
        return True

    engine = make_engine(db_url, pool_size=1)

    def switch_jobs() -> int:
        with engine.connect() as connection:
            found: int = connection.execute(
                text("SELECT count(*) FROM procrastinate_jobs WHERE task_name = :task"),
                {"task": TASK},
            ).scalar_one()
        return found

    dispatch = JobDispatch(db_url)
    dispatch.open()
    options = EngineOptions(
        concurrency=2, heartbeat_s=0.5, stalled_after_s=5, retention_h=0, prune_cron="* * * * * *"
    )
    worker = EngineWorker(db_url, converge, options)
    try:
        assert dispatch(7, ["sw1", "sw2"], dispatch.live()) == 2
        assert dispatch.live() == {"sw1", "sw2"}
        assert dispatch(7, ["sw1", "sw2"], dispatch.live()) == 0  # queued once
        assert switch_jobs() == 2
        worker.start()
        wait_for("both switch jobs to run", lambda: len(converged) == 2)
        wait_for("the finished switch jobs to be pruned", lambda: switch_jobs() == 0)
    finally:
        worker.stop()
        dispatch.close()
        engine.dispose()
    assert sorted(converged) == [(7, "sw1"), (7, "sw2")]


def test_engine_mode_gates_each_batch_baseline_jobs_then_soak(controller: Controller) -> None:
    """A gated rollout in engine mode: each batch's baseline is read before its jobs are
    queued, the soak starts once every job of the batch has finished, and the next batch is
    queued only after the soak's readings pass. The gates read a stand-in reader (a fixed
    value per expression, counted) in place of Prometheus: the subject is the runner's order,
    tests/integration/rollout/test_gates.py reads a real Prometheus."""
    controller.store_intent(controller.fabric.intent)
    reads: list[str] = []

    def read(expression: str) -> float | None:
        reads.append(expression)
        return 0.0

    gates = GatePolicy((Gate("fallback", 0.0, "absolute", builtin="agent_fallback"),), soak_s=30)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=gates, allow_port_flaps=True),
        actor=OPERATOR,
        gates=read,
    )
    dispatch = QueueStandIn()
    clock = HandClock()
    store = SqlRolloutStore(controller.sessions, clock=clock)
    runner = RolloutRunner(store, controller.access(), clock, gates=read, dispatch=dispatch)

    def readings() -> list[tuple[str, int, str]]:
        done = controller.rollouts.get(info.id).evaluations or []
        return [(e.stage, e.batch, e.verdict) for e in done if e.stage != "precheck"]

    assert runner.step(info.id)  # pending -> running
    for number, batch in enumerate((["leaf1", "leaf2"], ["spine1", "spine2"])):
        assert runner.step(info.id)  # the baseline, then the batch's jobs queued
        assert dispatch.queued[-1] == (info.id, batch)
        assert readings()[-1] == ("baseline", number, "pass")
        assert not runner.step(info.id)  # its jobs are still to run: nothing to do
        for switch in batch:
            assert runner.converge_one(info.id, switch)
        assert runner.step(info.id)  # every job done: the soak starts
        assert not runner.step(info.id)  # soaking on the runner's clock
        clock.advance(30.0)
        assert runner.step(info.id)  # soak over: the gates pass
        assert readings()[-1] == ("soak", number, "pass")
    assert runner.step(info.id)  # nothing pending: completed
    final = controller.rollouts.get(info.id)
    assert final.state == "completed"
    assert {r.status for r in final.results} == {"applied_verified"}
    assert readings() == [
        ("baseline", 0, "pass"),
        ("soak", 0, "pass"),
        ("baseline", 1, "pass"),
        ("soak", 1, "pass"),
    ]
    assert 'switch=~"spine1|spine2"' in reads[-1]  # the last soak read the last batch
