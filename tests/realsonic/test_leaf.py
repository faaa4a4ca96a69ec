"""The example intent's leaf on a real switch: SONiC's gNMI server, the real GCU validating
against SONiC's YANG models and sluice's, orchagent + syncd over libsaivs, buffermgrd, and the
switch's own buffer pools and profiles loaded as ``config load`` loads them.

One first rollout (through the rollout runner, state in PostgreSQL) serves every test of the
module, in order: its read-back and what orchagent programmed into ASIC_DB, an empty plan
afterwards, drift found by a full read and repaired down to the ASIC, a health-gated change
rolled back when its gate fails, a tuner proposal that must take no port down, and the
on-switch agent's threshold writes reaching the ASIC. What each check expects is the compiled
desired state; the switch is read straight from its redis (CONFIG_DB, ASIC_DB), not through
the code under test.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.errors import WatchdogNotStarted
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import make_promql
from controller.reconcile.access import OWNED_TABLES
from controller.reconcile.apply import agent_fields
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.services.common import WorkerWait
from controller.services.discoveries import DiscoveryService
from controller.services.reconcile import ReconcileService
from controller.services.rollouts import RolloutInfo, RolloutPolicy
from controller.sonic.compile import compile_switch
from controller.sonic.diff import plan_switch
from controller.sonic.model import Fields, Op, Plan, SwitchConfig
from controller.tuning.apply import apply_changes
from controller.tuning.evidence import Change, Evidence
from lab.asic_db import asic_problems, wait_for_asic
from lab.prometheus import LocalPrometheus
from lab.realsonic import RealSwitch
from tests.integration.dataplane.conftest import agent_binary
from tests.integration.rollout.conftest import wait_for
from tests.support.gate_collector import Exposition, HandClock, scraped, settle
from tests.support.lossless import with_lossless_storage
from vsonic.redis_process import free_port
from vsonic.seed import S6000_BUFFERS
from vsonic.tether import start_tethered

from .conftest import OPERATOR, RealController, config_db, example_leaf

DROPS = Gate("drops", 50.0, "max_increase_pct", builtin="drops")
agent_binary = agent_binary  # the qos-agent, built once per session (cargo build)


@dataclass(frozen=True)
class FirstRollout:
    info: RolloutInfo
    intent: Intent
    desired: SwitchConfig
    ports_down: frozenset[str]


@pytest.fixture(scope="module")
def first(real_controller: RealController) -> FirstRollout:
    """The example leaf rolled out to a switch that holds only what its image loaded. Its
    queues' buffer entries are new, which GCU applies with the ports down: the rollout allows
    it, as an operator must for a first rollout, and ``ports_down`` records which went."""
    intent = example_leaf(real_controller.switch)
    with real_controller.switch.ports_taken_down() as downs:
        info = real_controller.roll_out(intent, allow_port_flaps=True)
    desired = real_controller.desired(info.to_version)
    return FirstRollout(info, intent, desired, frozenset(downs))


def running(switch: RealSwitch, desired: SwitchConfig) -> SwitchConfig:
    """``desired`` with the thresholds the on-switch agent moves as the switch holds them now:
    once the agent has run, they are its, not the rollout's (docs/qos-agent.md)."""
    stored = config_db(switch)
    return {
        key: {
            **fields,
            **{n: stored[key][n] for n in agent_fields(key) if n in stored.get(key, {})},
        }
        for key, fields in desired.items()
    }


def holds(switch: RealSwitch, desired: SwitchConfig) -> list[str]:
    """The entries of ``desired`` the switch's CONFIG_DB does not hold as desired."""
    stored = config_db(switch)
    return [f"{t}|{k}" for (t, k), fields in desired.items() if stored.get((t, k)) != fields]


def test_first_rollout_is_verified_by_read_back_and_programmed_into_the_asic(
    real_controller: RealController, first: FirstRollout
) -> None:
    switch = real_controller.switch
    assert first.info.state == "completed", first.info.reason
    assert [(r.switch, r.status, r.reason) for r in first.info.results] == [
        ("leaf1", "applied_verified", None)
    ]
    assert holds(switch, first.desired) == []
    # GCU took each port down around its QUEUE, BUFFER_QUEUE and PORT_QOS_MAP changes, and
    # the watch saw it (the watch a later change is held to).
    assert first.ports_down == {"Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52"}
    # Every queue, map, scheduler and buffer profile reached the ASIC as the config says.
    assert wait_for_asic(switch.asic_view, first.desired) == []
    # The operator's buffers are as the image loaded them.
    stored = config_db(switch)
    for table, entries in S6000_BUFFERS.items():
        for key, fields in entries.items():
            assert stored[(table, key)] == fields


