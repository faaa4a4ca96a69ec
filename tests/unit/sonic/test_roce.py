"""The RoCE check: both ends of every fabric link agree on lossless priorities, maps and MTU;
every lossless priority has headroom and a watchdog; each mismatch named on its end."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from controller.errors import Conflict
from controller.services.checks import roce_of
from controller.services.discoveries import DiscoveryInfo
from controller.sonic.model import SwitchConfig
from controller.sonic.roce import (
    DSCP_TO_TC,
    HEADROOM,
    MTU,
    PFC_PRIORITIES,
    PFC_TO_PG,
    PFC_TO_QUEUE,
    TC_TO_PG,
    UNREACHABLE,
    WATCHDOG,
    Finding,
    RoceCheck,
)
from tests.unit.sonic.roce_fabric import Alter, checked, discovered, drop, on


def named(check: RoceCheck) -> list[tuple[str, str, str, str, str]]:
    return [(f.kind, f.end, f.field, f.expected, f.found) for f in check.findings]


def link_of(check: RoceCheck, finding: Finding) -> tuple[str, str]:
    (link,) = [lk for lk in check.links if finding in lk.findings]
    return (f"{link.a}:{link.a_port}", f"{link.b}:{link.b_port}")


def test_a_fabric_whose_ends_agree_passes() -> None:
    check = checked(discovered())
    assert check.ok, named(check)
    assert len(check.links) == 4
    assert all(link.priorities == (3, 4) for link in check.links)
    # Every port has PFC on 3 and 4, host-facing ones too.
    assert len(check.ports) == 10
    assert check.as_json()["findings"] == 0


def test_a_pfc_priority_missing_on_one_end_is_named_on_that_end() -> None:
    check = checked(discovered(on("spine1", "PORT_QOS_MAP", "Ethernet0", pfc_enable="3")))
    assert named(check) == [
        (PFC_PRIORITIES, "spine1:Ethernet0", "PORT_QOS_MAP|Ethernet0.pfc_enable", "3,4", "3")
    ]
    finding = check.findings[0]
    assert link_of(check, finding) == ("leaf1:Ethernet48", "spine1:Ethernet0")
    assert "3,4 at leaf1:Ethernet48" in finding.reason
    assert [link.ok for link in check.links].count(False) == 1


@pytest.mark.parametrize(
    ("table", "entry", "value", "kind", "expected"),
    [
        ("DSCP_TO_TC_MAP", "4", "1", DSCP_TO_TC, "4"),
        ("TC_TO_PRIORITY_GROUP_MAP", "3", "0", TC_TO_PG, "3"),
        ("MAP_PFC_PRIORITY_TO_QUEUE", "4", "6", PFC_TO_QUEUE, "4"),
    ],
)
def test_a_map_entry_that_differs_is_named_on_each_link_of_that_switch(
    table: str, entry: str, value: str, kind: str, expected: str
) -> None:
    """leaf2's map (bound on all its ports) sends a lossless entry elsewhere: both its links
    name leaf2's end, the map's field and entry, what the fabric has and what leaf2 has."""
    check = checked(discovered(on("leaf2", table, "AZURE", **{entry: value})))
    field = f"{table}|AZURE.{entry}"
    assert named(check)[:2] == [
        (kind, "leaf2:Ethernet48", field, expected, value),
        (kind, "leaf2:Ethernet52", field, expected, value),
    ]
    assert link_of(check, check.findings[0]) == ("leaf2:Ethernet48", "spine1:Ethernet4")
    assert link_of(check, check.findings[1]) == ("leaf2:Ethernet52", "spine2:Ethernet4")
    link_kinds = {f.kind for link in check.links for f in link.findings}
    assert link_kinds == {kind}


def test_a_pfc_priority_to_group_entry_that_differs_is_named_on_that_end() -> None:
    """Every switch binds a PFC priority -> priority group map (3 -> 3, 4 -> 4) on its ports;
    leaf2's sends priority 4's pauses from group 0: both its links name its end."""

    def bound(leaf2_pg_of_4: str) -> Alter:
        def alter(name: str, config: SwitchConfig) -> None:
            pg_of_4 = leaf2_pg_of_4 if name == "leaf2" else "4"
            config[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "AZURE")] = {"3": "3", "4": pg_of_4}
            for (table, _), fields in config.items():
                if table == "PORT_QOS_MAP":
                    fields["pfc_to_pg_map"] = "AZURE"

        return alter

    assert checked(discovered(bound("4"))).ok
    check = checked(discovered(bound("0")))
    field = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|AZURE.4"
    assert named(check) == [
        (PFC_TO_PG, "leaf2:Ethernet48", field, "4", "0"),
        (PFC_TO_PG, "leaf2:Ethernet52", field, "4", "0"),
    ]
    assert "the priority group that sends priority 4's pauses" in check.findings[0].reason
    # Unbound on one end only: that end has no map ("none") where the fabric has group 4.
    unbound = checked(discovered(_unbind_on("spine1", bound("4"))))
    assert {(f.kind, f.end, f.field, f.found) for f in unbound.findings} == {
        (PFC_TO_PG, f"spine1:{port}", f"PORT_QOS_MAP|{port}.pfc_to_pg_map", "none")
        for port in ("Ethernet0", "Ethernet4")
    }


def test_no_pfc_priority_to_group_map_is_no_mismatch_where_the_asic_takes_none() -> None:
    """A fabric of Mellanox leaves, which bind the map as SONiC's qos_config.j2 does, and
    Broadcom spines, which SONiC (and sluice) bind none on: the links agree. The same spines
    on a Mellanox platform without the map are named (the test above)."""

    def platforms(spine: str) -> Alter:
        def alter(name: str, config: SwitchConfig) -> None:
            platform = spine if name.startswith("spine") else "x86_64-mlnx_msn2700-r0"
            config.setdefault(("DEVICE_METADATA", "localhost"), {})["platform"] = platform
            config[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "AZURE")] = {"3": "3", "4": "4"}
            for (table, _), fields in config.items():
                if table == "PORT_QOS_MAP":
                    if name.startswith("spine"):
                        fields.pop("pfc_to_pg_map", None)
                    else:
                        fields["pfc_to_pg_map"] = "AZURE"

        return alter

    assert checked(discovered(platforms("x86_64-arista_7060_cx32s"))).ok
    unbound = checked(discovered(platforms("x86_64-mlnx_msn2700-r0")))
    assert {f.kind for f in unbound.findings} == {PFC_TO_PG}
    # as many link ends without the map as with it: no value is the fabric's, both named
    assert {f.end.split(":")[0] for f in unbound.findings} >= {"spine1", "spine2"}


def _unbind_on(switch: str, then: Alter) -> Alter:
    def alter(name: str, config: SwitchConfig) -> None:
        then(name, config)
        if name == switch:
            for (table, _), fields in config.items():
                if table == "PORT_QOS_MAP":
                    fields.pop("pfc_to_pg_map", None)

    return alter


def test_a_lossy_dscp_entry_is_not_compared() -> None:
    """DSCP 8 goes to lossy TC 0 on every switch but leaf2 (TC 1, lossy too): not RoCE's."""
    assert checked(discovered(on("leaf2", "DSCP_TO_TC_MAP", "AZURE", **{"8": "1"}))).ok


