"""``vsonic up --inventory``: reading the switches to start from an intent-shaped file."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsonic.inventory import InventoryError, load_inventory, parse_port_list, specs_from
from vsonic.seed import PortSeed

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "example-intent.yaml"


def test_the_example_intent_gives_its_four_switches_ports_and_gnmi_ports() -> None:
    specs = load_inventory(EXAMPLE)
    assert [(s.name, s.gnmi_port, s.role) for s in specs] == [
        ("leaf1", 50051, "leaf"),
        ("leaf2", 50052, "leaf"),
        ("spine1", 50053, "spine"),
        ("spine2", 50054, "spine"),
    ]
    assert specs[0].port_list() == [
        "Ethernet0:25",
        "Ethernet4:25",
        "Ethernet48:100",
        "Ethernet52:100",
    ]
    assert specs[2].ports == (PortSeed("Ethernet0", 100), PortSeed("Ethernet4", 100))


def switch(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "sw1",
        "gnmi": {"address": "127.0.0.1", "port": 50051},
        "ports": [{"name": "Ethernet0", "speed_gbps": 25}],
    }
    return {**base, **overrides}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "no 'switches' list"),
        ({"switches": [switch(name="bad name")]}, "switches[0].name"),
        ({"switches": [switch(gnmi={"port": 70000})]}, "switches[0].gnmi.port"),
        ({"switches": [switch(gnmi={"address": "10.0.0.1", "port": 1})]}, "serves on 127.0.0.1"),
        ({"switches": [switch(ports=[])]}, "'ports' must be a non-empty list"),
        ({"switches": [switch(ports=[{"name": "eth0", "speed_gbps": 1}])]}, "NAME:GBPS"),
        ({"switches": [switch(ports=[{"name": "Ethernet0"}])]}, "ports[0]: 'speed_gbps'"),
        ({"switches": [switch(), switch()]}, "names must be unique"),
        ({"switches": [switch(), switch(name="sw2")]}, "gNMI ports must be unique"),
    ],
)
def test_bad_inventories_name_the_switch_and_field(document: object, message: str) -> None:
    with pytest.raises(InventoryError, match=message.replace("[", r"\[").replace("]", r"\]")):
        specs_from(document)


def test_port_lists_round_trip() -> None:
    assert parse_port_list(["Ethernet0:25", "Ethernet100:400"]) == (
        PortSeed("Ethernet0", 25),
        PortSeed("Ethernet100", 400),
    )
    with pytest.raises(InventoryError):
        parse_port_list(["Ethernet0:0"])
