"""A lossless class in the twin: the example intent with its storage class lossless, as netsim
gets it (PFC thresholds from the compiled profile, DCQCN's ramp and senders) and as the
result reads netsim's PFC counts back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.intent.loader import dump_intent, load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.sonic.compile import compile_switch
from controller.twin.results import lossless_lines, result
from controller.twin.translate import Request, translate
from tests.support.lossless import with_lossless_storage

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


@pytest.fixture(scope="module")
def intent() -> Intent:
    return with_lossless_storage(load_intent_file(EXAMPLE))


def _compiled(intent: Intent, switch: str, port: str) -> tuple[dict[str, str], int]:
    """The port's compiled lossless BUFFER_PROFILE fields and its buffer."""
    found = next(s for s in intent.switches if s.name == switch)
    config = compile_switch(intent, found)
    # the lossless groups' key: <port>|3, or a range such as <port>|2-3
    (profile,) = {
        fields["profile"]
        for (table, key), fields in config.items()
        if table == "BUFFER_PG" and key.startswith(f"{port}|")
    }
    buffer = next(p.buffer_bytes for p in found.ports if p.name == port)
    return dict(config[("BUFFER_PROFILE", profile)]), buffer or intent.fabric.port_buffer_bytes


@pytest.mark.parametrize(
    ("kind", "switch", "port"),
    [
        ("leaf_down", "leaf1", "Ethernet0"),
        ("leaf_up", "leaf1", "Ethernet48"),
        ("spine", "spine1", "Ethernet0"),
    ],
)
def test_pfc_thresholds_are_the_compiled_profiles(
    intent: Intent, kind: str, switch: str, port: str
) -> None:
    lossless = translate(intent, Request()).config["qos"]["lossless"]
    pfc = lossless["pfc_ports"][kind]
    fields, buffer = _compiled(intent, switch, port)
    # Headroom above the XOFF point is the profile's xoff; RESUME its xon below it. The XOFF
    # point is the group's share of the pool the headroom leaves: one lossless group at
    # dynamic_th 0 (alpha 1) holds alpha / (1 + alpha) = half of it.
    assert pfc["headroom_bytes"] == int(fields["xoff"])
    assert pfc["xoff_bytes"] == (buffer - int(fields["size"])) // 2
    assert pfc["xoff_bytes"] - pfc["xon_bytes"] == int(fields["xon"])


def test_the_ports_kinds_differ_as_their_speeds_and_buffers_do(intent: Intent) -> None:
    pfc = translate(intent, Request()).config["qos"]["lossless"]["pfc_ports"]
    # 25 Gb/s host ports need less headroom than 100 Gb/s uplinks; the spines' 4 MB buffer
    # puts their XOFF point higher.
    assert pfc["leaf_down"]["headroom_bytes"] < pfc["leaf_up"]["headroom_bytes"]
    assert pfc["spine"]["xoff_bytes"] > pfc["leaf_up"]["xoff_bytes"]


def test_the_class_flows_are_dcqcn_senders_on_its_ramp(intent: Intent) -> None:
    twin = translate(intent, Request())
    qos = twin.config["qos"]
    lossless = qos["lossless"]
    # storage's DSCPs go to queue 3, the lossless queue, whose flows DCQCN sends.
    to_queue = dict(map(tuple, qos["tagging"]["dscp"]["dscp_to_queue"]))
    storage = next(c for c in intent.service_classes if c.name == "storage")
    assert {to_queue[d] for d in storage.dscp} == {3}
    assert lossless["queues"] == [3]
    assert lossless["dcqcn"] == {}
    assert twin.lossless == (("storage", 3),)
    # The ramp is the compiled WRED_PROFILE of the lossless queue.
    config = compile_switch(intent, intent.switches[0])
    wred = config[("WRED_PROFILE", "SLUICE_DCQCN_Q3")]
    assert lossless["ecn"] == {
        "kmin_bytes": int(wred["green_min_threshold"]),
        "kmax_bytes": int(wred["green_max_threshold"]),
        "pmax_pct": int(wred["green_drop_probability"]),
    }
    assert any("CNPs go back in the lossless class's own queue" in n for n in twin.not_modelled)


