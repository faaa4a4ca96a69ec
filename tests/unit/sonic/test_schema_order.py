"""Table schemas refuse what SONiC would refuse; the write order follows the references."""

from __future__ import annotations

import pytest

from controller.errors import CompiledConfigInvalid
from controller.sonic.order import write_order
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables import SCHEMAS, TABLES, WRITE_ORDER
from controller.sonic.tables.wred_profile import profile_fields

WRED = SCHEMAS["WRED_PROFILE"]


def test_every_table_of_the_brief_is_registered() -> None:
    assert set(TABLES) == {
        "WRED_PROFILE",
        "SCHEDULER",
        "QUEUE",
        "DSCP_TO_TC_MAP",
        "TC_TO_QUEUE_MAP",
        "PORT_QOS_MAP",
        "BUFFER_PROFILE",
        "BUFFER_QUEUE",
        "SLUICE_AGENT",
        "SLUICE_AGENT_QUEUE",
        "FLEX_COUNTER_TABLE",
        # lossless classes (docs/lossless.md)
        "BUFFER_PG",
        "PFC_WD",
        "TC_TO_PRIORITY_GROUP_MAP",
        "MAP_PFC_PRIORITY_TO_QUEUE",
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    }


def test_write_order_puts_every_referenced_table_first() -> None:
    position = {table: i for i, table in enumerate(WRITE_ORDER)}
    assert set(position) == set(SCHEMAS)
    for table, schema in SCHEMAS.items():
        for needed in schema.depends_on() & set(SCHEMAS):
            assert position[needed] < position[table], (needed, table)


def test_write_order_refuses_a_reference_cycle() -> None:
    a = TableSchema("A", "x", fields=(FieldSpec("b", "ref", ref="B"),))
    b = TableSchema("B", "x", fields=(FieldSpec("a", "ref", ref="A"),))
    c = TableSchema("C", "x")
    with pytest.raises(CompiledConfigInvalid, match="cycle"):
        write_order({"A": a, "B": b, "C": c})


def test_write_order_of_a_chain_is_the_chain() -> None:
    # QUEUE -> SCHEDULER -> (nothing); AGENT after QUEUE by declaration.
    sched = TableSchema("S", "x")
    queue = TableSchema("Q", "x", fields=(FieldSpec("scheduler", "ref", ref="S"),))
    agent = TableSchema("AGENT", "x", after=("Q",))
    assert write_order({"AGENT": agent, "Q": queue, "S": sched}) == ("S", "Q", "AGENT")


@pytest.mark.parametrize(
    ("key", "fields", "reason"),
    [
        (
            "SLUICE_" + "x" * 26,
            profile_fields(1000, mark=True, probability_pct=100),
            "does not match",
        ),
        ("AZURE_LOSSLESS", profile_fields(1000, mark=True, probability_pct=100), "does not match"),
        (
            "SLUICE_W",
            {**profile_fields(1000, mark=True, probability_pct=100), "green_min_threshold": "2000"},
            "below",
        ),
        (
            "SLUICE_W",
            {
                **profile_fields(1000, mark=True, probability_pct=100),
                "green_drop_probability": "101",
            },
            "above 100",
        ),
        (
            "SLUICE_W",
            {**profile_fields(1000, mark=True, probability_pct=100), "ecn": "ecn_on"},
            "not one of",
        ),
        (
            "SLUICE_W",
            {**profile_fields(1000, mark=True, probability_pct=100), "priority": "1"},
            "unknown field",
        ),
        (
            "SLUICE_W",
            {**profile_fields(1000, mark=True, probability_pct=100), "red_max_threshold": "-1"},
            "not a uint",
        ),
        ("SLUICE_W", {**profile_fields(2**31, mark=True, probability_pct=100)}, "above 2147483647"),
        ("SLUICE_W", {"green_min_threshold": "1"}, "missing required field 'ecn'"),
    ],
)
def test_wred_schema_refuses(key: str, fields: dict[str, str], reason: str) -> None:
    with pytest.raises(CompiledConfigInvalid, match=reason):
        WRED.check(key, fields)


@pytest.mark.parametrize(
    ("table", "key", "fields", "reason"),
    [
        ("SCHEDULER", "SLUICE_SCHED_1", {"type": "DWRR", "weight": "101"}, "above 100"),
        ("SCHEDULER", "SLUICE_SCHED_1", {"type": "DWRR"}, "needs a weight"),
        ("SCHEDULER", "SLUICE_SCHED_8", {"type": "STRICT"}, "does not match"),
        ("QUEUE", "Ethernet0,Ethernet4|3", {"scheduler": "SLUICE_SCHED_3"}, "does not match"),
        ("QUEUE", "Ethernet0|3", {"scheduler": "[SCHEDULER|SLUICE_SCHED_3]"}, "not an object name"),
        ("DSCP_TO_TC_MAP", "SLUICE", {"64": "1"}, "unknown field '64'"),
        ("DSCP_TO_TC_MAP", "SLUICE", {"46": "16"}, "above 15"),
        (
            "BUFFER_PROFILE",
            "SLUICE_BUF_x",
            {"pool": "p", "size": "0", "dynamic_th": "8"},
            "above 7",
        ),
        (
            "BUFFER_PROFILE",
            "SLUICE_BUF_x",
            {"pool": "p", "size": "0", "dynamic_th": "-9"},
            "below -8",
        ),
        ("SLUICE_AGENT", "global", {"algorithm": "red"}, "not one of"),
        (
            "SLUICE_AGENT_QUEUE",
            "Ethernet0|3",
            {
                "managed": "true",
                "wred_profile": "SLUICE_Q_Ethernet0_3",
                "weight": "1",
                "floor_bytes": "5000",
                "ceiling_bytes": "4000",
                "static_bytes": "4500",
                "speed_gbps": "10",
                "buffer_bytes": "1000",
            },
            "ceiling_bytes must be greater than or equal to floor_bytes",
        ),
    ],
)
def test_table_schemas_refuse(table: str, key: str, fields: dict[str, str], reason: str) -> None:
    with pytest.raises(CompiledConfigInvalid, match=reason.replace("[", r"\[").replace("|", r"\|")):
        SCHEMAS[table].check(key, fields)


def test_a_valid_entry_passes_twice() -> None:
    # The second check is answered from the schema's memory of valid field sets.
    fields = profile_fields(1000, mark=False, probability_pct=50)
    WRED.check("SLUICE_Q_Ethernet0_3", fields)
    WRED.check("SLUICE_Q_Ethernet0_3", fields)
    with pytest.raises(CompiledConfigInvalid):
        WRED.check("SLUICE_Q_Ethernet0_3", {**fields, "ecn": "bogus"})


def test_agent_fields_apply_to_dynamic_profiles_only() -> None:
    assert "green_min_threshold" in WRED.agent_owned("SLUICE_Q_Ethernet0_3")
    assert WRED.agent_owned("SLUICE_WRED_10G_abcdef01") == frozenset()
