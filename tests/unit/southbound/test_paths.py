"""Ops to gNMI path elements and JSON_IETF values, and Get answers back to entries."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.sonic.model import Op
from controller.southbound.paths import (
    ConfigPath,
    PathError,
    config_from_value,
    decode_json,
    encode_value,
    entry_elems,
    field_elems,
    op_parts,
    parse_elems,
    set_parts,
    table_elems,
    text,
)

# CONFIG_DB table names are upper case with underscores; keys may join parts with "|".
names = st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ_"), min_size=1, max_size=20)
key_part = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzEthernet0123456789._-"), min_size=1)
keys = st.lists(key_part, min_size=1, max_size=3).map("|".join)


def test_entry_path_keeps_the_key_with_its_bar_as_one_element() -> None:
    assert entry_elems("QUEUE", "Ethernet0|3") == ("CONFIG_DB", "localhost", "QUEUE", "Ethernet0|3")
    assert (
        text(entry_elems("QUEUE", "Ethernet0|3"))
        == "/sonic-db:CONFIG_DB/localhost/QUEUE/Ethernet0|3"
    )


@given(table=names, key=keys, name=key_part)
def test_paths_round_trip(table: str, key: str, name: str) -> None:
    assert parse_elems(table_elems(table)) == ConfigPath(table)
    assert parse_elems(entry_elems(table, key)) == ConfigPath(table, key)
    assert parse_elems(field_elems(table, key, name)) == ConfigPath(table, key, name)


@pytest.mark.parametrize(
    "elems",
    [
        ("CONFIG_DB", "localhost"),  # no table
        ("COUNTERS_DB", "localhost", "COUNTERS"),  # not CONFIG_DB
        ("CONFIG_DB", "asic0", "QUEUE"),  # not the single-ASIC instance
        ("CONFIG_DB", "localhost", "QUEUE", "Ethernet0|3", "scheduler", "extra"),
        ("CONFIG_DB", "localhost", "QUEUE", ""),
    ],
)
def test_parse_refuses_paths_outside_config_db_entries(elems: tuple[str, ...]) -> None:
    with pytest.raises(PathError):
        parse_elems(elems)


def test_value_is_compact_sorted_json_ietf() -> None:
    assert encode_value({"weight": "40", "type": "DWRR"}) == b'{"type":"DWRR","weight":"40"}'
    assert encode_value("SLUICE_SCHED_3") == b'"SLUICE_SCHED_3"'


@given(fields=st.dictionaries(key_part, st.text(max_size=10), max_size=5), table=names, key=keys)
def test_entry_value_round_trips_through_a_get_answer(
    fields: dict[str, str], table: str, key: str
) -> None:
    elems = entry_elems(table, key)
    decoded = decode_json(encode_value(fields), elems)
    assert config_from_value(elems, decoded) == {(table, key): fields}


def test_add_writes_the_whole_entry() -> None:
    op = Op("add", "SCHEDULER", "SLUICE_SCHED_3", {"type": "DWRR", "weight": "50"}, {})
    parts = op_parts(op)
    assert parts.deletes == ()
    assert parts.updates == (
        (
            ("CONFIG_DB", "localhost", "SCHEDULER", "SLUICE_SCHED_3"),
            b'{"type":"DWRR","weight":"50"}',
        ),
    )


def test_change_writes_fields_one_by_one_and_deletes_the_dropped_ones() -> None:
    # Was {scheduler, wred_profile}; now only scheduler with a new value: one field update
    # and one field delete, never the entry (an operator's fields on it must survive).
    op = Op(
        "change",
        "QUEUE",
        "Ethernet0|3",
        {"scheduler": "SLUICE_SCHED_2"},
        {"scheduler": "SLUICE_SCHED_3", "wred_profile": "SLUICE_Q_Ethernet0_3"},
        whole_entry=False,
    )
    parts = op_parts(op)
    base = ("CONFIG_DB", "localhost", "QUEUE", "Ethernet0|3")
    assert parts.updates == (((*base, "scheduler"), b'"SLUICE_SCHED_2"'),)
    assert parts.deletes == ((*base, "wred_profile"),)


def test_delete_of_an_owned_entry_removes_the_entry() -> None:
    op = Op("delete", "WRED_PROFILE", "SLUICE_OLD", {}, {"ecn": "ecn_all"}, whole_entry=True)
    assert op_parts(op).deletes == (("CONFIG_DB", "localhost", "WRED_PROFILE", "SLUICE_OLD"),)
    assert op_parts(op).updates == ()


def test_delete_in_a_shared_table_removes_only_sluice_fields() -> None:
    op = Op(
        "delete",
        "PORT_QOS_MAP",
        "Ethernet4",
        {},
        {"dscp_to_tc_map": "SLUICE", "tc_to_queue_map": "SLUICE"},
        whole_entry=False,
    )
    base = ("CONFIG_DB", "localhost", "PORT_QOS_MAP", "Ethernet4")
    assert op_parts(op).deletes == ((*base, "dscp_to_tc_map"), (*base, "tc_to_queue_map"))


def test_the_last_entries_of_a_table_go_as_one_delete_of_the_table() -> None:
    ops = [
        Op("delete", "DSCP_TO_TC_MAP", "SLUICE", {}, {"46": "6"}, whole_table=True),
        Op("delete", "SLUICE_AGENT_QUEUE", "Ethernet0|3", {}, {"managed": "true"}),
        Op("delete", "DSCP_TO_TC_MAP", "SLUICE_OLD", {}, {"10": "3"}, whole_table=True),
    ]
    assert set_parts(ops).deletes == (
        ("CONFIG_DB", "localhost", "DSCP_TO_TC_MAP"),
        ("CONFIG_DB", "localhost", "SLUICE_AGENT_QUEUE", "Ethernet0|3"),
    )


def test_one_request_keeps_plan_order_within_deletes_and_within_updates() -> None:
    ops = [
        Op("add", "SCHEDULER", "S1", {"type": "STRICT"}, {}),
        Op("add", "QUEUE", "Ethernet0|7", {"scheduler": "S1"}, {}, whole_entry=False),
        Op("delete", "SCHEDULER", "OLD", {}, {"type": "STRICT"}),
    ]
    parts = set_parts(ops)
    assert [elems[2:] for elems, _ in parts.updates] == [
        ("SCHEDULER", "S1"),
        ("QUEUE", "Ethernet0|7"),
    ]
    assert [elems[2:] for elems in parts.deletes] == [("SCHEDULER", "OLD")]
    assert set_parts([]).is_empty


def test_table_answer_becomes_entries() -> None:
    value = {"Ethernet0|3": {"scheduler": "S3"}, "Ethernet0|7": {"scheduler": "S7"}}
    assert config_from_value(table_elems("QUEUE"), value) == {
        ("QUEUE", "Ethernet0|3"): {"scheduler": "S3"},
        ("QUEUE", "Ethernet0|7"): {"scheduler": "S7"},
    }
    assert config_from_value(field_elems("QUEUE", "Ethernet0|3", "scheduler"), "S3") == {
        ("QUEUE", "Ethernet0|3"): {"scheduler": "S3"}
    }


@pytest.mark.parametrize(
    ("elems", "value", "named"),
    [
        (table_elems("QUEUE"), ["not", "a", "table"], "table QUEUE"),
        (entry_elems("SCHEDULER", "S1"), {"weight": 40}, "field 'weight'"),
        (field_elems("SCHEDULER", "S1", "weight"), 40, "field 'weight'"),
        # Inside a table answer: the one bad field among good ones, and a non-object entry.
        (
            table_elems("QUEUE"),
            {"Ethernet0|3": {"scheduler": "S3", "wred_profile": 7}},
            r"QUEUE\|Ethernet0\|3 field 'wred_profile': value is not a string \(int\)",
        ),
        (table_elems("QUEUE"), {"Ethernet0|3": "S3"}, r"QUEUE\|Ethernet0\|3: entry value is not"),
    ],
)
def test_malformed_answers_name_where(elems: tuple[str, ...], value: object, named: str) -> None:
    with pytest.raises(PathError, match=named):
        config_from_value(elems, value)


def test_undecodable_json_is_a_path_error() -> None:
    with pytest.raises(PathError, match="not JSON"):
        decode_json(b"{nope", table_elems("QUEUE"))
    assert decode_json(json.dumps({"a": "b"}).encode(), table_elems("QUEUE")) == {"a": "b"}