def test_the_links_are_the_cables_and_the_hosts_take_the_rest_of_the_rtt(intent: Intent) -> None:
    topo = translate(intent, Request()).config["topology"]
    # Every port on the platform's default 5 m: 5 / 198 000 000 m/s = 25.25 ns a link.
    cable_ns = 5 / 198_000_000 * 1e9
    assert topo["host_link_delay_ns"] == pytest.approx(cable_ns)
    assert topo["fabric_link_delay_ns"] == pytest.approx(cable_ns)
    # Across the spine: 4 host-link and 4 fabric-link crossings and a host at each end.
    rtt_ns = 4 * (topo["host_link_delay_ns"] + topo["fabric_link_delay_ns"])
    assert rtt_ns + 2 * topo["host_delay_ns"] == pytest.approx(intent.fabric.base_rtt_us * 1e3)
    # A lossy intent's links are an eighth of the round trip each, as before.
    lossy = translate(load_intent_file(EXAMPLE), Request()).config["topology"]
    assert lossy["host_link_delay_ns"] == intent.fabric.base_rtt_us * 1e3 / 8
    assert "host_delay_ns" not in lossy


def test_the_lossless_queue_gets_the_compiled_static_egress_limit(intent: Intent) -> None:
    def limits(intent: Intent) -> set[int]:
        return {
            int(fields["static_th"])
            for switch in intent.switches
            for (table, key), fields in compile_switch(intent, switch).items()
            if table == "BUFFER_PROFILE" and key.startswith("SLUICE_egress_lossless_")
        }

    twin = translate(intent, Request())
    (alike,) = limits(intent)  # every switch's port buffers sum alike
    assert twin.config["qos"]["lossless"]["egress_static_th_bytes"] == alike
    assert not any("lossless egress limits differ" in n for n in twin.not_modelled)
    # A larger buffer on one of leaf2's ports: the smallest limit, and said so.
    data: dict[str, Any] = dump_intent(intent)
    data["switches"][1]["ports"][0]["buffer_bytes"] = 8_000_000
    larger = parse_intent(data)
    twin = translate(larger, Request())
    assert len(limits(larger)) == 2
    assert twin.config["qos"]["lossless"]["egress_static_th_bytes"] == min(limits(larger))
    assert any("lossless egress limits differ" in n for n in twin.not_modelled)


def test_cnps_ride_the_queue_the_switches_map_their_dscp_to(intent: Intent) -> None:
    assert translate(intent, Request()).config["qos"]["lossless"]["cnp_queue"] is None
    data: dict[str, Any] = dump_intent(intent)
    data["fabric"]["lossless"]["cnp"] = {}  # DSCP 48: the control class's, queue 7
    twin = translate(parse_intent(data), Request())
    assert twin.config["qos"]["lossless"]["cnp_queue"] == 7
    assert not any("CNPs go back" in n for n in twin.not_modelled)


def test_host_ports_on_longer_cables_are_sized_as_the_twin_s_chosen_port(
    intent: Intent,
) -> None:
    # leaf2's host ports on 100 m cables: the leaf_down kind runs as leaf1's first (5 m), said.
    leaf2 = next(s for s in intent.switches if s.name == "leaf2")
    ports = tuple(
        p.model_copy(update={"cable_length_m": 100.0}) if p.speed_gbps == 25 else p
        for p in leaf2.ports
    )
    switches = tuple(
        s.model_copy(update={"ports": ports}) if s.name == "leaf2" else s for s in intent.switches
    )
    twin = translate(intent.model_copy(update={"switches": switches}), Request())
    pfc = twin.config["qos"]["lossless"]["pfc_ports"]["leaf_down"]
    fields, _ = _compiled(intent, "leaf1", "Ethernet0")
    assert pfc["headroom_bytes"] == int(fields["xoff"])
    assert any(
        note.startswith(
            "leaf_down ports have several (cable m, MTU B) [(5.0, 9100), (100.0, 9100)]"
        )
        for note in twin.not_modelled
    )


def test_two_lossless_classes_share_the_pool_as_compiled(intent: Intent) -> None:
    # analytics (queue 2) lossless on priority 2 beside storage: two groups per port, each
    # XOFF point alpha / (1 + 2 alpha) = a third of the pool two headrooms leave.
    data: dict[str, Any] = dump_intent(intent)
    analytics = next(c for c in data["service_classes"] if c["name"] == "analytics")
    analytics |= {"ecn": "standard", "lossless": {"pfc_priority": 2, "kmax_bytes": 150_000}}
    both = parse_intent(data)
    twin = translate(both, Request())
    lossless = twin.config["qos"]["lossless"]
    assert lossless["queues"] == [2, 3]
    assert twin.lossless == (("storage", 3), ("analytics", 2))
    fields, buffer = _compiled(both, "leaf1", "Ethernet0")
    pfc = lossless["pfc_ports"]["leaf_down"]
    assert pfc["xoff_bytes"] == (buffer - 2 * int(fields["size"])) // 3
    assert pfc["headroom_bytes"] == int(fields["xoff"])
    # netsim has one ramp: queue 2's (analytics, Kmax 150 KB), and it says so.
    assert lossless["ecn"]["kmax_bytes"] == 150_000
    assert any("netsim has one ramp" in note for note in twin.not_modelled)


