"""Engine mode with real processes: three ``python -m controller.worker`` processes share one
rollout of a fleet of virtual switches through procrastinate on a real PostgreSQL; one is
killed with SIGKILL mid-rollout; the others take its switches over and the rollout completes
with every switch written once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import text

from controller.policy.loader import dump_intent, load_intent_file
from controller.policy.models import GnmiEndpoint, Intent
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.store.db import make_engine, make_sessions
from tests.integration.conftest import StepClock
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports
from vsonic.setops import SetOp
from vsonic.switch import Targets

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "intent.yaml"
CREDS = Credentials("admin", "engine-workers-password")
OPERATOR = Actor(name="test-operator", request_id="test")
SWITCHES = 300
WORKERS = 3
SET_DELAY_S = 0.02  # each Set takes a little while, so a kill lands with switches in flight
WAIT_S = 180.0  # an upper bound for a wait on a loaded machine, never a pass/fail measure


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


class SetCounter:
    """Counts the Sets each fleet switch applies (the vsonic server runs in this process)."""

    def __init__(self) -> None:
        self.sets: Counter[str] = Counter()
        self._lock = threading.Lock()

    def wrap(self, name: str, apply: Callable[[list[SetOp]], None]) -> Callable[..., None]:
        def counted(ops: list[SetOp]) -> None:
            time.sleep(SET_DELAY_S)
            apply(ops)
            with self._lock:
                self.sets[name] += 1

        return counted


def fleet_intent(port: int, names: list[str]) -> Intent:
    intent = load_intent_file(EXAMPLE)
    spine = next(s for s in intent.switches if s.role.value == "spine")
    switches = tuple(
        spine.model_copy(
            update={
                "name": name,
                "gnmi": GnmiEndpoint(address="127.0.0.1", port=port, target=name),
            }
        )
        for name in names
    )
    return intent.model_copy(update={"switches": switches})


def start_worker(db_url: str, ca: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "SLUICE_GNMI_PASSWORD": CREDS.password,
        "SLUICE_GNMI_USERNAME": CREDS.username,
        "SLUICE_GNMI_TLS_CA": str(ca),
        "SLUICE_GNMI_DEADLINE_S": "10",
        "SLUICE_WORKER_POLL_S": "0.1",
        "SLUICE_WORKER_MAX_PARALLEL": "4",
        "SLUICE_WORKER_ENGINE": "procrastinate",
        "SLUICE_WORKER_HEARTBEAT_S": "0.5",
        "SLUICE_WORKER_STALLED_AFTER_S": "2",
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "controller.worker"], env=env, stdout=out, stderr=out
        )


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[tuple[int, SetCounter, Targets]]:
    names = [f"fleet-{i:04d}" for i in range(SWITCHES)]
    targets = fleet_targets(names, default_ports(2, speed_gbps=100))
    counter = SetCounter()
    for name in names:
        switch = targets.resolve(name)
        switch.apply = counter.wrap(name, switch.apply)  # type: ignore[method-assign]
    running = start_server("127.0.0.1:0", GnmiService(targets, Clock(), CREDS), switch_tls)
    try:
        yield running.port, counter, targets
    finally:
        running.stop(grace_s=0.5)


def test_three_workers_share_a_rollout_and_survive_one_killed(
    db_url: str,
    switch_tls: TlsFiles,
    fleet: tuple[int, SetCounter, Targets],
    tmp_path: Path,
) -> None:
    port, counter, targets = fleet
    names = targets.names()
    engine = make_engine(db_url, pool_size=4)
    sessions = make_sessions(engine)
    clock = StepClock()
    intents = IntentService(sessions, clock=clock)
    intents.replace(
        dump_intent(fleet_intent(port, names)),
        expected=intents.head(),
        actor=OPERATOR,
        reason="fleet",
    )
    rollouts = RolloutService(sessions, clock=clock)
    info = rollouts.start(
        RolloutPolicy(None, canary=(names[0],), batch_size=100, failure_budget=0), actor=OPERATOR
    )
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]

    def results() -> Counter[str]:
        return Counter(r.status for r in rollouts.get(info.id).results)

    with ExitStack() as stack:
        workers = [start_worker(db_url, switch_tls.cert, log) for log in logs]
        for worker in workers:
            stack.callback(_reap, worker)
        # Every worker has converged at least one switch: the work is shared.
        wait_for(
            "each worker to converge a switch",
            lambda: all("applied_verified" in log.read_text() for log in logs),
        )
        assert results()["pending"] > SWITCHES // 3, "killed too late to test a takeover"
        victim = workers[1]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_at = logs[1].read_text().count("applied_verified")
        wait_for("completion", lambda: rollouts.get(info.id).state == "completed")

    final = rollouts.get(info.id)
    # One result per switch, every one verified: the rollout completed with nothing lost.
    assert sorted(r.switch for r in final.results) == sorted(names)
    assert {r.status for r in final.results} == {"applied_verified"}
    # Every switch was written, and no entry of any switch was written twice: two workers
    # never converged one switch, and the switches in flight on the killed worker were
    # finished by another without repeating what had landed (vsonic counts every path a
    # Set writes, ``Switch.applied``).
    assert set(counter.sets) == set(names)
    written_twice = {
        name: [path for path, n in targets.resolve(name).applied.items() if n > 1] for name in names
    }
    assert {name: paths for name, paths in written_twice.items() if paths} == {}
    # A fresh switch takes the same number of Sets as the canary, which one worker converged
    # before any other was busy: no switch took extra ones.
    assert set(counter.sets.values()) == {counter.sets[names[0]]}
    # The killed worker did real work before it died, and the other two finished the rest.
    assert killed_at > 0
    survivors = sum(logs[i].read_text().count("applied_verified") for i in (0, 2))
    assert survivors + killed_at >= SWITCHES
    with engine.connect() as connection:
        jobs: dict[str, int] = dict(
            connection.execute(
                text("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status")
            ).all()
        )
    engine.dispose()
    # The killed worker's jobs in flight were found by the survivors' reapers (no heartbeat)
    # and failed, which freed their switch locks; their switches were queued again.
    assert jobs.get("failed", 0) >= 1, jobs
    assert set(jobs) <= {"succeeded", "failed"}, jobs  # nothing left queued or running
    print(f"jobs by status: {jobs}; killed worker had converged {killed_at}")


def _reap(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