def test_a_port_mtu_that_differs_is_named_on_that_end() -> None:
    check = checked(discovered(on("leaf1", "PORT", "Ethernet52", mtu="1500")))
    assert named(check) == [(MTU, "leaf1:Ethernet52", "PORT|Ethernet52.mtu", "9100", "1500")]
    assert link_of(check, check.findings[0]) == ("leaf1:Ethernet52", "spine2:Ethernet0")


def test_with_no_fabric_majority_both_ends_are_named_against_each_other() -> None:
    one_link = {
        "leaf1": [("Ethernet48", "spine1", "Ethernet0")],
        "spine1": [("Ethernet0", "leaf1", "Ethernet48")],
    }
    check = checked(discovered(on("spine1", "PORT", "Ethernet0", mtu="4200"), cabling=one_link))
    assert named(check) == [
        (MTU, "leaf1:Ethernet48", "PORT|Ethernet48.mtu", "4200", "9100"),
        (MTU, "spine1:Ethernet0", "PORT|Ethernet0.mtu", "9100", "4200"),
    ]
    assert "no value is the fabric's" in check.findings[0].reason


@pytest.mark.parametrize(
    ("alter", "found"),
    [
        (
            drop("leaf1", "BUFFER_PG", "Ethernet0|3-4"),
            [
                (HEADROOM, "leaf1:Ethernet0", "BUFFER_PG|Ethernet0|3", "none"),
                (HEADROOM, "leaf1:Ethernet0", "BUFFER_PG|Ethernet0|4", "none"),
            ],
        ),
        (
            on("leaf1", "BUFFER_PG", "Ethernet0|3-4", profile="ingress_lossy_profile"),
            [
                (HEADROOM, "leaf1:Ethernet0", "BUFFER_PG|Ethernet0|3-4.profile", p)
                for p in ("ingress_lossy_profile", "ingress_lossy_profile")
            ],
        ),
        (
            on("leaf1", "BUFFER_PG", "Ethernet0|3-4", profile="[BUFFER_PROFILE|gone]"),
            [(HEADROOM, "leaf1:Ethernet0", "BUFFER_PG|Ethernet0|3-4.profile", "gone")] * 2,
        ),
        (
            on("leaf1", "BUFFER_PG", "Ethernet0|3-4", profile="NULL"),
            [(HEADROOM, "leaf1:Ethernet0", "BUFFER_PG|Ethernet0|3-4.profile", "NULL")] * 2,
        ),
        (
            drop("leaf1", "PFC_WD", "Ethernet0"),
            [
                (WATCHDOG, "leaf1:Ethernet0", "PFC_WD|Ethernet0", "none"),
                (WATCHDOG, "leaf1:Ethernet0", "PFC_WD|Ethernet0", "none"),
            ],
        ),
        (
            on("leaf1", "PORT_QOS_MAP", "Ethernet0", pfcwd_sw_enable="3"),
            [(WATCHDOG, "leaf1:Ethernet0", "PORT_QOS_MAP|Ethernet0.pfcwd_sw_enable", "3")],
        ),
    ],
)
def test_each_lossless_priority_needs_headroom_and_a_watchdog(
    alter: Alter, found: list[tuple[str, str, str, str]]
) -> None:
    check = checked(discovered(alter))
    assert [(f.kind, f.end, f.field, f.found) for f in check.findings] == found
    (port,) = [p for p in check.ports if not p.ok]
    assert (port.switch, port.port, port.priorities) == ("leaf1", "Ethernet0", (3, 4))
    assert all(link.ok for link in check.links)


