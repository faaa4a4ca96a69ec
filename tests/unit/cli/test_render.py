"""Pure CLI rendering: expected cells are written out by hand from the op semantics."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from controller.cli.app import cables_of, warnings_of
from controller.cli.render import (
    cable_lines,
    dump,
    error_lines,
    field_changes,
    intent_summary_rows,
    key_value_rows,
    pias,
    plan_has_changes,
    plan_rows,
    plan_summary,
    port_speeds,
    scheduling,
    switch_login,
    table,
    table_count_rows,
    text,
)
from controller.errors import FieldProblem, IntentInvalid, PreconditionFailed, SluiceError


def op(
    kind: str,
    table_name: str,
    key: str,
    fields: dict[str, str] | None = None,
    old: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "table": table_name,
        "key": key,
        "fields": fields or {},
        "old_fields": old or {},
    }


def test_add_lists_every_new_field():
    added = op("add", "SCHEDULER", "SLUICE_bulk", {"type": "DWRR", "weight": "40"})
    assert field_changes(added) == ["type=DWRR", "weight=40"]


def test_change_shows_only_fields_that_differ_old_to_new():
    changed = op(
        "change",
        "WRED_PROFILE",
        "SLUICE_bulk",
        fields={"green_min_threshold": "62500", "ecn": "ecn_all", "green_max_threshold": "62501"},
        old={"green_min_threshold": "50000", "ecn": "ecn_all", "wred_green_enable": "true"},
    )
    # ecn is unchanged so it is left out; wred_green_enable is no longer written (removed);
    # green_max_threshold is new on this entry.
    assert field_changes(changed) == [
        "green_min_threshold: 50000 -> 62500",
        "wred_green_enable: true -> (unset)",
        "green_max_threshold: (unset) -> 62501",
    ]


def test_delete_lists_the_fields_that_go():
    deleted = op("delete", "QUEUE", "Ethernet0|3", old={"scheduler": "SLUICE_bulk"})
    assert field_changes(deleted) == ["scheduler=SLUICE_bulk"]


def test_plan_rows_keep_switch_and_op_order():
    plans: list[dict[str, Any]] = [
        {
            "switch": "leaf1",
            "ops": [
                op("add", "SCHEDULER", "SLUICE_a", {"type": "STRICT"}),
                op("add", "QUEUE", "Ethernet0|7", {"scheduler": "SLUICE_a"}),
            ],
        },
        {"switch": "leaf2", "ops": []},
        {
            "switch": "spine1",
            "ops": [op("delete", "SCHEDULER", "SLUICE_old", old={"type": "DWRR"})],
        },
    ]
    assert plan_rows(plans) == [
        ("leaf1", "add", "SCHEDULER", "SLUICE_a", "type=STRICT"),
        ("leaf1", "add", "QUEUE", "Ethernet0|7", "scheduler=SLUICE_a"),
        ("spine1", "delete", "SCHEDULER", "SLUICE_old", "type=DWRR"),
    ]
    assert plan_has_changes(plans)
    assert plan_summary(plans) == [
        "leaf1: 2 to add, 0 to change, 0 to delete",
        "leaf2: 0 to add, 0 to change, 0 to delete",
        "spine1: 0 to add, 0 to change, 1 to delete",
    ]


def test_plan_summary_names_each_port_a_plan_takes_down():
    repoints = [
        {
            "port": "Ethernet0",
            "table": "QUEUE",
            "key": f"Ethernet0|{q}",
            "reason": f"QUEUE|Ethernet0|{q} wred_profile: SLUICE_WRED_25G_ab -> Q{q}",
        }
        for q in (1, 2, 3, 5)
    ]
    plans: list[dict[str, Any]] = [
        {
            "switch": "leaf1",
            "ops": [op("change", "QUEUE", f"Ethernet0|{q}") for q in (1, 2, 3, 5)]
            + [op("add", "QUEUE", "Ethernet4|7")],
            "port_flaps": [
                *repoints,
                {"port": "Ethernet4", "table": "QUEUE", "key": "Ethernet4|7", "reason": "added"},
            ],
        },
        {"switch": "leaf2", "ops": [op("change", "WRED_PROFILE", "SLUICE_WRED_25G_Q1")]},
    ]
    assert plan_summary(plans) == [
        "leaf1: 1 to add, 4 to change, 0 to delete; takes 2 port(s) down",
        "  leaf1 Ethernet0 goes admin down and up for 4 port-critical change(s): "
        + "; ".join(r["reason"] for r in repoints[:3])
        + " (and 1 more)",
        "  leaf1 Ethernet4 goes admin down and up for 1 port-critical change(s): added",
        "leaf2: 0 to add, 1 to change, 0 to delete",
    ]
    assert plan_summary(plans, ports=False) == [
        "leaf1: 1 to add, 4 to change, 0 to delete; takes 2 port(s) down",
        "leaf2: 0 to add, 1 to change, 0 to delete",
    ]


def test_table_counts_group_ops_by_switch_and_table_in_write_order():
    plans: list[dict[str, Any]] = [
        {
            "switch": "leaf1",
            "ops": [
                op("add", "WRED_PROFILE", "SLUICE_a"),
                op("change", "WRED_PROFILE", "SLUICE_b"),
                op("add", "QUEUE", "Ethernet0|3"),
                op("add", "QUEUE", "Ethernet4|3"),
                op("delete", "WRED_PROFILE", "SLUICE_old"),
            ],
        },
        {"switch": "leaf2", "ops": []},
    ]
    # leaf1 WRED_PROFILE: 1 add (a), 1 change (b), 1 delete (old); QUEUE: 2 adds; leaf2: none
    assert table_count_rows(plans) == [
        ("leaf1", "WRED_PROFILE", "1", "1", "1"),
        ("leaf1", "QUEUE", "2", "0", "0"),
    ]


def test_empty_plan_says_no_changes_and_counts_switches():
    plans = [{"switch": "leaf1", "ops": []}, {"switch": "leaf2", "ops": []}]
    assert not plan_has_changes(plans)
    assert plan_summary(plans) == ["No changes (2 switches checked)."]


def test_port_speeds_group_and_sort():
    switch = {
        "ports": [{"speed_gbps": 400}, {"speed_gbps": 100}, {"speed_gbps": 400}, {"speed_gbps": 25}]
    }
    assert port_speeds(switch) == "1x25G, 1x100G, 2x400G"
    assert port_speeds({"ports": []}) == "-"


def test_scheduling_and_pias_cells():
    assert scheduling({"scheduling": {"type": "STRICT", "weight": None}}) == "STRICT"
    assert scheduling({"scheduling": {"type": "DWRR", "weight": 40}}) == "DWRR 40"
    spec = {
        "workload": "websearch",
        "load": 0.6,
        "demotions": [{"dscp": 1, "queue": 2}, {"dscp": 2, "queue": 1}],
    }
    assert pias({"pias": spec}) == "websearch load 0.6, 2 demotions"
    one = {**spec, "demotions": [{"dscp": 1, "queue": 2}]}
    assert pias({"pias": one}) == "websearch load 0.6, 1 demotion"
    assert pias({"pias": None}) == "-"


def test_text_cells():
    assert text(None) == "-"
    assert text([10, 12]) == "10,12"
    assert text(0) == "0"  # a zero is a value, not a missing one


def test_key_value_rows_flatten_nested_documents():
    fabric = {"base_rtt_us": 40.0, "qjump": {"hosts": 8, "factors": {"7": 1.0}}, "note": None}
    assert key_value_rows(fabric) == [
        ("base_rtt_us", "40.0"),
        ("qjump.hosts", "8"),
        ("qjump.factors.7", "1.0"),
        ("note", "-"),
    ]


def test_intent_summary_counts_and_names_the_version():
    intent = {
        "fabric": {"mtu_bytes": 9100},
        "switches": [{}, {}, {}],
        "hosts": [],
        "service_classes": [{}],
    }
    assert intent_summary_rows(intent, 4) == [
        ("version", "4"),
        ("switches", "3"),
        ("hosts", "0"),
        ("service_classes", "1"),
        ("fabric.mtu_bytes", "9100"),
    ]


def test_error_lines_name_each_field():
    error = IntentInvalid([FieldProblem("service_classes[1].dscp", "DSCP 10 is used twice")])
    assert error_lines(error) == [
        "error: invalid intent:",
        "  service_classes[1].dscp: DSCP 10 is used twice",
    ]
    assert error_lines(PreconditionFailed("intent is at version 5")) == [
        "error: precondition failed: intent is at version 5"
    ]
    assert error_lines(SluiceError("the API answered 502: Bad Gateway")) == [
        "error: the API answered 502: Bad Gateway"
    ]


def test_table_prints_keys_with_brackets_literally():
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table(("KEY",), [("PORT_QOS_MAP|[Ethernet0]",)]))
    assert "PORT_QOS_MAP|[Ethernet0]" in console.export_text()


documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(documents)
def test_dump_round_trips_through_json_and_yaml(document):
    assert json.loads(dump(document, "json")) == document
    assert yaml.safe_load(dump(document, "yaml")) == document


def test_a_switch_login_shows_its_group_or_its_own_reference_never_a_secret():
    assert switch_login({"credential": "leafs", "credential_ref": None}) == "group:leafs"
    own = {"credential_ref": "file:/run/secrets/s1", "username": "ops"}
    assert switch_login(own) == "ops file:/run/secrets/s1"
    assert switch_login({"credential_ref": "env:PW"}) == "env:PW"


def test_cable_lines_say_per_switch_which_length_sized_each_port() -> None:
    cables = [
        {"switch": "leaf1", "port": "Ethernet0", "reason": "40 m from CABLE_LENGTH"},
        {"switch": "leaf1", "port": "Ethernet4", "reason": "5 m fabric default"},
        {"switch": "spine1", "port": "Ethernet0", "reason": "3 m declared"},
    ]
    assert cable_lines(cables) == [
        "leaf1 headroom: Ethernet0 40 m from CABLE_LENGTH, Ethernet4 5 m fabric default",
        "spine1 headroom: Ethernet0 3 m declared",
    ]
    assert cable_lines([]) == []


def test_a_plans_cable_findings_are_among_its_warnings() -> None:
    answer = {
        "plans": [],
        "warnings": [{"field": "fabric.agent", "reason": "holds its fallback"}],
        "cables": [{"switch": "leaf1", "port": "Ethernet0", "reason": "40 m from CABLE_LENGTH"}],
        "cable_findings": [
            {
                "switch": "leaf2",
                "port": "Ethernet48",
                "field": "CABLE_LENGTH|AZURE.Ethernet48",
                "reason": "leaf2:Ethernet48 says 10 m, spine1:Ethernet4 30 m",
            }
        ],
    }
    assert warnings_of(answer) == [
        {"field": "fabric.agent", "reason": "holds its fallback"},
        {
            "field": "leaf2: CABLE_LENGTH|AZURE.Ethernet48",
            "reason": "leaf2:Ethernet48 says 10 m, spine1:Ethernet4 30 m",
        },
    ]
    assert cables_of(answer) == answer["cables"]
    assert (warnings_of({"plans": []}), cables_of({"plans": []})) == ([], [])
