"""Health-gated rollouts over four vsonic switches (real gRPC, Redis), state in a real
PostgreSQL, gates read through a real Prometheus scraping a fake collector whose values the
test changes (tests/support/gate_collector.py): a gate that fails after a batch rolls that
batch back and touches nothing else; passing gates let the rollout complete; a pre-check
refuses to start on an unhealthy fabric unless forced; idle switches read as healthy (0 drops,
no fallback) and a faulty agent beside them does not."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from api.main import create_app
from controller.cli import CliDeps, app
from controller.errors import Conflict
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import make_promql
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutInfo, RolloutPolicy
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from controller.store.rollout_store import SqlRolloutStore
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import StepClock, issue_token
from tests.integration.served import served
from tests.support.gate_collector import Exposition, HandClock, fake_collector, settle

from .conftest import FIRST_BATCH_ONLY, OPERATOR, Controller, assert_completed, full_dump, statuses

ALL = ("leaf1", "leaf2", "spine1", "spine2")
DROPS = Gate("drops", 50.0, "max_increase_pct", builtin="drops")
FALLBACK = Gate("agent_fallback", 0.0, "absolute", builtin="agent_fallback")


@dataclass
class Telemetry:
    exposition: Exposition
    read: Reader
    url: str

    def settle(self, expression: str, expected: float) -> None:
        """Until Prometheus has scraped the value the fake collector now serves."""
        settle(self.read, expression, expected)


@pytest.fixture
def telemetry(tmp_path: Path) -> Iterator[Telemetry]:
    exposition = Exposition()
    exposition.set(drops=dict.fromkeys(ALL, 10.0), modes=dict.fromkeys(ALL, "dynamic"))
    with fake_collector(exposition) as target:
        server = LocalPrometheus(tmp_path / "prometheus", targets=[target], scrape_interval_s=1.0)
        server.start()
        promql = make_promql(server.url, 5.0)
        try:
            found = Telemetry(exposition, promql_reader(promql), server.url)
            found.settle("sum(sluice_queue_dropped_packets_per_second)", 40.0)
            yield found
        finally:
            promql.close()
            server.stop()


def second_version(intent: Intent) -> Intent:
    """Storage's DWRR weight 50 -> 60."""
    data: dict[str, Any] = dump_intent(intent)
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["scheduling"]["weight"] = 60
    return parse_intent(data)


def runner(controller: Controller, clock: HandClock, read: Reader) -> RolloutRunner:
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    return RolloutRunner(store, controller.access(), clock, max_parallel=4, gates=read)


def first_version_everywhere(controller: Controller) -> None:
    controller.store_intent(controller.fabric.intent)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=4, allow_port_flaps=True), actor=OPERATOR
    )  # the first rollout adds QUEUE entries: each port goes down, allowed
    controller.runner().run_until_idle()
    assert_completed(controller.rollouts.get(info.id))


def start_gated(
    controller: Controller, read: Reader, *, first: bool = False, **gates: Any
) -> RolloutInfo:
    """A gated rollout in batches of two; ``first``: the switches' first rollout, whose QUEUE
    adds take each port down (allowed)."""
    policy = GatePolicy((DROPS, FALLBACK), **gates)
    return controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=policy, allow_port_flaps=first),
        actor=OPERATOR,
        gates=read,
    )


def holds(controller: Controller, switch: str, version: int) -> bool:
    desired = SqlRolloutStore(controller.sessions, clock=controller.clock).desired(version)
    stored = controller.fabric.switches[switch].config_db()
    return all(
        stored.get(f"{table}|{key}") == fields for (table, key), fields in desired[switch].items()
    )