def test_a_priority_group_from_the_tc_map_and_dynamic_headroom() -> None:
    """The group a priority's TC maps to is the one that needs headroom; profile NULL is
    buffermgrd's computed headroom in SONiC's dynamic buffer model."""
    moved = on("leaf1", "TC_TO_PRIORITY_GROUP_MAP", "AZURE", **{"4": "5"})
    check = checked(discovered(moved))
    headroom = [(f.end, f.field) for f in check.findings if f.kind == HEADROOM]
    assert headroom == [
        ("leaf1:Ethernet0", "BUFFER_PG|Ethernet0|5"),
        ("leaf1:Ethernet48", "BUFFER_PG|Ethernet48|5"),
        ("leaf1:Ethernet52", "BUFFER_PG|Ethernet52|5"),
    ]
    dynamic = checked(
        discovered(
            on("leaf1", "BUFFER_PG", "Ethernet0|3-4", profile="NULL"), buffer_model="dynamic"
        )
    )
    assert dynamic.ok, named(dynamic)


def test_a_switch_not_read_is_named_and_its_links_are_not_compared() -> None:
    fabric = [d for d in discovered() if d.switch != "spine2"]
    check = checked(fabric, {"spine2": "spine2: gNMI unavailable: connection refused"})
    assert named(check) == [(UNREACHABLE, "spine2", "", "read over gNMI", "not read")]
    assert len(check.links) == 2
    assert not check.ok
    assert check.as_json()["unreachable"][0]["reason"] == "gNMI unavailable: connection refused"


def test_a_discovery_is_judged_once_done_and_a_pending_one_is_a_conflict() -> None:
    fabric = discovered(on("spine1", "PORT_QOS_MAP", "Ethernet0", pfc_enable="3"))
    at = datetime(2026, 1, 1, tzinfo=UTC)
    done = DiscoveryInfo(
        7, "done", "op", at, at, tuple(fabric), {}, None, None, None, None, ()
    )  # fmt: skip
    judged = roce_of(done)
    assert judged.discovery_id == 7
    assert named(judged.check) == named(checked(fabric))
    with pytest.raises(Conflict, match="discovery 8 is pending"):
        roce_of(replace(done, id=8, state="pending", found=()))
