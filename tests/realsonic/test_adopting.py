"""Adopting a switch that runs its operator's QoS config, on SONiC's own software: the gNMI
server, the real GCU validating against SONiC's YANG models and sluice's, orchagent + syncd
over libsaivs and buffermgrd.

The switch boots with the QoS config ``config load`` gives a Trident2 switch
(``vsonic.seed.operator_qos_config``: two lossless priorities with PFC, maps naming DSCPs the
intent does not, the operator's schedulers and lossless WRED profile, its image's buffers).
One cycle, in order, on one switch (a real first rollout takes minutes): discovered, adopted
by a rollout, drift-repaired, released; its CONFIG_DB, read straight from redis, then equals
what the operator had, entry for entry and field for field. Then a lossless class beside the
operator's on the same switch, whose lossless priority groups buffermgrd writes (SONiC's
traditional buffer model, ``CABLE_LENGTH`` 5 m): adopted and released intact.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.services.reconcile import ReconcileService
from controller.services.releases import ReleaseService
from controller.sonic.roce import check_roce
from controller.sonic.topology import topology
from lab.realsonic import RealSwitch
from tests.support.lossless import SPECTRUM_2
from vsonic.seed import LOSSLESS_PRIORITIES, operator_qos_config

from .conftest import (
    OPERATOR,
    RealController,
    StartSwitch,
    config_db,
    controller_of,
    example_leaf,
    full_switch_parts,
)
from .streams import wait_for

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(1800)]  # a hang guard only
LEAF_PORTS = ("Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52")  # docs/example-intent.yaml
MANAGED_PORTS = ("Ethernet0", "Ethernet48")
PG_DROP = ("FLEX_COUNTER_TABLE", "PG_DROP")
PG_WATERMARK = ("FLEX_COUNTER_TABLE", "PG_WATERMARK")
# The groups orchagent hands syncd to poll (FLEX_COUNTER_DB), for CONFIG_DB's PG_DROP and
# PG_WATERMARK (sonic-swss orchagent/flexcounterorch.cpp ``flexCounterGroupMap``).
PG_GROUPS = ("PG_DROP_STAT_COUNTER", "PG_WATERMARK_STAT_COUNTER")


def group_status(switch: RealSwitch, group: str) -> str | None:
    """A counter group's polling status as orchagent set it for syncd."""
    return switch.db("FLEX_COUNTER_DB").hget(
        f"FLEX_COUNTER_GROUP_TABLE:{group}", "FLEX_COUNTER_STATUS"
    )


@pytest.fixture(scope="module")
def operated(module_db_url: str, start_switch: StartSwitch) -> Iterator[RealController]:
    """A real switch booted with its operator's QoS config, and the controller's parts."""
    parts = replace(full_switch_parts(), operator_config=operator_qos_config(list(LEAF_PORTS)))
    with controller_of(start_switch(parts), module_db_url) as controller:
        yield controller


def brownfield_leaf(controller: RealController) -> Intent:
    """The example leaf cut down to what the cycle needs, since GCU takes about a second a
    change: two of its ports (the operator's config stays on all four) and three classes, the
    storage class off queue 3, which the operator holds lossless, onto queue 0."""
    data: dict[str, Any] = dump_intent(example_leaf(controller.switch))
    data["switches"][0]["ports"] = [
        p for p in data["switches"][0]["ports"] if p["name"] in MANAGED_PORTS
    ]
    data["service_classes"] = [
        c for c in data["service_classes"] if c["name"] in ("control", "storage", "best-effort")
    ]
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["queue"] = 0
    return parse_intent(data)


def test_the_roce_check_reads_the_operators_lossless_ports_from_sonic(
    operated: RealController,
) -> None:
    """The RoCE check of the switch as SONiC's gNMI server serves its CONFIG_DB, before the
    cycle below changes anything: buffermgrd (sonic-swss cfgmgr/buffermgr.cpp) gives every
    port's lossless groups its lookup-table profile, which is headroom; the operator never
    started the PFC watchdog, and each port and priority is named for it."""
    config = operated.switch.db("CONFIG_DB")
    wait_for(
        "buffermgrd's lossless priority groups",
        lambda: all(config.exists(f"BUFFER_PG|{port}|3-4") for port in LEAF_PORTS),
    )
    (leaf,) = example_leaf(operated.switch).switches
    login = leaf.login("")
    found = operated.access().discover(
        leaf.name, leaf.gnmi, login.secret_ref, username=login.username or None
    )
    check = check_roce([found], topology([found]), {})
    assert [(p.port, p.priorities) for p in check.ports] == [
        (port, LOSSLESS_PRIORITIES) for port in LEAF_PORTS
    ]
    assert [(f.kind, f.end, f.field) for f in check.findings] == [
        ("watchdog", f"leaf1:{port}", f"PFC_WD|{port}") for port in LEAF_PORTS for _ in (3, 4)
    ]
    profile = found.qos[("BUFFER_PG", "Ethernet0|3-4")]["profile"]
    assert "xoff" in found.qos[("BUFFER_PROFILE", profile)]
    assert check.links == ()  # one switch: no fabric link


