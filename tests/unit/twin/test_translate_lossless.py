"""A lossless class in the twin: the example intent with its storage class lossless, as netsim
gets it (PFC thresholds from the compiled profile, DCQCN's ramp and senders) and as the
result reads netsim's PFC counts back."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.intent.loader import load_intent_file
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
    profile = config[("BUFFER_PG", f"{port}|3")]["profile"]
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
    assert twin.lossless == ("storage",)
    # The ramp is the compiled WRED_PROFILE of the lossless queue.
    config = compile_switch(intent, intent.switches[0])
    wred = config[("WRED_PROFILE", "SLUICE_DCQCN_Q3")]
    assert lossless["ecn"] == {
        "kmin_bytes": int(wred["green_min_threshold"]),
        "kmax_bytes": int(wred["green_max_threshold"]),
        "pmax_pct": int(wred["green_drop_probability"]),
    }
    assert any("PFC headroom is sized for the ports' cables" in n for n in twin.not_modelled)


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


def test_a_lossy_intent_has_no_lossless_queues() -> None:
    twin = translate(load_intent_file(EXAMPLE), Request())
    assert twin.config["qos"]["lossless"] is None
    assert twin.lossless == ()


def _summary(drops: int, overflows: int = 0) -> dict[str, object]:
    """netsim's summary of a run with one lossless queue (its ``pfc`` as report.rs writes it)."""

    def stats(paused_ns: float, frames: int) -> dict[str, float]:
        return {
            "pause_frames": frames,
            "resume_frames": frames,
            "paused_ns": paused_ns,
            "peak_bytes": 1000 * frames,
            "overflow_packets": overflows,
        }

    return {
        "classes": [{"name": "class 0", "flows": 3, "mean_us": 10.0}],
        "pfc": {
            "queues": [3],
            "all": stats(7_000.0, 5),
            "leaf_down": stats(1_000.0, 1),
            "leaf_up": stats(2_000.0, 2),
            "spine": stats(4_000.0, 2),
            "lossless_dropped_packets": drops,
            "cnps": 42,
        },
    }


def test_the_result_reports_pauses_and_cnps_and_names_a_lossless_loss() -> None:
    clean = result(_summary(0), ("storage",), (), ("storage",))
    assert clean["lossless"] == {
        "classes": ["storage"],
        "drops": 0,
        "headroom_overflows": 0,
        "pause_frames": 5,
        "resume_frames": 5,
        "paused_us": 7.0,
        "paused_us_by_port": {"leaf_down": 1.0, "leaf_up": 2.0, "spine": 4.0},
        "peak_group_bytes": 5000,
        "cnps": 42,
    }
    assert clean["findings"] == []
    lossy = result(_summary(12, overflows=5), ("storage",), (), ("storage",))
    assert lossy["findings"] == [
        "lossless class storage lost 12 packets in the switches (5 past a priority group's "
        "headroom, 7 at an egress queue: its buffer, or its DCQCN ramp dropping what is not "
        "ECN-capable, as CNPs are); a lossless class must lose none"
    ]
    header, row = lossless_lines(lossy["lossless"])
    assert row.split() == ["storage", "12", "7.0", "1.0", "6.0", "5", "42"]
    assert "drops" in header
    # Without lossless classes netsim's pfc (none) is not read.
    assert result(_summary(12), ("storage",), ())["lossless"] is None