def test_a_gate_failing_after_a_batch_rolls_that_batch_back_and_nothing_else(
    controller: Controller, telemetry: Telemetry
) -> None:
    first_version_everywhere(controller)
    controller.store_intent(second_version(controller.fabric.intent))
    info = start_gated(controller, telemetry.read, soak_s=30.0, on_fail="rollback_batch")
    clock = HandClock()
    gated = runner(controller, clock, telemetry.read)
    assert gated.step(info.id)  # pending -> running
    assert gated.step(info.id)  # baseline, batch 0 (leaf1, leaf2), soak starts
    assert holds(controller, "leaf1", 2)
    assert holds(controller, "leaf2", 2)
    spines_before = {name: full_dump(controller.fabric)[name] for name in ("spine1", "spine2")}

    # The batch makes leaf1 drop: 10 -> 100 packets/s; the batch's drops 20 -> 110.
    telemetry.exposition.set(drops={"leaf1": 100.0})
    telemetry.settle('sum(sluice_queue_dropped_packets_per_second{switch="leaf1"})', 100.0)
    assert not gated.step(info.id)  # still soaking: nothing done, nothing blocks
    clock.advance(30.0)
    assert gated.step(info.id)  # soak over: the drops gate fails -> rolling_back
    assert controller.rollouts.get(info.id).state == "rolling_back"
    gated.run_until_idle()

    done = controller.rollouts.get(info.id)
    assert done.state == "rolled_back"
    assert "batch 0 failed its health gates" in (done.reason or "")
    assert "drops: value 110 > 30 (baseline 20 + 50 %)" in (done.reason or "")
    assert statuses(done) == FIRST_BATCH_ONLY
    assert set(statuses(done, "rollback")) == {"leaf1", "leaf2"}
    assert holds(controller, "leaf1", 1)
    assert holds(controller, "leaf2", 1)
    assert {name: full_dump(controller.fabric)[name] for name in spines_before} == spines_before
    readings = {(e.stage, e.gate): e for e in done.evaluations or []}
    assert readings[("baseline", "drops")].value == 20.0
    soak = readings[("soak", "drops")]
    assert (soak.value, soak.baseline, soak.limit, soak.verdict) == (110.0, 20.0, 30.0, "fail")
    assert 'switch=~"leaf1|leaf2"' in soak.expression
    assert readings[("soak", "agent_fallback")].verdict == "pass"


def test_passing_gates_let_the_rollout_complete(
    controller: Controller, telemetry: Telemetry
) -> None:
    first_version_everywhere(controller)
    controller.store_intent(second_version(controller.fabric.intent))
    info = start_gated(controller, telemetry.read, soak_s=60.0, on_fail="rollback_all")
    clock = HandClock()
    gated = runner(controller, clock, telemetry.read)
    for _ in range(10):
        if not gated.run_once():
            clock.advance(60.0)
        if controller.rollouts.get(info.id).state == "completed":
            break
    done = controller.rollouts.get(info.id)
    assert done.state == "completed"
    assert all(holds(controller, name, 2) for name in ALL)
    soaks = [e for e in done.evaluations or [] if e.stage == "soak"]
    # Two batches, two gates each, all within bounds (drops unchanged at 20 per batch).
    assert [(e.batch, e.gate, e.value, e.verdict) for e in soaks] == [
        (0, "drops", 20.0, "pass"),
        (0, "agent_fallback", 0.0, "pass"),
        (1, "drops", 20.0, "pass"),
        (1, "agent_fallback", 0.0, "pass"),
    ]


def test_a_precheck_refuses_an_unhealthy_fabric_unless_forced(
    controller: Controller, telemetry: Telemetry
) -> None:
    controller.store_intent(controller.fabric.intent)
    telemetry.exposition.set(modes={"spine2": "fallback"})
    telemetry.settle('count(sluice_agent_mode_info{mode="fallback"})', 1.0)
    with pytest.raises(Conflict, match="agent_fallback: value 1 > threshold 0"):
        start_gated(controller, telemetry.read, first=True)
    assert controller.rollouts.list(limit=10, offset=0).total == 0
    forced = start_gated(controller, telemetry.read, first=True, force=True)
    prechecks = [e for e in forced.evaluations or [] if e.stage == "precheck"]
    assert {(e.gate, e.verdict) for e in prechecks} == {
        ("drops", "pass"),
        ("agent_fallback", "fail"),
    }