def test_a_running_switch_is_discovered_adopted_repaired_and_given_back_intact(
    operated: RealController,
) -> None:
    switch = operated.switch
    original = config_db(switch)
    assert original[("PORT_QOS_MAP", "Ethernet0")]["pfc_enable"] == "3,4"
    intent = brownfield_leaf(operated)
    leaf = intent.switches[0]

    # Discover: three Gets (one a database), lossless priorities found on every port.
    login = leaf.login("")
    found = operated.access().discover(
        leaf.name, leaf.gnmi, login.secret_ref, username=login.username or None
    )
    assert found.gets == 3
    assert found.lossless() == {p: list(LOSSLESS_PRIORITIES) for p in LEAF_PORTS}
    speeds = {p.name: (p.speed_mbps or 0) // 1000 for p in found.ports}
    assert {p.name: speeds.get(p.name) for p in leaf.ports} == {
        p.name: p.speed_gbps for p in leaf.ports
    }

    # Adopt: the first rollout, through GCU; the lossless settings are the operator's still.
    info = operated.roll_out(intent, allow_port_flaps=True)
    assert info.state == "completed", (info.reason, [r.reason for r in info.results])
    (record,) = (
        ReleaseService(operated.sessions, clock=operated.clock)
        .adoptions(limit=10, offset=0, switch="leaf1")
        .items
    )
    assert record.released_at is None
    running = config_db(switch)
    for port in LEAF_PORTS:
        managed = port in MANAGED_PORTS
        assert running[("PORT_QOS_MAP", port)]["dscp_to_tc_map"] == (
            "SLUICE_AZURE" if managed else "AZURE"
        )
        assert running[("PORT_QOS_MAP", port)]["pfc_enable"] == "3,4"
        for queue in LOSSLESS_PRIORITIES:
            assert running[("QUEUE", f"{port}|{queue}")] == original[("QUEUE", f"{port}|{queue}")]
    merged = running[("DSCP_TO_TC_MAP", "SLUICE_AZURE")]
    assert (merged["3"], merged["4"], merged["8"]) == ("3", "4", "0")  # the operator's
    assert merged["10"] == "0"  # the intent's storage class, now on queue 0

    # Drift: lossless DSCP 3 made lossy in sluice's merged map, behind its back.
    switch.db("CONFIG_DB").hset("DSCP_TO_TC_MAP|SLUICE_AZURE", "3", "1")
    reconciler = ReconcileService(
        operated.sessions, clock=operated.clock, rand=random.Random(5).random
    )
    reconciler.loop(operated.access()).run_pass()
    runs = {run.switch: run for run in reconciler.last_runs()}
    assert (runs["leaf1"].status, runs["leaf1"].drift_count) == ("corrected", 1)
    assert config_db(switch)[("DSCP_TO_TC_MAP", "SLUICE_AZURE")]["3"] == "3"

    # Release: through GCU again, verified by read-back; the operator's config is back whole.
    releases = ReleaseService(operated.sessions, clock=operated.clock)
    asked = releases.request("leaf1", allow_port_flaps=True, actor=OPERATOR)
    assert asked.plan is not None
    assert releases.run_pending(operated.access()) == 1
    done = releases.get(asked.id or 0)
    assert done.state == "released", done.reason
    assert config_db(switch) == original


def lossless_leaf(controller: RealController) -> Intent:
    """``brownfield_leaf``'s two ports with the analytics class (queue 2) lossless on PFC
    priority 2, which the operator's config leaves lossy, beside the control and best-effort
    classes."""
    data: dict[str, Any] = dump_intent(example_leaf(controller.switch))
    data["switches"][0]["ports"] = [
        p for p in data["switches"][0]["ports"] if p["name"] in MANAGED_PORTS
    ]
    data["fabric"]["lossless"] = dict(SPECTRUM_2)
    data["service_classes"] = [
        c for c in data["service_classes"] if c["name"] in ("control", "analytics", "best-effort")
    ]
    for service_class in data["service_classes"]:
        if service_class["name"] == "analytics":
            service_class |= {"ecn": "standard", "lossless": {"pfc_priority": 2}}
    return parse_intent(data)


def test_a_lossless_class_leaves_its_headroom_to_buffermgrd_and_is_released_intact(
    operated: RealController,
) -> None:
    """On a traditional-model switch with cable lengths buffermgrd (sonic-swss
    cfgmgr/buffermgr.cpp) writes a port's lossless groups from its ``pfc_enable``: sluice adds
    priority 2 with PFC, maps and watchdog and no group of its own; buffermgrd's
    ``BUFFER_PG|<port>|2-4`` is the headroom, and the release takes it away with the priority.
    The priority group counters the class reads, which this switch does not poll, are enabled
    through GCU (orchagent then names the groups in ``COUNTERS_PG_NAME_MAP``) and given back
    with the rest."""
    switch = operated.switch
    config = switch.db("CONFIG_DB")
    # The operator's ``pfcwd interval 200``: GCU adds a port's PFC_WD entry only beside a
    # PFC_WD table (docs/lossless.md, "A switch's first PFC watchdog").
    config.hset("PFC_WD|GLOBAL", "POLL_INTERVAL", "200")
    wait_for(
        "buffermgrd's lossless priority groups",
        lambda: all(config.exists(f"BUFFER_PG|{port}|3-4") for port in LEAF_PORTS),
    )
    original = config_db(switch)
    assert ("DEVICE_METADATA", "localhost") in original
    assert original[("DEVICE_METADATA", "localhost")].get("buffer_model") != "dynamic"
    lookup = original[("BUFFER_PG", "Ethernet0|3-4")]["profile"]  # pg_lossless_40000_5m_profile
    assert not {PG_DROP, PG_WATERMARK} & original.keys()  # no counterpoll on this switch
    counters = switch.db("COUNTERS_DB")
    assert not counters.exists("COUNTERS_PG_NAME_MAP")

    info = operated.roll_out(lossless_leaf(operated), allow_port_flaps=True)
    assert info.state == "completed", (info.reason, [r.reason for r in info.results])
    wait_for(
        "buffermgrd's groups for priorities 2-4",
        lambda: all(config.exists(f"BUFFER_PG|{port}|2-4") for port in MANAGED_PORTS),
    )
    running = config_db(switch)
    for port in MANAGED_PORTS:
        qos = running[("PORT_QOS_MAP", port)]
        assert (qos["pfc_enable"], qos["pfcwd_sw_enable"]) == ("2,3,4", "2,3,4")
        assert running[("BUFFER_PG", f"{port}|2-4")] == {"profile": lookup}
        assert running[("BUFFER_PG", f"{port}|3-4")] == original[("BUFFER_PG", f"{port}|3-4")]
        assert running[("QUEUE", f"{port}|2")]["wred_profile"] == "SLUICE_DCQCN_Q2"
        assert ("PFC_WD", port) in running
    groups = {k for t, k in original if t == "BUFFER_PG"}
    added = sorted(k for t, k in running if t == "BUFFER_PG" and k not in groups)
    assert added == sorted(f"{port}|2-4" for port in MANAGED_PORTS)  # buffermgrd's, no other
    assert not [k for t, k in running if t == "BUFFER_PROFILE" and k.startswith("SLUICE_pg")]
    assert running[PG_DROP] == running[PG_WATERMARK] == {"FLEX_COUNTER_STATUS": "enable"}
    wait_for("orchagent's priority group map", lambda: counters.exists("COUNTERS_PG_NAME_MAP") > 0)
    # The drift repair judges the port as the rollout did: buffermgrd's group is no drift.
    reconciler = ReconcileService(
        operated.sessions, clock=operated.clock, rand=random.Random(5).random
    )
    reconciler.loop(operated.access()).run_pass()
    runs = {run.switch: run for run in reconciler.last_runs()}
    assert (runs["leaf1"].status, runs["leaf1"].drift_count) == ("converged", 0)

    releases = ReleaseService(operated.sessions, clock=operated.clock)
    asked = releases.request("leaf1", allow_port_flaps=True, actor=OPERATOR)
    assert asked.plan is not None
    assert {(op.kind, op.table, op.key) for op in asked.plan.ops} >= {
        ("delete", "BUFFER_PG", f"{port}|2-4") for port in MANAGED_PORTS
    }
    polled = [group_status(switch, group) for group in PG_GROUPS]
    assert polled == ["enable", "enable"]
    assert releases.run_pending(operated.access()) == 1
    done = releases.get(asked.id or 0)
    assert done.state == "released", done.reason
    assert config_db(switch) == original
    # orchagent ignores the entries' delete; the disable sluice wrote first stopped the polls.
    wait_for(
        "orchagent's priority group polls disabled",
        lambda: [group_status(switch, group) for group in PG_GROUPS] == ["disable", "disable"],
    )
