"""Health gates end to end with the real collector: four vsonic switches (real gRPC over TLS,
real Redis), ``python -m controller.collector`` subscribed to them, a real
Prometheus scraping it, PostgreSQL holding the rollout. The gate is a PromQL one over the
collector's ``sluice_switch_stream_up``: a switch of the batch that stops streaming during
the soak fails it, and the batch is rolled back while the spines are never touched."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.intent.loader import dump_intent, parse_intent
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutPolicy
from controller.store.rollout_store import SqlRolloutStore
from tests.support.collector_fleet import scraped_collector
from vsonic.gnmi_server import TlsFiles

from .conftest import FIRST_BATCH_ONLY, OPERATOR, Controller, assert_completed, full_dump, statuses

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
DOWN = 'count(sluice_switch_stream_up{switch=~"$switches"} == 0) or vector(0)'
UP = "count(sluice_switch_stream_up == 1)"


class HandClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def settle(read: Reader, expression: str, expected: float, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if read(expression) == expected:
            return
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never answered {expected} for {expression}")


@pytest.fixture
def streaming(controller: Controller, switch_tls: TlsFiles, tmp_path: Path) -> Iterator[Reader]:
    """The real collector over the fabric's switches, scraped by a real Prometheus."""
    env = {
        "SLUICE_GNMI_PASSWORD": controller.fabric.password,
        "SLUICE_GNMI_INSECURE": "false",
        "SLUICE_GNMI_TLS_CA": str(switch_tls.cert),
    }
    with scraped_collector(controller.fabric.intent, tmp_path, env) as (read, _):
        settle(read, UP, 4.0)
        yield read


def test_a_switch_that_stops_streaming_fails_the_gate_and_its_batch_is_rolled_back(
    controller: Controller, streaming: Reader
) -> None:
    controller.store_intent(controller.fabric.intent)
    first = controller.rollouts.start(
        RolloutPolicy(None, batch_size=4, allow_port_flaps=True), actor=OPERATOR
    )  # the first rollout adds QUEUE entries: each port goes down, allowed
    controller.runner().run_until_idle()
    assert_completed(controller.rollouts.get(first.id))
    data: dict[str, Any] = dump_intent(controller.fabric.intent)
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["scheduling"]["weight"] = 60
    controller.store_intent(parse_intent(data))

    policy = GatePolicy((Gate("streams_down", 0.0, query=DOWN),), soak_s=20.0)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=policy), actor=OPERATOR, gates=streaming
    )
    clock = HandClock()
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    runner = RolloutRunner(store, controller.access(), clock, max_parallel=4, gates=streaming)
    assert runner.step(info.id)  # running
    assert runner.step(info.id)  # baseline 0 down; batch 0: leaf1, leaf2
    spines = {n: full_dump(controller.fabric)[n] for n in ("spine1", "spine2")}

    controller.fabric.switches["leaf2"].stop()  # its stream drops during the soak
    settle(streaming, 'count(sluice_switch_stream_up{switch="leaf2"} == 0)', 1.0)
    clock.now += timedelta(seconds=20)
    assert runner.step(info.id)  # the gate fails: rolling back leaf1 and leaf2
    controller.fabric.switches["leaf2"].start()  # back on the same port for the rollback
    controller.restart_southbound()
    runner = RolloutRunner(store, controller.access(), clock, max_parallel=4, gates=streaming)
    runner.run_until_idle()

    done = controller.rollouts.get(info.id)
    assert done.state == "rolled_back", done.reason
    assert "streams_down: value 1 > threshold 0" in (done.reason or "")
    assert statuses(done) == FIRST_BATCH_ONLY
    assert statuses(done, "rollback") == {"leaf1": "applied_verified", "leaf2": "applied_verified"}
    assert {n: full_dump(controller.fabric)[n] for n in spines} == spines
    soak = next(e for e in done.evaluations or [] if e.stage == "soak")
    assert (soak.value, soak.verdict) == (1.0, "fail")
