"""Gates on what users feel: the p99 completion time of a class's small flows, as the hosts'
exporters report it (the ``fct_p99_small`` built-in), read through a real Prometheus scraping
a fake collector that stands in for a host exporter (tests/support/gate_collector.py), over
the four vsonic switches and a real PostgreSQL. A batch that makes the small flows of ``rpc``
ten times slower fails its gate and is rolled back; a gate with no data fails and says which
series was empty; a class's objective is the gate's limit."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from controller.errors import Conflict
from controller.rollout.gates import Comparison, Gate, GatePolicy, Reader
from controller.services.rollouts import RolloutPolicy
from tests.support.gate_collector import HandClock

from . import test_gates
from .conftest import FIRST_BATCH_ONLY, OPERATOR, Controller, full_dump, statuses
from .test_gates import (
    Telemetry,
    first_version_everywhere,
    holds,
    runner,
    second_version,
)

telemetry = test_gates.telemetry
SOAK_S = 4.0  # the FCT window is the soak: 4 s of 1 s scrapes
RPC_FCT = Gate(
    "fct_p99_small.rpc", 50.0, "max_increase_pct", builtin="fct_p99_small", service_class="rpc"
)
# Every flow in one bucket of the exporter's 50 us x 2^k: p99 is interpolated at 0.99 of it.
FAST_S, FAST_P99_US = 300e-6, (200 + 0.99 * 200)  # (0.0002, 0.0004] -> 398 us
SLOW_S, SLOW_P99_US = 3e-3, (1600 + 0.99 * 1600)  # (0.0016, 0.0032] -> 3184 us


def settle(read: Reader, expression: str, wanted: Callable[[float | None], bool]) -> None:
    """Until Prometheus answers what the fake exporter now serves, over the whole window."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        if wanted(read(expression)):
            return
        time.sleep(0.3)
    raise AssertionError(f"Prometheus never answered as wanted for {expression}")


def near(target: float) -> Callable[[float | None], bool]:
    return lambda value: value is not None and abs(value - target) < 1.0


def test_a_batch_that_slows_small_flows_fails_its_fct_gate_and_is_rolled_back(
    controller: Controller, telemetry: Telemetry
) -> None:
    first_version_everywhere(controller)
    controller.store_intent(second_version(controller.fabric.intent))
    telemetry.exposition.set_flows("rpc", 10, FAST_S)
    expression = RPC_FCT.expression(["leaf1"], SOAK_S)
    settle(telemetry.read, expression, near(FAST_P99_US))
    policy = GatePolicy((RPC_FCT,), soak_s=SOAK_S, on_fail="rollback_batch")
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=policy), actor=OPERATOR, gates=telemetry.read
    )
    clock = HandClock()
    gated = runner(controller, clock, telemetry.read)
    assert gated.step(info.id)  # pending -> running
    assert gated.step(info.id)  # baseline (398 us), batch 0 (leaf1, leaf2), soak starts
    spines_before = {name: full_dump(controller.fabric)[name] for name in ("spine1", "spine2")}

    # The batch hurts the small flows: 300 us -> 3 ms each.
    telemetry.exposition.set_flows("rpc", 10, SLOW_S)
    settle(telemetry.read, expression, near(SLOW_P99_US))
    clock.advance(SOAK_S)
    assert gated.step(info.id)  # the FCT gate fails -> rolling_back
    gated.run_until_idle()

    done = controller.rollouts.get(info.id)
    assert done.state == "rolled_back"
    assert statuses(done) == FIRST_BATCH_ONLY
    assert holds(controller, "leaf1", 1)
    assert holds(controller, "leaf2", 1)
    assert {name: full_dump(controller.fabric)[name] for name in spines_before} == spines_before
    readings = {(e.stage, e.gate): e for e in done.evaluations or []}
    baseline = readings[("baseline", "fct_p99_small.rpc")]
    soak = readings[("soak", "fct_p99_small.rpc")]
    assert baseline.value == pytest.approx(FAST_P99_US)
    assert soak.value == pytest.approx(SLOW_P99_US)
    assert soak.verdict == "fail"
    assert soak.limit == pytest.approx(FAST_P99_US * 1.5)
    assert 'class="rpc",size="small"}[4s]' in soak.expression
    assert "fct_p99_small.rpc: value 3184" in (done.reason or "")
    # The version that hurt is rejected and the head is back at the fabric's version 1.
    assert controller.intents.version(2).info.rejected_by_rollout == info.id
    head = controller.intents.current()
    assert (head.info.number, head.data) == (3, controller.intents.version(1).data)


def test_a_gate_with_no_data_fails_naming_the_empty_series_and_an_objective_is_the_limit(
    controller: Controller, telemetry: Telemetry
) -> None:
    controller.store_intent(controller.fabric.intent)
    telemetry.exposition.set_flows("rpc", 10, FAST_S)
    telemetry.exposition.set_flows("bulk", 0, FAST_S)  # reported, but no flow finishes
    settle(telemetry.read, RPC_FCT.expression(["leaf1"], SOAK_S), near(FAST_P99_US))

    def fct(name: str, klass: str, threshold: float, comparison: Comparison) -> Gate:
        return Gate(name, threshold, comparison, builtin="fct_p99_small", service_class=klass)

    gates = (
        fct("fct.rpc", "rpc", 1000.0, "objective"),  # met: 398 us
        fct("fct.rpc-tight", "rpc", 300.0, "absolute"),
        fct("fct.bulk", "bulk", 50.0, "max_increase_pct"),  # no flow finished in the window
        fct("fct.storage", "storage", 50.0, "max_increase_pct"),  # no host reports the class
    )
    policy = GatePolicy(gates, soak_s=SOAK_S)
    with pytest.raises(Conflict) as refused:
        controller.rollouts.start(
            RolloutPolicy(None, batch_size=2, gates=policy, allow_port_flaps=True),
            actor=OPERATOR,
            gates=telemetry.read,
        )
    said = str(refused.value)
    assert "fct.rpc-tight: value 398 > threshold 300" in said
    assert "fct.bulk: no value" in said
    forced = GatePolicy(gates, soak_s=SOAK_S, force=True)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=forced, allow_port_flaps=True),
        actor=OPERATOR,
        gates=telemetry.read,
    )
    prechecks = {e.gate: e for e in info.evaluations or []}
    assert prechecks["fct.rpc"].verdict == "pass"
    assert prechecks["fct.rpc"].value == pytest.approx(FAST_P99_US)
    assert prechecks["fct.bulk"].verdict == "fail"
    assert prechecks["fct.bulk"].detail == (
        "no value: the query returned no sample: no flow of class bulk up to 100 kB finished "
        'in the last 4s (the hosts\' sluice_host_flow_completion_seconds_count{class="bulk",'
        'size="small"} did not grow)'
    )
    assert prechecks["fct.storage"].detail == (
        "no value: the query returned no sample: no samples of "
        'sluice_host_flow_completion_seconds_bucket{class="storage",size="small"}'
    )