def test_the_asic_check_names_what_differs(
    real_controller: RealController, first: FirstRollout
) -> None:
    """The ASIC check can fail: a config the switch does not run is reported by entry and
    attribute."""
    view = real_controller.switch.asic_view()
    profile = first.desired[("QUEUE", "Ethernet0|1")]["wred_profile"]
    fields = first.desired[("WRED_PROFILE", profile)]
    wrong = {**first.desired, ("WRED_PROFILE", profile): {**fields, "green_min_threshold": "1"}}
    problems = asic_problems(view, wrong)
    expected = (
        f"WRED_PROFILE|{profile}: SAI_WRED_ATTR_GREEN_MIN_THRESHOLD is "
        f"{fields['green_min_threshold']!r}, expected '1'"
    )
    assert len(problems) >= 1
    assert set(problems) == {expected}


def test_a_plan_from_a_fresh_read_is_empty(
    real_controller: RealController, first: FirstRollout
) -> None:
    observed = real_controller.access().read(first.intent.switches[0], OWNED_TABLES)
    assert plan_switch("leaf1", first.desired, observed, first.desired).ops == ()


def test_drift_found_by_a_full_read_is_repaired_down_to_the_asic(
    real_controller: RealController, first: FirstRollout
) -> None:
    switch = real_controller.switch
    weighted = sorted(
        key
        for (table, key), fields in first.desired.items()
        if table == "SCHEDULER" and fields.get("type") == "DWRR"
    )[0]
    wanted = first.desired[("SCHEDULER", weighted)]["weight"]
    # Behind sluice's back: orchagent programs it, and the ASIC check says what differs.
    switch.db("CONFIG_DB").hset(f"SCHEDULER|{weighted}", "weight", "7")
    drifted = {**first.desired, ("SCHEDULER", weighted): {"type": "DWRR", "weight": "7"}}
    assert wait_for_asic(switch.asic_view, drifted) == []
    problems = asic_problems(switch.asic_view(), first.desired)
    assert len(problems) >= 1
    assert all(f"SCHEDULER|{weighted}: " in p for p in problems), problems

    reconciler = ReconcileService(
        real_controller.sessions, clock=real_controller.clock, rand=random.Random(3).random
    )
    reconciler.loop(real_controller.access()).run_pass()

    runs = {run.switch: run for run in reconciler.last_runs()}
    assert (runs["leaf1"].status, runs["leaf1"].drift_count) == ("corrected", 1)
    drift = reconciler.drift(limit=10, offset=0).items
    assert [(d.table, d.key, d.field, d.expected, d.observed) for d in drift] == [
        ("SCHEDULER", weighted, "weight", wanted, "7")
    ]
    assert holds(switch, first.desired) == []
    assert wait_for_asic(switch.asic_view, first.desired) == []


def test_a_port_the_switch_lacks_is_named_in_the_refusal_and_nothing_is_written(
    real_controller: RealController, first: FirstRollout
) -> None:
    """GCU answers a leafref to a missing port with "Data Loading Failed" and no more; the
    result names the port and the entries that name it."""
    switch = real_controller.switch
    data: dict[str, Any] = dump_intent(first.intent)
    data["switches"][0]["ports"].append({"name": "Ethernet200", "speed_gbps": 25})
    typo = parse_intent(data)
    leaf = typo.switches[0]
    access = real_controller.access()
    desired = compile_switch(typo, leaf)
    plan = plan_switch("leaf1", desired, access.read(leaf, OWNED_TABLES), first.desired)
    result = access.apply(leaf, plan)
    assert result.status == "failed"
    assert "Data Loading Failed" in (result.reason or "")
    assert "the switch has no PORT|Ethernet200 (named by the key of " in (result.reason or "")
    assert result.failed_op is not None
    assert result.failed_op.key.startswith("Ethernet200|")
    assert (result.ops_written, result.set_requests) == (0, 1)
    assert holds(switch, first.desired) == []