def test_gates_through_the_api_and_the_command_line(
    controller: Controller, telemetry: Telemetry, db_url: str
) -> None:
    controller.store_intent(controller.fabric.intent)
    telemetry.exposition.set(modes={"leaf2": "fallback"})
    telemetry.settle('count(sluice_agent_mode_info{mode="fallback"})', 1.0)
    prometheus = PrometheusSettings(url=telemetry.url)
    settings = Settings.for_database(db_url, prometheus=prometheus)
    token = issue_token(db_url, AccessRole.OPERATOR, "cli-operator")
    with served(create_app(settings, clock=StepClock())) as url:
        env = {"SLUICE_API_URL": url, "SLUICE_API_TOKEN": token, "COLUMNS": "250"}

        def sluice(*args: str) -> tuple[int, str]:
            result = CliRunner().invoke(app, list(args), env=env, obj=CliDeps())
            return result.exit_code, result.stdout + result.stderr

        gates = ("--gate", "agent_fallback:absolute:0", "--gate", "drops:max_increase_pct:50")
        first = "--allow-port-flaps"  # the switches' first rollout takes their ports down
        code, said = sluice("rollout", "start", *gates, "--soak-s", "30", first)
        assert code != 0
        assert "pre-check" in said
        assert "agent_fallback: value 1 > threshold 0" in said
        raw = 'p95:absolute:1e9:max(sluice_queue_dropped_packets_per_second{switch=~"$switches"})'
        code, said = sluice("rollout", "start", *gates, "--gate", raw, "--force", first)
        assert code == 0, said
        code, said = sluice("rollout", "status", "1")
        assert code == 0, said
        lines = [[w for w in line.split() if w not in ("│", "┃")] for line in said.splitlines()]
        assert ["pre", "precheck", "agent_fallback", "1", "-", "0", "fail"] in [
            line[:7] for line in lines
        ]
        assert ["pre", "precheck", "p95", "10", "-", "1e+09", "pass"] in [
            line[:7] for line in lines
        ]

        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers) as client:
            shown = client.get("/api/v1/rollouts/1").json()
            assert shown["gate_policy"]["on_fail"] == "rollback_batch"
            assert {e["gate"] for e in shown["evaluations"]} == {"agent_fallback", "drops", "p95"}
            bad = client.post(
                "/api/v1/rollouts", json={"gates": {"gates": [{"builtin": "nope", "threshold": 1}]}}
            )
            assert bad.status_code == 422
            assert bad.headers["content-type"].startswith("application/problem+json")
            classless = {"builtin": "fct_p99_small", "threshold": 1}  # a per-class built-in
            bad = client.post("/api/v1/rollouts", json={"gates": {"gates": [classless]}})
            assert bad.status_code == 422
            assert "needs the class it reads" in bad.text


def test_idle_switches_read_as_healthy_and_a_faulty_agent_beside_them_does_not(
    telemetry: Telemetry,
) -> None:
    # The spines carry no traffic: their agents report idle, and their last drops (10/s, the
    # last interval that moved) are not now's. spine2's agent then falls back: a fault.
    telemetry.exposition.set(modes={"spine1": "idle", "spine2": "idle"})
    telemetry.settle('count(sluice_agent_mode_info{mode="idle"})', 2.0)
    spines = ["spine1", "spine2"]
    assert telemetry.read(DROPS.expression(spines)) == 0.0
    assert telemetry.read(DROPS.expression(["leaf1", "spine1"])) == 10.0  # leaf1's own
    assert telemetry.read(FALLBACK.expression(ALL)) == 0.0
    with telemetry.exposition.lock:
        for spine in spines:
            del telemetry.exposition.drops[spine]  # an idle switch with no rate at all
    telemetry.settle("count(sluice_queue_dropped_packets_per_second)", 2.0)
    assert telemetry.read(DROPS.expression(spines)) == 0.0  # 0, not "no value"
    telemetry.exposition.set(modes={"spine2": "fallback"})
    telemetry.settle('count(sluice_agent_mode_info{mode="fallback"})', 1.0)
    assert telemetry.read(FALLBACK.expression(ALL)) == 1.0
    assert telemetry.read(DROPS.expression(["spine2"])) is None  # not idle, and no drops
