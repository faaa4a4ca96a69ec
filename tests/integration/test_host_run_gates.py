"""Health gates on a host apply: real PostgreSQL, real ansible-playbook (the harmless local
test play, tests/support/host_runs.py), a real Prometheus scraping a fake collector whose values
the test changes (tests/support/gate_collector.py). A gate that fails after a batch halts the
run (``halt``) or puts the batch's hosts back to the version each ran before (``rollback_batch``;
the play records the variables each host was given), the hosts not reached are not run, and
every reading is stored with the run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict
from controller.rollout.ansible import AnsibleBatches
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.hosts import HostRunRunner
from controller.services.common import Actor, WorkerWait
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.store.db import make_engine, make_sessions
from controller.store.host_run_store import SqlHostRunStore
from controller.telemetry.gate_reads import promql_reader
from controller.telemetry.promql import make_promql
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import StepClock
from tests.support.gate_collector import Exposition, fake_collector
from tests.support.host_runs import four_host_intent, local_config

ACTOR = Actor(name="op", request_id="r1")
DROP_GATE = Gate("drops", 50.0, "max_increase_pct", builtin="drops")
DROPS = GatePolicy((DROP_GATE,), soak_s=30.0, on_fail="halt")


class HandClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def settle(read: Reader, expression: str, expected: float) -> None:
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        if read(expression) == expected:
            return
        time.sleep(0.2)
    raise AssertionError(f"Prometheus never answered {expected} for {expression}")


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[Exposition, Reader]]:
    exposition = Exposition()
    exposition.set(drops={"leaf1": 10.0, "spine1": 10.0}, modes={"leaf1": "dynamic"})
    with fake_collector(exposition) as target:
        server = LocalPrometheus(tmp_path / "prometheus", targets=[target])
        server.start()
        promql = make_promql(server.url, 5.0)
        try:
            read = promql_reader(promql)
            settle(read, "sum(sluice_queue_dropped_packets_per_second)", 20.0)
            yield exposition, read
        finally:
            promql.close()
            server.stop()


@pytest.fixture
def sessions(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url, pool_size=2)
    try:
        yield make_sessions(engine)
    finally:
        engine.dispose()


def test_a_failed_gate_halts_a_host_apply_after_its_batch(
    sessions: sessionmaker[Session], tmp_path: Path, gated: tuple[Exposition, Reader]
) -> None:
    exposition, read = gated
    IntentService(sessions, clock=StepClock()).replace(
        four_host_intent(), expected=0, actor=ACTOR, reason="hosts"
    )
    service = HostRunService(sessions, clock=StepClock(), wait=WorkerWait())
    # Pre-check: drops of 20 are above an absolute ceiling of 5, so no start.
    strict = GatePolicy((Gate("drops", 5.0, builtin="drops"),))
    with pytest.raises(Conflict, match="pre-check"):
        service.start_apply(actor=ACTOR, batch_size=2, gates=strict, reader=read)

    run = service.start_apply(actor=ACTOR, batch_size=2, gates=DROPS, reader=read)
    store = SqlHostRunStore(sessions, clock=StepClock())
    clock = HandClock()
    runner = HostRunRunner(
        store, AnsibleBatches(local_config(tmp_path), store.intent), clock=clock, gates=read
    )
    assert runner.step(run.id)  # pending -> running
    assert runner.step(run.id)  # baseline, batch 1 (host1, host2), soak
    exposition.set(drops={"spine1": 40.0})  # 20 -> 50 packets/s: over 150 % of 20
    settle(read, 'sum(sluice_queue_dropped_packets_per_second{switch="spine1"})', 40.0)
    assert not runner.step(run.id)  # soaking
    clock.now += timedelta(seconds=30)
    assert runner.step(run.id)  # the drops gate fails: halted

    done = service.run(run.id)
    assert done.state == "halted"
    assert "batch 1 failed its health gates (halt): drops: value 50 > 30" in (done.message or "")
    assert {r.host: r.status for r in done.results} == {
        "host1": "ok",
        "host2": "ok",
        "host3": "not_run",
        "host4": "not_run",
    }
    readings = [(e.batch, e.stage, e.value, e.verdict) for e in done.evaluations or []]
    assert readings == [
        (-1, "precheck", 20.0, "pass"),
        (1, "baseline", 20.0, "pass"),
        (1, "soak", 50.0, "fail"),
    ]


def _given(record_dir: Path) -> dict[str, int]:
    """The ``tcp_ecn`` each host was last given (the play's record)."""
    return {
        path.stem: json.loads(path.read_text())["tcp_ecn"]
        for path in sorted(record_dir.glob("*.json"))
    }


def _with_tcp_ecn(value: int) -> dict[str, object]:
    intent = four_host_intent()
    intent["fabric"]["host_transport"] = {"tcp_ecn": value}
    return intent


def test_a_failed_gate_puts_the_batch_back_to_the_version_its_hosts_ran(
    sessions: sessionmaker[Session], tmp_path: Path, gated: tuple[Exposition, Reader]
) -> None:
    exposition, read = gated
    record = tmp_path / "given"
    record.mkdir()
    intents = IntentService(sessions, clock=StepClock())
    intents.replace(_with_tcp_ecn(1), expected=0, actor=ACTOR, reason="v1")
    service = HostRunService(sessions, clock=StepClock(), wait=WorkerWait())
    store = SqlHostRunStore(sessions, clock=StepClock())
    clock = HandClock()
    batches = AnsibleBatches(local_config(tmp_path, record_dir=str(record)), store.intent)
    runner = HostRunRunner(store, batches, clock=clock, gates=read)
    first = service.start_apply(actor=ACTOR)  # version 1 everywhere, no gates
    while runner.step(first.id):
        pass
    assert service.run(first.id).state == "completed"
    assert _given(record) == {"host1": 1, "host2": 1, "host3": 1, "host4": 1}

    intents.replace(_with_tcp_ecn(2), expected=1, actor=ACTOR, reason="v2")
    policy = GatePolicy((DROP_GATE,), soak_s=30.0, on_fail="rollback_batch")
    run = service.start_apply(actor=ACTOR, batch_size=2, gates=policy, reader=read)
    assert runner.step(run.id)  # pending -> running
    assert runner.step(run.id)  # baseline, batch 1 (host1, host2) to version 2, soak
    assert _given(record) == {"host1": 2, "host2": 2, "host3": 1, "host4": 1}
    exposition.set(drops={"spine1": 40.0})
    settle(read, 'sum(sluice_queue_dropped_packets_per_second{switch="spine1"})', 40.0)
    clock.now += timedelta(seconds=30)
    assert runner.step(run.id)  # the gate fails: rolling_back over host1 and host2
    assert service.run(run.id).state == "rolling_back"
    assert runner.step(run.id)  # rollback batch 1: host1 and host2 given version 1 again
    assert runner.step(run.id)  # nothing left: rolled_back
    assert not runner.step(run.id)

    done = service.run(run.id)
    assert done.state == "rolled_back"
    assert done.message is not None
    assert done.message.startswith("batch 1 failed its health gates (rollback_batch): drops")
    assert _given(record) == {"host1": 1, "host2": 1, "host3": 1, "host4": 1}
    by_phase = {(r.phase, r.host): (r.status, r.from_version) for r in done.results}
    assert by_phase == {
        ("apply", "host1"): ("changed", 1),
        ("apply", "host2"): ("changed", 1),
        ("apply", "host3"): ("not_run", 1),
        ("apply", "host4"): ("not_run", 1),
        ("rollback", "host1"): ("changed", 1),
        ("rollback", "host2"): ("changed", 1),
    }
    assert done.counts["rollback_changed"] == 2
    stages = [(e.batch, e.stage, e.verdict) for e in done.evaluations or []]
    assert stages == [(-1, "precheck", "pass"), (1, "baseline", "pass"), (1, "soak", "fail")]

    # The next apply starts from what the hosts run now: version 1 on every host.
    exposition.set(drops={"spine1": 10.0})
    settle(read, "sum(sluice_queue_dropped_packets_per_second)", 20.0)
    again = service.start_apply(actor=ACTOR, batch_size=4, gates=policy, reader=read)
    assert runner.step(again.id)
    assert runner.step(again.id)  # the one batch, soak
    clock.now += timedelta(seconds=30)
    assert runner.step(again.id)  # passes
    assert runner.step(again.id)  # completed
    passed = service.run(again.id)
    assert passed.state == "completed"
    assert {r.from_version for r in passed.results} == {1}
    assert _given(record) == {"host1": 2, "host2": 2, "host3": 2, "host4": 2}


def test_a_rollback_of_hosts_that_ran_no_earlier_version_names_them(
    sessions: sessionmaker[Session], tmp_path: Path, gated: tuple[Exposition, Reader]
) -> None:
    exposition, read = gated
    IntentService(sessions, clock=StepClock()).replace(
        four_host_intent(), expected=0, actor=ACTOR, reason="hosts"
    )
    service = HostRunService(sessions, clock=StepClock(), wait=WorkerWait())
    store = SqlHostRunStore(sessions, clock=StepClock())
    clock = HandClock()
    batches = AnsibleBatches(local_config(tmp_path), store.intent)
    runner = HostRunRunner(store, batches, clock=clock, gates=read)
    policy = GatePolicy((DROP_GATE,), soak_s=30.0, on_fail="rollback_all")
    run = service.start_apply(actor=ACTOR, batch_size=2, gates=policy, reader=read)
    assert runner.step(run.id)
    assert runner.step(run.id)  # batch 1
    clock.now += timedelta(seconds=30)
    assert runner.step(run.id)  # passes
    assert runner.step(run.id)  # batch 2
    exposition.set(drops={"leaf1": 40.0})
    settle(read, 'sum(sluice_queue_dropped_packets_per_second{switch="leaf1"})', 40.0)
    clock.now += timedelta(seconds=30)
    assert runner.step(run.id)  # fails: every host reached is rolled back
    while runner.step(run.id):
        pass
    done = service.run(run.id)
    assert done.state == "rolled_back"
    rollback = [(r.host, r.batch, r.status) for r in done.results if r.phase == "rollback"]
    # The last batch reached goes back first; no host ran an earlier version.
    assert rollback == [
        ("host3", 1, "not_run"),
        ("host4", 1, "not_run"),
        ("host1", 2, "not_run"),
        ("host2", 2, "not_run"),
    ]
    assert done.message is not None
    assert "(rollback_all)" in done.message
    assert done.message.endswith(
        "not restored: host3 (not_run), host4 (not_run), host1 (not_run), host2 (not_run)"
    )