@pytest.fixture
def drops_telemetry(tmp_path: Path) -> Iterator[tuple[Exposition, Reader]]:
    """Drop rates the test sets, served on the collector's metric names (a fake collector:
    sluice's collector against SONiC's server is the sb-stream branch's), scraped by a real
    Prometheus and read by the gates' PromQL reader."""
    exposition = Exposition()
    exposition.set(drops={"leaf1": 10.0})
    with scraped(exposition, tmp_path / "prometheus") as read:
        settle(read, 'sum(sluice_queue_dropped_packets_per_second{switch="leaf1"})', 10.0)
        yield exposition, read


def with_storage_dscp(intent: Intent, dscp: int) -> Intent:
    """One more DSCP for the storage class: one field of DSCP_TO_TC_MAP (and the agent's
    orders' version), no port-critical table."""
    data: dict[str, Any] = dump_intent(intent)
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["dscp"] = [*service_class["dscp"], dscp]
    return parse_intent(data)


def test_a_change_whose_gate_fails_is_rolled_back_on_the_switch_and_its_asic(
    real_controller: RealController,
    first: FirstRollout,
    drops_telemetry: tuple[Exposition, Reader],
) -> None:
    switch = real_controller.switch
    exposition, read = drops_telemetry
    second = real_controller.store_intent(with_storage_dscp(first.intent, 14))
    policy = GatePolicy((DROPS,), soak_s=30.0, on_fail="rollback_batch")
    info = real_controller.rollouts.start(
        RolloutPolicy(None, gates=policy), actor=OPERATOR, gates=read
    )
    clock = HandClock()
    gated = real_controller.runner(clock=clock, gates=read)
    assert gated.step(info.id)  # pending -> running
    assert gated.step(info.id)  # baseline read, the batch applied, its soak starts
    changed = real_controller.desired(second)
    assert changed[("DSCP_TO_TC_MAP", "SLUICE")]["14"] == "3"
    assert holds(switch, changed) == []
    assert wait_for_asic(switch.asic_view, changed) == []

    exposition.set(drops={"leaf1": 100.0})
    settle(read, 'sum(sluice_queue_dropped_packets_per_second{switch="leaf1"})', 100.0)
    clock.advance(30.0)
    assert gated.step(info.id)  # the soak is over: the gate fails
    gated.run_until_idle()

    done = real_controller.rollouts.get(info.id)
    assert done.state == "rolled_back", done.reason
    assert "drops: value 100 > 15 (baseline 10 + 50 %)" in (done.reason or "")
    assert [(r.phase, r.status) for r in done.results] == [
        ("rollout", "applied_verified"),
        ("rollback", "applied_verified"),
    ]
    assert holds(switch, first.desired) == []
    assert wait_for_asic(switch.asic_view, first.desired) == []


STREAMS_DOWN = 'count(sluice_switch_stream_up{switch=~"$switches"} == 0) or vector(0)'
STREAM_UP = 'sluice_switch_stream_up{switch="leaf1"}'


