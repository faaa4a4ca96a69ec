"""Each port's cable length for lossless headroom: declared, the switch's CABLE_LENGTH, the
LLDP peer's, or the fabric default (docs/lossless.md, "Cable lengths").

The intent is tests/unit/intent's sample with storage lossless on priority 3: leaf1 and leaf2,
each Ethernet0 at 25 Gb/s and Ethernet4 at 100 Gb/s, fabric default 5 m. Both leaves' Ethernet4
go up to spine1 (discovered, not in the intent).
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.accept import accept_sized
from controller.errors import IntentInvalid
from controller.intent.capacity import lossless_buffers_fit
from controller.intent.loader import intent_shape, parse_intent
from controller.intent.models import Intent
from controller.sonic.cables import (
    CableFinding,
    CableSource,
    PortCable,
    resolve_cables,
    sized_intent,
    stale_headroom,
)
from controller.sonic.compile import compile_switch
from controller.sonic.discovery import DiscoveredPort, Discovery, Neighbour
from tests.unit.intent.intents import intent_data
from tests.unit.intent.test_lossless_intent import lossless_data
from tests.unit.sonic.test_compile import only


def found(switch: str, cables: dict[str, float | None], *links: tuple[str, str, str]) -> Discovery:
    """A switch's discovery: its ports at 100 Gb/s with ``cables`` (``CABLE_LENGTH``, None:
    no entry) and LLDP neighbours (local port, peer switch, peer port)."""
    ports = tuple(DiscoveredPort(name, 100_000, cable_m=metres) for name, metres in cables.items())
    qos = {("CABLE_LENGTH", "AZURE"): {p: f"{m:g}m" for p, m in cables.items() if m is not None}}
    return Discovery(
        switch,
        switch,
        None,
        None,
        "traditional",
        None,
        ports,
        tuple(Neighbour(port, peer, peer_port) for port, peer, peer_port in links),
        qos,
    )


def fabric(
    leaf1: dict[str, float | None], leaf2: dict[str, float | None], spine1: dict[str, float | None]
) -> dict[str, Discovery]:
    """leaf1:Ethernet4 - spine1:Ethernet0, leaf2:Ethernet4 - spine1:Ethernet4."""
    return {
        "leaf1": found("leaf1", leaf1, ("Ethernet4", "spine1", "Ethernet0")),
        "leaf2": found("leaf2", leaf2, ("Ethernet4", "spine1", "Ethernet4")),
        "spine1": found(
            "spine1",
            spine1,
            ("Ethernet0", "leaf1", "Ethernet4"),
            ("Ethernet4", "leaf2", "Ethernet4"),
        ),
    }


def lossless(**port_changes: Any) -> Intent:
    data = lossless_data()
    data["switches"][0]["ports"][1] |= port_changes
    return parse_intent(data)


def test_the_switchs_own_cable_length_is_taken_where_nothing_is_declared() -> None:
    discovered = fabric({"Ethernet0": 40, "Ethernet4": None}, {}, {"Ethernet0": None})
    sizing = resolve_cables(lossless(), discovered)
    assert sizing.ports[("leaf1", "Ethernet0")] == PortCable(
        "leaf1", "Ethernet0", 40, CableSource.CABLE_LENGTH
    )
    assert sizing.ports[("leaf1", "Ethernet0")].describe() == "40 m from CABLE_LENGTH"
    # Neither end of leaf1's uplink knows it; leaf2 was not discovered at all.
    assert sizing.ports[("leaf1", "Ethernet4")] == PortCable(
        "leaf1", "Ethernet4", 5, CableSource.DEFAULT, "spine1:Ethernet0"
    )
    assert sizing.ports[("leaf2", "Ethernet0")].describe() == "5 m fabric default"
    assert sizing.findings == ()


def test_a_declared_length_wins_over_what_the_switches_say() -> None:
    discovered = fabric({"Ethernet4": 40}, {}, {"Ethernet0": 300})
    sizing = resolve_cables(lossless(cable_length_m=3), discovered)
    assert sizing.ports[("leaf1", "Ethernet4")] == PortCable(
        "leaf1", "Ethernet4", 3, CableSource.INTENT
    )
    assert sizing.ports[("leaf1", "Ethernet4")].describe() == "3 m declared"
    assert sizing.findings == ()  # a declared length is not compared


def test_the_peer_ends_length_is_taken_where_the_switch_has_none() -> None:
    discovered = fabric({"Ethernet4": None}, {"Ethernet4": None}, {"Ethernet0": 30, "Ethernet4": 2})
    sizing = resolve_cables(lossless(), discovered)
    assert sizing.ports[("leaf1", "Ethernet4")] == PortCable(
        "leaf1", "Ethernet4", 30, CableSource.PEER, "spine1:Ethernet0"
    )
    assert sizing.ports[("leaf1", "Ethernet4")].describe() == (
        "30 m from spine1:Ethernet0's CABLE_LENGTH"
    )
    assert sizing.ports[("leaf2", "Ethernet4")].metres == 2
    assert sizing.ports[("leaf2", "Ethernet4")].source is CableSource.PEER


def test_ends_that_disagree_give_the_longer_and_name_the_shorter_once() -> None:
    # leaf1's end says 10 m, spine1's 30 m; leaf2's end says 50 m, spine1's 20 m.
    discovered = fabric({"Ethernet4": 10}, {"Ethernet4": 50}, {"Ethernet0": 30, "Ethernet4": 20})
    sizing = resolve_cables(lossless(), discovered)
    assert sizing.ports[("leaf1", "Ethernet4")].metres == 30
    assert sizing.ports[("leaf1", "Ethernet4")].source is CableSource.PEER
    assert sizing.ports[("leaf2", "Ethernet4")].metres == 50
    assert sizing.ports[("leaf2", "Ethernet4")].source is CableSource.CABLE_LENGTH
    assert sizing.findings == (
        CableFinding(
            "leaf1",
            "Ethernet4",
            "CABLE_LENGTH|AZURE.Ethernet4",
            "leaf1:Ethernet4 says 10 m, spine1:Ethernet0 30 m for one cable: headroom sized "
            "for the longer, 30 m",
        ),
        CableFinding(
            "spine1",
            "Ethernet4",
            "CABLE_LENGTH|AZURE.Ethernet4",
            "leaf2:Ethernet4 says 50 m, spine1:Ethernet4 20 m for one cable: headroom sized "
            "for the longer, 50 m",
        ),
    )


def test_a_link_with_both_ends_in_the_intent_is_one_finding() -> None:
    data = lossless_data()
    data["switches"][1]["ports"][1]["name"] = "Ethernet8"
    discovered = {
        "leaf1": found("leaf1", {"Ethernet4": 7}, ("Ethernet4", "leaf2", "Ethernet8")),
        "leaf2": found("leaf2", {"Ethernet8": 12}, ("Ethernet8", "leaf1", "Ethernet4")),
    }
    sizing = resolve_cables(parse_intent(data), discovered)
    assert sizing.ports[("leaf1", "Ethernet4")].metres == 12
    assert sizing.ports[("leaf2", "Ethernet8")].metres == 12
    assert [(f.switch, f.port) for f in sizing.findings] == [("leaf1", "Ethernet4")]


def test_a_length_out_of_range_is_not_used_and_is_named() -> None:
    discovered = fabric({"Ethernet0": 0, "Ethernet4": 20_000}, {}, {"Ethernet0": 8})
    sizing = resolve_cables(lossless(), discovered)
    assert sizing.ports[("leaf1", "Ethernet0")].source is CableSource.DEFAULT
    assert sizing.ports[("leaf1", "Ethernet4")] == PortCable(
        "leaf1", "Ethernet4", 8, CableSource.PEER, "spine1:Ethernet0"
    )
    assert [(f.port, f.field) for f in sizing.findings] == [
        ("Ethernet0", "CABLE_LENGTH|AZURE.Ethernet0"),
        ("Ethernet4", "CABLE_LENGTH|AZURE.Ethernet4"),
    ]
    assert "reports a 20000 m cable, outside (0, 10000] m: not used" in sizing.findings[1].reason


def test_an_intent_without_a_lossless_class_is_not_sized() -> None:
    discovered = fabric({"Ethernet4": 40}, {}, {})
    intent = parse_intent(intent_data())
    sizing = resolve_cables(intent, discovered)
    assert sizing.ports == {}
    assert sized_intent(intent, sizing) is intent


def test_nothing_discovered_leaves_the_intent_as_it_is() -> None:
    intent = lossless()
    sizing = resolve_cables(intent, {})
    assert {c.source for c in sizing.ports.values()} == {CableSource.DEFAULT}
    assert sized_intent(intent, sizing) is intent


def test_the_sized_intent_compiles_the_discovered_length_into_the_profile() -> None:
    intent = lossless()
    discovered = fabric({"Ethernet0": None, "Ethernet4": 40}, {}, {})
    sized = sized_intent(intent, resolve_cables(intent, discovered))
    assert [p.cable_length_m for p in sized.switches[0].ports] == [None, 40]
    assert sized.switches[1] == intent.switches[1]
    groups = only(compile_switch(sized, sized.switches[0]), "BUFFER_PG")
    assert groups["Ethernet4|3"] == {"profile": "SLUICE_pg_lossless_100000_40m_mtu1500_profile"}
    assert groups["Ethernet0|3"] == {"profile": "SLUICE_pg_lossless_25000_5m_mtu1500_profile"}
    before = only(compile_switch(intent, intent.switches[0]), "BUFFER_PG")
    assert before["Ethernet4|3"] == {"profile": "SLUICE_pg_lossless_100000_5m_mtu1500_profile"}


def test_the_fit_check_sizes_headroom_for_the_discovered_length() -> None:
    # 10 km at 100 Gb/s does not fit the 2 000 000 B buffer (test_lossless_intent's worked
    # case): the intent alone passes, sized for leaf1's CABLE_LENGTH it is refused.
    intent = lossless()
    discovered = fabric({"Ethernet4": 10_000}, {}, {})
    assert lossless_buffers_fit(intent) == []
    problems = lossless_buffers_fit(sized_intent(intent, resolve_cables(intent, discovered)))
    assert [p.path for p in problems] == ["switches[0].ports[1].buffer_bytes"]
    assert "HeadroomDoesNotFit: leaf1 Ethernet4" in problems[0].reason


def test_a_version_sized_before_a_discovery_is_named_stale_port_by_port() -> None:
    intent = lossless()
    stored = {"leaf1": compile_switch(intent, intent.switches[0])}  # written at 5 m
    discovered = fabric({"Ethernet0": None, "Ethernet4": 40}, {}, {})
    sizing = resolve_cables(intent, discovered)
    problems = stale_headroom(intent, sizing, stored, 7)
    assert [p.path for p in problems] == ["switches.leaf1.ports.Ethernet4"]
    assert problems[0].reason == (
        "version 7 sizes its headroom for SLUICE_pg_lossless_100000_5m_mtu1500_profile; the "
        "switches now report 40 m from CABLE_LENGTH: write the intent again to size it for that"
    )
    sized = sized_intent(intent, sizing)
    resized = {"leaf1": compile_switch(sized, sized.switches[0])}
    assert stale_headroom(intent, sizing, resized, 8) == []


def test_accepting_sizes_for_the_discovered_cable_and_says_so_when_it_does_not_fit() -> None:
    data = lossless_data()
    discovered = fabric({"Ethernet4": 10_000}, {}, {})
    with pytest.raises(IntentInvalid) as refused:
        accept_sized(data, lambda _: discovered)
    (problem,) = refused.value.problems
    assert problem.path == "switches[0].ports[1].buffer_bytes"
    assert problem.reason.startswith("HeadroomDoesNotFit: leaf1 Ethernet4")
    assert problem.reason.endswith("(cable 10000 m from CABLE_LENGTH)")
    # A short discovered cable is accepted where the fabric default would not fit.
    data["fabric"]["lossless"]["cable_length_m"] = 10_000
    with pytest.raises(IntentInvalid):
        accept_sized(data, lambda _: {})
    short = {name: found(name, {"Ethernet0": 3, "Ethernet4": 3}) for name in ("leaf1", "leaf2")}
    accepted = accept_sized(data, lambda _: short)
    assert accepted.intent == intent_shape(data)  # stored as written, no length added
    assert accepted.cables.ports[("leaf2", "Ethernet4")].describe() == "3 m from CABLE_LENGTH"
    groups = only(accepted.compiled["leaf2"], "BUFFER_PG")
    assert groups["Ethernet4|3"] == {"profile": "SLUICE_pg_lossless_100000_3m_mtu1500_profile"}
