"""Discovery: a switch's tables into ports, neighbours and QoS config; the declared ports
checked against it; the fabric's links, base RTT and inventory."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.sonic.discovery import (
    Discovery,
    SwitchRead,
    cable_lengths,
    discover,
    port_problems,
    ports_of,
)
from controller.sonic.model import SwitchConfig
from controller.sonic.topology import (
    ACK_FRAME_BYTES,
    FIBRE_M_PER_S,
    estimate_rtt,
    inventory,
    topology,
)
from tests.unit.sonic import intents as t
from vsonic.seed import Neighbour, lldp_entry, operator_qos_config


def config(hostname: str, ports: dict[str, int], cable: str = "5m") -> SwitchConfig:
    """A switch's CONFIG_DB: metadata, ports (speed in Gb/s), and the td2 QoS config."""
    found: SwitchConfig = {
        ("DEVICE_METADATA", "localhost"): {
            "hostname": hostname,
            "hwsku": "Force10-S6000",
            "platform": "x86_64-dell_s6000_s1220-r0",
            "buffer_model": "traditional",
            "type": "ToRRouter",
        }
    }
    for i, (name, gbps) in enumerate(ports.items()):
        found[("PORT", name)] = {
            "speed": str(gbps * 1000),
            "lanes": ",".join(str(4 * i + lane) for lane in range(4)),
            "alias": f"fortyGigE0/{4 * i}",
            "admin_status": "up",
        }
        found[("BREAKOUT_CFG", name)] = {"brkout_mode": "1x40G[10G]"}
    for table, entries in operator_qos_config(list(ports), cable).items():
        for key, fields in entries.items():
            found[(table, key)] = dict(fields)
    return found


def lldp(*neighbours: Neighbour) -> dict[str, dict[str, str]]:
    return {n.port: lldp_entry(n, i) for i, n in enumerate(neighbours)}


def read(
    hostname: str, ports: dict[str, int], *neighbours: Neighbour, cable: str = "5m"
) -> SwitchRead:
    state = {name: {"oper_status": "up"} for name in ports}
    mgmt = {"eth0": {"lldp_rem_sys_name": "oob-switch", "lldp_rem_port_id": "ge-0/0/1"}}
    return SwitchRead(config(hostname, ports, cable), state, {**lldp(*neighbours), **mgmt}, 3)


def test_a_switch_read_becomes_its_ports_neighbours_and_qos_config() -> None:
    found = discover(
        "leaf1",
        read(
            "leaf1",
            {"Ethernet0": 40, "Ethernet4": 40},
            Neighbour("Ethernet4", "spine1", "Ethernet0"),
        ),
    )
    assert (found.hostname, found.hwsku, found.buffer_model, found.device_type) == (
        "leaf1",
        "Force10-S6000",
        "traditional",
        "ToRRouter",
    )
    port = found.port("Ethernet4")
    assert port is not None
    assert (port.speed_mbps, port.lanes, port.admin_status, port.oper_status) == (
        40000,
        (4, 5, 6, 7),
        "up",
        "up",
    )
    assert (port.breakout_mode, port.cable_m, port.alias) == ("1x40G[10G]", 5.0, "fortyGigE0/4")
    # The management port's neighbour is not a fabric port's.
    assert [(n.port, n.system_name, n.port_id) for n in found.neighbours] == [
        ("Ethernet4", "spine1", "Ethernet0")
    ]
    assert found.lossless() == {"Ethernet0": [3, 4], "Ethernet4": [3, 4]}
    assert found.qos_counts()["QUEUE"] == 14
    assert ("PORT", "Ethernet0") not in found.qos
    assert ("CABLE_LENGTH", "AZURE") in found.qos
    assert found.gets == 3
    assert Discovery.from_json(found.as_json()) == found


def test_ports_are_ordered_by_number_and_only_ethernet() -> None:
    seen = ports_of(
        {
            ("PORT", "Ethernet100"): {"speed": "100000"},
            ("PORT", "Ethernet8"): {"speed": "25000"},
            ("PORT", "Ethernet-Rec0"): {"speed": "400000"},
        }
    )
    assert list(seen) == ["Ethernet8", "Ethernet100"]
    assert seen["Ethernet8"].admin_status == "down"  # sonic-port.yang's default
    assert cable_lengths({("CABLE_LENGTH", "AZURE"): {"Ethernet0": "300m", "Ethernet4": "x"}}) == {
        "Ethernet0": 300.0
    }


def test_declared_ports_are_checked_port_by_port() -> None:
    switch = t.switch(ports=(("Ethernet0", 25), ("Ethernet4", 100), ("Ethernet8", 100)))
    ports = ports_of(config("leaf1", {"Ethernet0": 100, "Ethernet4": 100}))
    problems = port_problems(switch, ports)
    assert [p.path for p in problems] == [
        "switches.leaf1.ports.Ethernet0.speed_gbps",
        "switches.leaf1.ports.Ethernet8",
    ]
    assert "declared 25 Gb/s, the switch runs 100 Gb/s" in problems[0].reason
    assert "no such port" in problems[1].reason
    good = t.switch(ports=(("Ethernet0", 100), ("Ethernet4", 100)))
    assert port_problems(good, ports) == []