@pytest.fixture
def collector_telemetry(
    real_controller: RealController, first: FirstRollout, tmp_path: Path
) -> Iterator[Reader]:
    """sluice's collector (``python -m controller.collector``) subscribed to the real
    switch, scraped by a real Prometheus; read once it says leaf1's counters stream is up
    (synced), so that a gate's first reading finds the stream it judges."""
    intent_file = tmp_path / "intent.yaml"
    intent_file.write_text(yaml.safe_dump(dump_intent(first.intent)))
    metrics_port = free_port()
    env = {
        **os.environ,
        "SLUICE_GNMI_PASSWORD": "unused",
        "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port),
        "SLUICE_GNMI_INSECURE": "true",
        # SAMPLE: an ON_CHANGE Subscribe to COUNTERS crashed SONiC's server during this test
        # on a loaded machine (sonic-gnmi's own map race, docs/telemetry.md); what the gate
        # reads is whether the streams are up, which SAMPLE serves as well.
        "SLUICE_TELEMETRY_COUNTER_MODE": "SAMPLE",
    }
    with (tmp_path / "collector.log").open("wb") as log:
        collector = start_tethered(
            [sys.executable, "-m", "controller.collector", "--intent", str(intent_file)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        server = LocalPrometheus(tmp_path / "prometheus", targets=[f"127.0.0.1:{metrics_port}"])
        with server:
            promql = make_promql(server.url, 5.0)
            try:
                read = promql_reader(promql)
                settle(read, STREAM_UP, 1.0, within_s=60.0)
                yield read
            finally:
                promql.close()
    finally:
        collector.terminate()
        collector.wait(timeout=30)


def test_a_gate_over_the_collectors_streams_passes_on_a_healthy_switch(
    real_controller: RealController, first: FirstRollout, collector_telemetry: Reader
) -> None:
    switch = real_controller.switch
    real_controller.store_intent(with_storage_dscp(first.intent, 16))
    policy = GatePolicy((Gate("streams_down", 0.0, query=STREAMS_DOWN),), soak_s=20.0)
    info = real_controller.rollouts.start(
        RolloutPolicy(None, gates=policy), actor=OPERATOR, gates=collector_telemetry
    )
    clock = HandClock()
    gated = real_controller.runner(clock=clock, gates=collector_telemetry)
    assert gated.step(info.id)  # pending -> running
    assert gated.step(info.id)  # baseline read, the batch applied, its soak starts
    clock.advance(20.0)
    gated.run_until_idle()
    done = real_controller.rollouts.get(info.id)
    assert done.state == "completed", done.reason
    assert (
        wait_for_asic(switch.asic_view, running(switch, real_controller.desired(done.to_version)))
        == []
    )


def with_storage_weight(intent: Intent, weight: int) -> Intent:
    """Storage's DWRR weight: every MQ-ECN queue's share, and so its static threshold, moves."""
    data: dict[str, Any] = dump_intent(intent)
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["scheduling"]["weight"] = weight
    return parse_intent(data)


def agent_orders(config: SwitchConfig) -> dict[str, Fields]:
    """The agent's orders in ``config``, by CONFIG_DB key."""
    tables = ("SLUICE_AGENT", "SLUICE_AGENT_QUEUE")
    return {f"{t}|{k}": fields for (t, k), fields in config.items() if t in tables}


def asic_thresholds(switch: RealSwitch, port_queue: str) -> set[str]:
    """The six threshold values of the WRED object a queue (``Ethernet0:3``) names."""
    view = switch.asic_view()
    wred = view.objects["QUEUE"][view.queues[port_queue]]["SAI_QUEUE_ATTR_WRED_PROFILE_ID"]
    attrs = view.objects["WRED"][wred]
    return {value for name, value in attrs.items() if name.endswith("_THRESHOLD")}


def thresholds_are(switch: RealSwitch, port_queue: str, value: str) -> Callable[[], bool]:
    return lambda: asic_thresholds(switch, port_queue) == {value}


def test_the_agents_threshold_writes_reach_the_asic_through_orchagent(
    real_controller: RealController, first: FirstRollout, agent_binary: Path, tmp_path: Path
) -> None:
    """The qos-agent on the switch's redis writes WRED thresholds into CONFIG_DB (its write
    path on SONiC); orchagent programs them. An idle switch's counters do not move, so the
    agent runs every managed queue on its ordered static threshold; orders of a later
    version (storage's weight 50 -> 60) move those, and the ASIC's WRED objects follow."""
    switch = real_controller.switch
    state = switch.db("STATE_DB")
    # The orders the switch holds now: the module's earlier tests may have rolled out a
    # later version than the first (the collector gate's DSCP change, when it passes).
    version = config_db(switch)[("SLUICE_AGENT", "global")]["version"]
    log = tmp_path / "agent.log"
    with log.open("w") as sink:
        agent = start_tethered(
            [agent_binary, "--redis-port", str(switch.redis_port)], stdout=sink, stderr=sink
        )
    try:
        wait_for(
            "the agent runs the rolled-out orders",
            lambda: state.hget("SLUICE_AGENT_STATE|global", "version") == version,
        )
        later = compile_switch(with_storage_weight(first.intent, 60), first.intent.switches[0])
        managed = {
            key: fields
            for (table, key), fields in later.items()
            if table == "SLUICE_AGENT_QUEUE" and fields["managed"] == "true"
        }
        moved = {
            key: fields["static_bytes"]
            for key, fields in managed.items()
            if fields["static_bytes"] != first.desired[("SLUICE_AGENT_QUEUE", key)]["static_bytes"]
        }
        assert moved, "the later version must move some static threshold"
        # The orders as a rollout of that version leaves them (written straight to CONFIG_DB:
        # the agent reads nothing else, and GCU's time is not what this test is about).
        with switch.db("CONFIG_DB").pipeline(transaction=True) as pipe:
            for key, fields in agent_orders(later).items():
                stored: dict[str | bytes, bytes | float | int | str] = {}
                stored.update(fields)
                pipe.delete(key)
                pipe.hset(key, mapping=stored)
            pipe.execute()
        for key, static in moved.items():
            queue = key.replace("|", ":")
            wait_for(f"{queue}'s WRED object at {static}", thresholds_are(switch, queue, static))
        assert "threshold moved" in log.read_text()
    finally:
        agent.terminate()
        agent.wait(timeout=30)


def with_rpc_lambda(intent: Intent, ecn_lambda: float) -> Intent:
    """What applying the tuner's ECN proposal for the rpc class (standard ECN) makes."""
    change = Change(
        "ecn_lambda/rpc/25gbps",
        1.0,
        ecn_lambda,
        Evidence("ecn.lambda", "test", {"mark_fraction": 0.4}, {"lambda": ecn_lambda}),
    )
    applied = apply_changes(intent, [change])
    assert applied.applied == (change,)
    return applied.intent


def test_a_tuner_proposal_takes_no_port_down(
    real_controller: RealController, first: FirstRollout
) -> None:
    switch = real_controller.switch
    tuned = with_rpc_lambda(example_leaf(switch), 0.8)
    with switch.ports_taken_down() as downs:
        done = real_controller.roll_out(tuned)
    assert [(r.status, r.reason) for r in done.results] == [("applied_verified", None)]
    assert downs == set()
    assert (
        wait_for_asic(switch.asic_view, running(switch, real_controller.desired(done.to_version)))
        == []
    )


def test_a_set_gcu_checks_while_the_agent_writes_is_applied_and_verified(
    real_controller: RealController, first: FirstRollout
) -> None:
    """GCU compares the whole CONFIG_DB with the config it expected after applying a patch;
    a threshold the qos-agent moves meanwhile fails that check with the patch applied, and
    sonic-gnmi answers only its scope refusal. The rollout reads such a batch back and takes
    it as applied when it reads back whole (``controller/reconcile/apply.py``)."""
    switch = real_controller.switch
    moved = next(key for key in first.desired if key[0] == "WRED_PROFILE" and agent_fields(key))
    field = sorted(agent_fields(moved))[0]
    config = switch.db("CONFIG_DB")
    entry = f"{moved[0]}|{moved[1]}"
    original = config.hget(entry, field)
    assert original is not None
    stop = threading.Event()

    def agent_like_writer() -> None:
        # What the agent does at a 100 ms interval: rewrite one of its thresholds.
        step = 0
        while not stop.wait(0.1):
            step += 1
            config.hset(entry, field, str(int(original) + 1000 * (step % 2)))

    writer = threading.Thread(target=agent_like_writer, daemon=True)
    writer.start()
    try:
        done = real_controller.roll_out(with_rpc_lambda(example_leaf(switch), 0.6))
    finally:
        stop.set()
        writer.join()
        config.hset(entry, field, original)
    assert [(r.status, r.reason) for r in done.results] == [("applied_verified", None)]
    assert holds(switch, running(switch, real_controller.desired(done.to_version))) == []


def discover(controller: RealController) -> None:
    """A discovery of the switch recorded, answered here as the worker answers it."""
    access = controller.access()

    def answer(_: float) -> None:
        service.answer(access)

    service = DiscoveryService(
        controller.sessions, clock=controller.clock, wait=WorkerWait(sleep=answer)
    )
    service.request(names=["leaf1"], actor=OPERATOR)


LOSSLESS_TABLES = (
    "BUFFER_PG",
    "PFC_WD",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
)


def without_pfc_to_pg(desired: SwitchConfig) -> SwitchConfig:
    """``desired`` as sluice writes it to a switch whose ASIC takes no PFC priority -> group
    map: without the map and without its ports' ``pfc_to_pg_map``."""
    return {
        (t, k): {n: v for n, v in fields.items() if n != "pfc_to_pg_map"}
        for (t, k), fields in desired.items()
        if t != "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"
    }


def test_a_rollout_adds_a_lossless_class_through_gcu(
    real_controller: RealController, first: FirstRollout
) -> None:
    """The lossless tables through the real GCU, validated against SONiC's YANG models
    (sonic-buffer-pg, -pfcwd, -port-qos-map, -tc-priority-group-map, -pfc-priority-queue-map,
    -buffer-profile, -wred-profile): applied, verified by read-back, and the lossless queue's
    DCQCN ramp programmed into the ASIC. The PFC priority -> group map is not written: the
    image's ASIC (vs) is not one SONiC binds it on."""
    switch = real_controller.switch
    lossless = with_lossless_storage(example_leaf(switch))
    before = config_db(switch)
    assert not [k for t, k in before if t == "PFC_WD"]  # the image started no watchdog
    # GCU refuses the PFC_WD table's first entry whatever it is: even GLOBAL alone, the poll
    # interval ``pfcwd interval`` writes, which would have let the ports' entries follow.
    (leaf,) = lossless.switches
    interval = Op("add", "PFC_WD", "GLOBAL", {"POLL_INTERVAL": "200"}, {})
    assert real_controller.access().apply(leaf, Plan(leaf.name, (interval,))).status == "failed"
    assert config_db(switch) == before
    # So the rollout's start names what the operator must run, from the switch's discovery,
    # before anything is written.
    discover(real_controller)
    real_controller.store_intent(lossless)
    policy = RolloutPolicy(None, allow_port_flaps=True)
    with pytest.raises(WatchdogNotStarted, match=r"`sudo pfcwd interval 200`"):
        real_controller.rollouts.start(policy, actor=OPERATOR)
    assert config_db(switch) == before
    # Started as ``pfcwd interval 200`` starts it (its own CONFIG_DB write, not GCU's) and
    # discovered again: GCU adds the ports' watchdogs beside it.
    switch.db("CONFIG_DB").hset("PFC_WD|GLOBAL", "POLL_INTERVAL", "200")
    discover(real_controller)
    started = time.monotonic()
    info = real_controller.rollouts.start(policy, actor=OPERATOR)
    real_controller.runner().run_until_idle()
    done = real_controller.rollouts.get(info.id)
    print(f"lossless rollout through GCU: {time.monotonic() - started:.1f} s")
    assert [(r.status, r.reason) for r in done.results] == [("applied_verified", None)]
    desired = real_controller.desired(done.to_version)
    assert {t for t, _ in desired} >= set(LOSSLESS_TABLES)
    # SONiC's virtual switch (platform x86_64-kvm_x86_64-r0, asic_type vs) is not an ASIC
    # SONiC's qos_config.j2 binds a PFC priority -> group map on, so sluice binds none there
    # either (controller/sonic/asic.py): the compiled map and its bindings are not written.
    written = without_pfc_to_pg(desired)
    assert holds(switch, running(switch, written)) == []
    stored = config_db(switch)
    assert not [k for t, k in stored if t == "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]
    for port in ("Ethernet0", "Ethernet48"):
        assert stored[("PORT_QOS_MAP", port)]["pfc_enable"] == "3"
        assert "pfc_to_pg_map" not in stored[("PORT_QOS_MAP", port)]
        profile = stored[("BUFFER_PG", f"{port}|3")]["profile"]
        assert stored[("BUFFER_PROFILE", profile)]["pool"] == "ingress_lossless_pool"
        assert stored[("QUEUE", f"{port}|3")]["wred_profile"] == "SLUICE_DCQCN_Q3"
        # The lossless queue on the static egress profile, on the image's lossless pool.
        egress = stored[("BUFFER_PROFILE", stored[("BUFFER_QUEUE", f"{port}|3")]["profile"])]
        assert (egress["pool"], "static_th" in egress) == ("egress_lossless_pool", True)
    # No priority group of the ports but sluice's (buffermgrd adds none without a cable).
    groups = {k for t, k in stored if t == "BUFFER_PG"}
    assert groups == {k for t, k in desired if t == "BUFFER_PG"}
    assert wait_for_asic(switch.asic_view, running(switch, written)) == []