def test_a_lossy_intent_has_no_lossless_queues() -> None:
    twin = translate(load_intent_file(EXAMPLE), Request())
    assert twin.config["qos"]["lossless"] is None
    assert twin.lossless == ()


def _stats(paused_ns: float, frames: int, overflows: int = 0) -> dict[str, float]:
    return {
        "pause_frames": frames,
        "resume_frames": frames,
        "paused_ns": paused_ns,
        "peak_bytes": 1000 * frames,
        "overflow_packets": overflows,
    }


def _summary(roce_drops: int, overflows: int = 0) -> dict[str, object]:
    """netsim's summary of a run with two lossless queues, 3 (storage) and 4 (roce), as
    report.rs writes its ``pfc``: storage paused and marked but lost nothing; roce lost
    ``roce_drops``, ``overflows`` of them past its headroom."""
    return {
        "classes": [{"name": "class 0", "flows": 3, "mean_us": 10.0}],
        "pfc": {
            "queues": [3, 4],
            "all": _stats(7_000.0, 5, overflows),
            "leaf_down": _stats(1_000.0, 1),
            "leaf_up": _stats(2_000.0, 2),
            "spine": _stats(4_000.0, 2),
            "lossless_dropped_packets": roce_drops,
            "cnps": 42,
            "by_queue": [
                {
                    "queue": 3,
                    "groups": _stats(6_000.0, 4),
                    "lossless_dropped_packets": 0,
                    "cnps": 40,
                },
                {
                    "queue": 4,
                    "groups": _stats(1_000.0, 1, overflows),
                    "lossless_dropped_packets": roce_drops,
                    "cnps": 2,
                },
            ],
        },
    }


LOSSLESS = (("storage", 3), ("roce", 4))


def test_the_result_reports_each_lossless_class_and_names_a_loss() -> None:
    clean = result(_summary(0), ("storage", "roce"), (), LOSSLESS)
    figures = clean["lossless"]
    assert figures["classes"] == [
        {
            "name": "storage",
            "queue": 3,
            "drops": 0,
            "headroom_overflows": 0,
            "pause_frames": 4,
            "resume_frames": 4,
            "paused_us": 6.0,
            "peak_group_bytes": 4000,
            "cnps": 40,
        },
        {
            "name": "roce",
            "queue": 4,
            "drops": 0,
            "headroom_overflows": 0,
            "pause_frames": 1,
            "resume_frames": 1,
            "paused_us": 1.0,
            "peak_group_bytes": 1000,
            "cnps": 2,
        },
    ]
    assert (figures["drops"], figures["pause_frames"], figures["paused_us"]) == (0, 5, 7.0)
    assert figures["cnps"] == 42
    assert figures["paused_us_by_port"] == {"leaf_down": 1.0, "leaf_up": 2.0, "spine": 4.0}
    assert clean["findings"] == []
    lossy = result(_summary(12, overflows=5), ("storage", "roce"), (), LOSSLESS)
    assert lossy["findings"] == [
        "lossless class roce lost 12 packets in the switches (5 past a priority group's "
        "headroom, 7 at an egress queue: its buffer, or its DCQCN ramp dropping what is not "
        "ECN-capable, as CNPs are); a lossless class must lose none"
    ]
    header, storage, roce, paused = lossless_lines(lossy["lossless"])
    assert header.split() == ["lossless", "drops", "paused", "µs", "PAUSE", "CNPs"]
    assert storage.split() == ["storage", "0", "6.0", "4", "40"]
    assert roce.split() == ["roce", "12", "1.0", "1", "2"]
    assert "1.0 µs by leaf host ports" in paused
    assert "6.0 µs by fabric ports" in paused
    # Without lossless classes netsim's pfc (none) is not read.
    assert result(_summary(12), ("storage",), ())["lossless"] is None
