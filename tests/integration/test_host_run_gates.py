"""Health gates on a host apply: real PostgreSQL, real ansible-playbook (the harmless local
test play, tests/support/host_runs.py), a real Prometheus scraping a fake collector whose values
the test changes (tests/support/gate_collector.py). A gate that fails after a batch halts the
run: the hosts not reached are not run, and every reading is stored with the run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.errors import Conflict
from controller.rollout.ansible import AnsibleBatches
from controller.rollout.gate_reads import promql_reader
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.hosts import HostRunRunner
from controller.services.common import Actor, WorkerWait
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.store.db import make_engine, make_sessions
from controller.store.host_run_store import SqlHostRunStore
from controller.telemetry.promql import make_promql
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import StepClock
from tests.support.gate_collector import Exposition, fake_collector
from tests.support.host_runs import four_host_intent, local_config

ACTOR = Actor(name="op", request_id="r1")
DROPS = GatePolicy((Gate("drops", 50.0, "max_increase_pct", builtin="drops"),), soak_s=30.0)


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


def test_a_failed_gate_halts_a_host_apply_after_its_batch(
    db_url: str, tmp_path: Path, gated: tuple[Exposition, Reader]
) -> None:
    exposition, read = gated
    engine = make_engine(db_url, pool_size=2)
    try:
        sessions = make_sessions(engine)
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
        assert "batch 1 failed its health gates: drops: value 50 > 30" in (done.message or "")
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
    finally:
        engine.dispose()