def fabric() -> list[Discovery]:
    """Two leaves (two 25G host ports each, one 100G uplink) under one spine."""
    leaf1 = discover(
        "leaf1",
        read(
            "leaf1",
            {"Ethernet0": 25, "Ethernet4": 25, "Ethernet48": 100},
            Neighbour("Ethernet0", "host1", "eth0"),
            Neighbour("Ethernet48", "spine1", "fortyGigE0/0"),  # the peer's alias
        ),
    )
    leaf2 = discover(
        "leaf2",
        read(
            "leaf2",
            {"Ethernet0": 25, "Ethernet48": 100},
            Neighbour("Ethernet48", "spine1", "Ethernet4"),
            cable="40m",
        ),
    )
    spine = discover(
        "spine1",
        read(
            "spine1",
            {"Ethernet0": 100, "Ethernet4": 100},
            Neighbour("Ethernet0", "leaf1", "Ethernet48"),
            Neighbour("Ethernet4", "leaf2", "Ethernet48"),
        ),
    )
    return [leaf1, leaf2, spine]


def test_lldp_neighbours_become_links_and_host_ports() -> None:
    topo = topology(fabric())
    assert [(link.a, link.a_port, link.b, link.b_port) for link in topo.links] == [
        ("leaf1", "Ethernet48", "spine1", "Ethernet0"),
        ("leaf2", "Ethernet48", "spine1", "Ethernet4"),
    ]
    assert topo.links[1].cable_m == 40.0  # the longer of the two ends' CABLE_LENGTH
    assert topo.host_ports == {"leaf1": ("Ethernet0",), "leaf2": (), "spine1": ()}
    assert (topo.role("leaf1"), topo.role("spine1")) == ("leaf", "spine")


def test_the_rtt_estimate_follows_its_formula() -> None:
    """Without host LLDP, every up port that is not a fabric link faces hosts: the longest
    path is host-leaf1-spine1-leaf2-host, four links, three switches."""
    found = fabric()
    found[0] = replace(found[0], neighbours=found[0].neighbours[1:])
    topo = topology(found)
    rtt = estimate_rtt(topo, found, mtu_bytes=9100, per_hop_us=1.0)
    assert rtt is not None
    assert rtt.path == ("host", "leaf1", "spine1", "leaf2", "host")
    frame_bits = (9100 + ACK_FRAME_BYTES) * 8
    sending = 2 * frame_bits / 25e9 + 2 * frame_bits / 100e9
    cables = 2 * (5 + 5 + 40 + 40) / FIBRE_M_PER_S
    forwarding = 2 * 3 * 1.0e-6
    assert rtt.base_rtt_us == pytest.approx((sending + cables + forwarding) * 1e6, abs=1e-3)
    assert (rtt.links, rtt.switches, rtt.unknown_cables) == (4, 3, 0)
    slower = estimate_rtt(topo, found, mtu_bytes=9100, per_hop_us=2.0)
    assert slower is not None
    assert slower.base_rtt_us == pytest.approx(rtt.base_rtt_us + 6.0)


def test_the_inventory_is_intent_yaml_to_review() -> None:
    found = fabric()
    topo = topology(found)
    rtt = estimate_rtt(topo, found, mtu_bytes=9100)
    endpoints = {
        "leaf1": {"gnmi": {"address": "10.0.0.1", "port": 8080}, "credential_ref": "env:P"}
    }
    document = inventory(found, topo, endpoints, rtt)
    leaf1 = document["switches"][0]
    assert leaf1["name"] == "leaf1"
    assert leaf1["role"] == "leaf"
    assert leaf1["gnmi"] == {"address": "10.0.0.1", "port": 8080}
    assert leaf1["ports"] == [
        {"name": "Ethernet0", "speed_gbps": 25},
        {"name": "Ethernet4", "speed_gbps": 25},
        {"name": "Ethernet48", "speed_gbps": 100},
    ]
    assert document["fabric"] == {"base_rtt_us": rtt.base_rtt_us if rtt else None}


def test_a_discovery_keeps_its_dialect_and_an_entry_must_say_it() -> None:
    from controller.intent.loader import parse_intent
    from controller.intent.models import Dialect, Switch
    from controller.sonic.discovery import (
        Discovery,
        dialect_problems,
        inventory_problems,
        openconfig_discovery,
    )

    found = openconfig_discovery("oc1")
    assert Discovery.from_json(found.as_json()) == found
    legacy = {k: v for k, v in found.as_json().items() if k != "dialect"}
    assert Discovery.from_json(legacy).dialect is Dialect.SONIC  # recorded before dialects

    def switch(**extra: object) -> dict[str, object]:
        return {"name": "oc1", "role": "leaf", "credential_ref": "env:PW",
                "gnmi": {"address": "127.0.0.1", "port": 9},
                "ports": [{"name": "Ethernet0", "speed_gbps": 100}], **extra}  # fmt: skip

    def intent_switch(**extra: object) -> Switch:
        return parse_intent({
            "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
            "switches": [switch(**extra)],
            "service_classes": [{"name": "bulk", "dscp": [10], "queue": 1,
                                 "scheduling": {"type": "DWRR", "weight": 10}, "ecn": "off"}],
        }).switches[0]  # fmt: skip

    silent = intent_switch()
    (problem,) = inventory_problems(silent, found)
    assert problem.path == "switches.oc1.dialect"
    said = intent_switch(dialect="openconfig")
    assert inventory_problems(said, found) == []
    # The other way: an entry that says openconfig for a switch found speaking SONiC.
    sonic = replace(found, dialect=Dialect.SONIC)
    (wrong,) = dialect_problems(said, sonic)
    assert wrong.reason.startswith("declared openconfig;")
