"""The pure parts of ``sluice discover``, ``sluice release`` and a plan's ownership lines."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from controller.cli.adopting import parse_endpoint, port_rows
from controller.cli.render import FIELDS_SHOWN, ownership_lines


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("leaf9=10.0.0.9:8080", ("leaf9", "10.0.0.9", 8080)),
        ("leaf9=[::1]:50051", ("leaf9", "::1", 50051)),
        ("leaf9=sw9.example.net:1", ("leaf9", "sw9.example.net", 1)),
    ],
)
def test_an_endpoint_is_a_name_a_host_and_a_port(given: str, parsed: tuple[str, str, int]) -> None:
    assert parse_endpoint(given) == parsed


@pytest.mark.parametrize(
    "given", ["10.0.0.9:8080", "leaf9=10.0.0.9", "=10.0.0.9:1", "leaf9=:80", "leaf9=h:0", "a=h:x"]
)
def test_a_malformed_endpoint_is_a_usage_error(given: str) -> None:
    with pytest.raises(typer.BadParameter):
        parse_endpoint(given)


def owner(
    field: str, who: str, value: str | None, saved: str | None = None, source: str | None = None
) -> dict[str, Any]:
    return {"field": field, "owner": who, "value": value, "saved": saved, "source": source}


def test_ownership_names_the_operators_fields_overwritten_and_kept() -> None:
    op = {
        "ownership": [
            owner("dscp_to_tc_map", "operator_overwritten", "SLUICE_AZURE", saved="AZURE"),
            owner("pfc_enable", "operator_kept", "3,4", saved="3,4"),
            owner("tc_to_queue_map", "sluice", "SLUICE"),
        ]
    }
    assert ownership_lines(op) == [
        "operator's, overwritten (saved): dscp_to_tc_map=AZURE",
        "operator's, kept: pfc_enable=3,4",
    ]


def test_a_merged_maps_inherited_fields_are_counted_by_source() -> None:
    op = {
        "ownership": [owner(str(d), "operator_kept", "1", source="AZURE") for d in range(61)]
        + [owner("46", "sluice", "5")]
    }
    assert ownership_lines(op) == ["operator's, kept from AZURE: 61 field(s)"]


def test_long_lists_are_cut_and_say_how_many_more() -> None:
    many = FIELDS_SHOWN + 3
    op = {"ownership": [owner(f"f{i}", "operator_kept", "v") for i in range(many)]}
    (line,) = ownership_lines(op)
    assert line.endswith("(+3 more)")
    assert line.count("=v") == FIELDS_SHOWN


def test_a_switch_without_operator_config_shows_no_ownership() -> None:
    assert ownership_lines({"fields": {"a": "1"}}) == []


def test_port_rows_join_each_port_with_its_neighbour() -> None:
    found = {
        "switch": "leaf1",
        "ports": [
            {"name": "Ethernet0", "speed_gbps": 25, "admin_status": "up", "oper_status": "up",
             "breakout_mode": "1x100G[40G]", "cable_m": 5.0},
            {"name": "Ethernet4", "speed_gbps": None, "admin_status": "down"},
        ],
        "neighbours": [{"port": "Ethernet0", "system_name": "spine1", "port_id": "Ethernet0"}],
    }  # fmt: skip
    assert port_rows([found]) == [
        ("leaf1", "Ethernet0", "25G", "up", "up", "1x100G[40G]", "5m", "spine1 Ethernet0"),
        ("leaf1", "Ethernet4", "-", "down", "-", "-", "-", "-"),
    ]
