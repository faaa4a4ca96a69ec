"""CONFIG_DB validation the way SONiC's YANG refuses things (pure: no server needed)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.intent.loader import parse_intent
from controller.sonic.compile import compile_switch
from tests.unit.intent.test_lossless_intent import lossless_data
from tests.yang.switches import seeded_config
from vsonic.db import Config
from vsonic.schema import validate_change
from vsonic.seed import lossless_pools

BASE: Config = {
    ("PORT", "Ethernet0"): {"speed": "100000"},
    ("PORT", "Ethernet4"): {"speed": "100000"},
    ("BUFFER_POOL", "egress_lossy_pool"): {"mode": "dynamic", "type": "egress", "size": "1000"},
}

SLUICE_CONFIG: Config = {
    # The stock AZURE_LOSSLESS numbers (sonic-buildimage qos_config.j2): 1 MiB min, 2 MiB max, 5 %.
    ("WRED_PROFILE", "SLUICE_gold"): {
        "green_min_threshold": "1048576", "green_max_threshold": "2097152",
        "green_drop_probability": "5", "wred_green_enable": "true", "ecn": "ecn_all",
    },
    ("SCHEDULER", "SLUICE.gold"): {"type": "DWRR", "weight": "40"},
    ("QUEUE", "Ethernet0|3"): {"scheduler": "SLUICE.gold", "wred_profile": "SLUICE_gold"},
    ("DSCP_TO_TC_MAP", "SLUICE"): {"46": "5", "0": "1"},
    ("TC_TO_QUEUE_MAP", "SLUICE"): {"5": "5", "1": "1"},
    ("PORT_QOS_MAP", "Ethernet0"): {"dscp_to_tc_map": "SLUICE", "tc_to_queue_map": "SLUICE",
                                    "pfc_enable": "3,4"},
    ("BUFFER_PROFILE", "SLUICE_q3"): {"pool": "egress_lossy_pool", "size": "1518",
                                      "dynamic_th": "3"},
    ("BUFFER_QUEUE", "Ethernet0|3-4"): {"profile": "SLUICE_q3"},
    ("SLUICE_AGENT", "global"): {
        "algorithm": "mqecn", "interval_ms": "10", "rtt_us": "80", "lambda": "1.0",
        "hysteresis_pct": "5", "hdcq_k": "0.06", "stale_after_ms": "1000",
        "queues": "3", "version": "a1b2c3",
    },
    ("SLUICE_AGENT_QUEUE", "Ethernet0|3"): {
        "wred_profile": "SLUICE_gold", "weight": "0", "floor_bytes": "1000",
        "ceiling_bytes": "2097152", "static_bytes": "150000", "speed_gbps": "100",
        "buffer_bytes": "4000000",
    },
}  # fmt: skip


AGENT = SLUICE_CONFIG[("SLUICE_AGENT", "global")]
MANAGED = SLUICE_CONFIG[("SLUICE_AGENT_QUEUE", "Ethernet0|3")]
UNMANAGED = {"managed": "false", "weight": "20", "speed_gbps": "100", "buffer_bytes": "4000000"}
PROFILE: Config = {("WRED_PROFILE", "SLUICE_gold"): SLUICE_CONFIG[("WRED_PROFILE", "SLUICE_gold")]}


def _with(extra: Config, base: Config | None = None) -> list[str]:
    before = BASE if base is None else base
    return validate_change(before, {**before, **extra})


def test_a_full_sluice_config_written_in_one_change_is_accepted() -> None:
    # References to profiles created in the same change resolve: order does not matter.
    assert _with(SLUICE_CONFIG) == []


@pytest.mark.parametrize(
    ("entry", "fields", "expected"),
    [
        (("WRED_PROFILE", "w"), {"green_min_thresh": "1"},
         "WRED_PROFILE|w: field 'green_min_thresh': unknown field"),
        (("WRED_PROFILE", "w"), {"red_drop_probability": "101"},
         "WRED_PROFILE|w: field 'red_drop_probability': 101 is out of range 0..100"),
        (("WRED_PROFILE", "w"),
         {"green_min_threshold": "2097152", "green_max_threshold": "1048576"},
         "WRED_PROFILE|w: field 'green_max_threshold': 1048576 is below green_min_threshold"),
        # stoi limit: 2^31 = 2147483648 does not fit a signed 32-bit int.
        (("WRED_PROFILE", "w"), {"yellow_max_threshold": "2147483648"},
         "WRED_PROFILE|w: field 'yellow_max_threshold': 2147483648 is out of range 0..2147483647"),
        (("WRED_PROFILE", "w"), {"ecn": "ecn_sometimes"},
         "WRED_PROFILE|w: field 'ecn': 'ecn_sometimes' is not one of"),
        (("WRED_PROFILE", "w"), {"wred_green_enable": "yes"},
         "WRED_PROFILE|w: field 'wred_green_enable': 'yes' is not one of true, false"),
        (("WRED_PROFILE", "a" * 33), {}, "is not a profile name of 1-32"),
        (("SCHEDULER", "s"), {"type": "DWRR", "weight": "101"},
         "SCHEDULER|s: field 'weight': 101 is out of range 1..100"),
        (("SCHEDULER", "s"), {"type": "DWRR", "weight": "0"},
         "SCHEDULER|s: field 'weight': 0 is out of range 1..100"),
        (("SCHEDULER", "s"), {"type": "STRICT", "priority": "1"},
         "SCHEDULER|s: field 'priority': qosorch has no handler"),
        (("SCHEDULER", "s"), {"meter_type": "bytes", "pir": "1000000000"},
         "SCHEDULER|s: field 'pir': needs cir > 0"),
        (("QUEUE", "Ethernet0,Ethernet4|3"), {}, "names several ports"),
        (("QUEUE", "Ethernet8|3"), {},
         "QUEUE|Ethernet8|3: key names port 'Ethernet8', which is not"),
        (("QUEUE", "Ethernet0|4-2"), {}, "queue range '4-2' runs backwards"),
        (("QUEUE", "Ethernet0|3"), {"wred_profile": "NOPE"},
         "QUEUE|Ethernet0|3: field 'wred_profile': references WRED_PROFILE 'NOPE', which does not"),
        (("QUEUE", "Ethernet0|3"), {"wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]"},
         "must be a plain WRED_PROFILE name, not the pre-202111 [TABLE|key] form"),
        (("DSCP_TO_TC_MAP", "m"), {"64": "1"}, "DSCP_TO_TC_MAP|m: field '64': unknown field"),
        (("DSCP_TO_TC_MAP", "m"), {"10": "16"}, "DSCP_TO_TC_MAP|m: field '10': 16 is out of range"),
        (("PORT_QOS_MAP", "Ethernet0"), {"tc_to_queue_map": "MISSING"},
         "references TC_TO_QUEUE_MAP 'MISSING'"),
        (("PORT_QOS_MAP", "Ethernet0"), {"pfc_enable": "3,3"}, "'3,3' repeats an item"),
        (("BUFFER_PROFILE", "p"), {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "1",
                                   "static_th": "100"},
         "BUFFER_PROFILE|p: fields 'dynamic_th'/'static_th': exactly one must be set"),
        (("BUFFER_PROFILE", "p"), {"size": "0", "static_th": "100"},
         "BUFFER_PROFILE|p: field 'pool': mandatory, missing"),
        (("BUFFER_POOL", "p2"), {"type": "egress", "mode": "static", "percentage": "50"},
         "field 'percentage': only for a dynamic pool without 'size'"),
        (("BUFFER_QUEUE", "Ethernet0|3"), {"profile": "ghost"},
         "references BUFFER_PROFILE 'ghost'"),
        (("SLUICE_AGENT", "global"), {**AGENT, "algorithm": "red"},
         "SLUICE_AGENT|global: field 'algorithm': 'red' is not one of static, mqecn, dynaq, hdcq"),
        (("SLUICE_AGENT", "global"), {**AGENT, "ewma_beta": "0.75"},
         "SLUICE_AGENT|global: field 'ewma_beta': unknown field"),
        (("SLUICE_AGENT", "global"), {**AGENT, "rtt_us": "1e2"},
         "field 'rtt_us': '1e2' is not a decimal64 number"),
        (("SLUICE_AGENT", "local"), AGENT, "key 'local' must be 'global'"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|0-2"), UNMANAGED,
         "is not one index with indexes 0..7"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|3"), {**MANAGED, "floor_bytes": "5000",
                                                 "ceiling_bytes": "4000", "static_bytes": "4500"},
         "field 'ceiling_bytes': ceiling_bytes must be greater than or equal to floor_bytes"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|3"), {**MANAGED, "static_bytes": "9999999"},
         "field 'static_bytes': static_bytes must lie between floor_bytes and ceiling_bytes"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|3"), {**UNMANAGED, "weight": "101"},
         "101 is out of range 0..100"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|3"), {**UNMANAGED, "managed": "yes"},
         "field 'managed': 'yes' is not one of true, false"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|3"), {k: v for k, v in MANAGED.items()
                                                 if k != "floor_bytes"},
         "field 'floor_bytes': A managed queue needs wred_profile, floor_bytes, ceiling_bytes"),
        (("SLUICE_AGENT_QUEUE", "Ethernet0|1"), {**UNMANAGED, "floor_bytes": "5000"},
         "field 'floor_bytes': floor_bytes is only for a managed queue"),
        (("ACL_RULE", "x|y"), {"PRIORITY": "1"}, "ACL_RULE|x|y: table ACL_RULE has no YANG model"),
    ],
)  # fmt: skip
def test_each_rule_refuses_with_table_key_and_field(
    entry: tuple[str, str], fields: dict[str, str], expected: str
) -> None:
    problems = _with({entry: fields}, {**BASE, **PROFILE})
    assert len(problems) == 1, problems
    assert expected in problems[0]


@given(st.integers(min_value=-20, max_value=20))
def test_dynamic_th_accepts_exactly_minus_8_to_7(value: int) -> None:
    profile = {"pool": "egress_lossy_pool", "size": "1518", "dynamic_th": str(value)}
    problems = _with({("BUFFER_PROFILE", "p"): profile})
    assert (problems == []) == (-8 <= value <= 7)


def test_unmanaged_agent_queue_with_weight_speed_and_buffer_passes() -> None:
    unmanaged = {"managed": "false", "weight": "0", "speed_gbps": "100", "buffer_bytes": "4000000"}
    assert _with({("SLUICE_AGENT_QUEUE", "Ethernet0|5"): unmanaged}) == []
    managed = {**SLUICE_CONFIG[("SLUICE_AGENT_QUEUE", "Ethernet0|3")], "managed": "true"}
    assert _with({**SLUICE_CONFIG, ("SLUICE_AGENT_QUEUE", "Ethernet0|3"): managed}) == []


def test_names_of_32_characters_and_largest_stoi_threshold_pass() -> None:
    profile = {"green_min_threshold": "0", "green_max_threshold": str(2**31 - 1)}
    assert _with({("WRED_PROFILE", "a" * 32): profile}) == []


def test_deleting_a_referenced_profile_is_refused_and_names_the_user() -> None:
    before = {**BASE, **SLUICE_CONFIG}
    after = dict(before)
    del after[("WRED_PROFILE", "SLUICE_gold")]
    problems = validate_change(before, after)
    assert problems == [
        "WRED_PROFILE|SLUICE_gold: cannot delete, still referenced by "
        "QUEUE|Ethernet0|3 field 'wred_profile', "
        "SLUICE_AGENT_QUEUE|Ethernet0|3 field 'wred_profile'"
    ]


def test_deleting_profile_and_its_users_together_is_accepted() -> None:
    before = {**BASE, **SLUICE_CONFIG}
    after = {
        k: v
        for k, v in before.items()
        if k[0] not in ("WRED_PROFILE", "QUEUE", "SLUICE_AGENT_QUEUE")
    }
    assert validate_change(before, after) == []


def test_deleting_a_port_still_keyed_by_a_queue_entry_is_refused() -> None:
    before = {**BASE, **SLUICE_CONFIG}
    after = {k: v for k, v in before.items() if k != ("PORT", "Ethernet0")}
    problems = validate_change(before, after)
    assert len(problems) == 1
    assert problems[0].startswith("PORT|Ethernet0: cannot delete, still referenced by")
    assert "QUEUE|Ethernet0|3 (key)" in problems[0]


def test_only_changed_entries_are_checked() -> None:
    # An entry already on the switch that breaks a rule (written before vsonic checked it)
    # does not block an unrelated change, as with a GCU patch that does not touch it.
    legacy = {**BASE, ("SCHEDULER", "old"): {"type": "DWRR", "weight": "0"}}
    assert _with({("SCHEDULER", "new"): {"type": "DWRR", "weight": "5"}}, base=legacy) == []


def test_flex_counter_groups_take_sonics_fields_and_refuse_others() -> None:
    good: Config = {
        ("FLEX_COUNTER_TABLE", "QUEUE"): {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "100"},
        ("FLEX_COUNTER_TABLE", "PFCWD"): {"FLEX_COUNTER_STATUS": "disable",
                                          "FLEX_COUNTER_DELAY_STATUS": "false"},
    }  # fmt: skip
    assert _with(good) == []
    problems = _with(
        {
            ("FLEX_COUNTER_TABLE", "QUEUES"): {"FLEX_COUNTER_STATUS": "enable"},
            ("FLEX_COUNTER_TABLE", "PORT"): {"FLEX_COUNTER_STATUS": "on", "POLL_INTERVAL": "1s"},
            ("FLEX_COUNTER_TABLE", "RIF"): {"POLL_INTERVALS": "1000"},
        }
    )
    text = "\n".join(problems)
    assert "FLEX_COUNTER_TABLE|QUEUES" in text
    assert "'on'" in text
    assert "'1s'" in text
    assert "POLL_INTERVALS" in text
    assert len(problems) == 4, problems


def _lossless_switch() -> tuple[Config, Config]:
    """A vsonic switch's seed with the image's lossless pools, and what sluice compiles for it
    with a lossless class (tests/unit/intent/test_lossless_intent.py's intent)."""
    intent = parse_intent(lossless_data())
    switch = intent.switches[0]
    pools = {("BUFFER_POOL", name): fields for name, fields in lossless_pools().items()}
    before = {**seeded_config(switch), **pools}
    return before, {**before, **compile_switch(intent, switch)}


def test_the_lossless_tables_sluice_compiles_are_accepted() -> None:
    before, after = _lossless_switch()
    assert {t for t, _ in after} >= {"BUFFER_PG", "PFC_WD", "TC_TO_PRIORITY_GROUP_MAP"}
    assert after[("BUFFER_QUEUE", "Ethernet0|3")] == {"profile": "SLUICE_egress_lossless_3907K"}
    assert validate_change(before, after) == []


@pytest.mark.parametrize(
    ("entry", "fields", "reason"),
    [
        (("PFC_WD", "Ethernet0"), {"detection_time": "99"}, "detection_time"),
        (("PFC_WD", "Ethernet0"), {"action": "pause"}, "action"),
        (("PFC_WD", "GLOBAL"), {"POLL_INTERVAL": "200", "action": "drop"}, "not on the GLOBAL"),
        (("BUFFER_PG", "Ethernet0|8"), {"profile": "ingress_lossy_profile"}, "queue part"),
        (("BUFFER_PG", "Ethernet0|3"), {"profile": "no_such_profile"}, "does not exist"),
        (("PORT_QOS_MAP", "Ethernet0"), {"pfc_enable": "3,8"}, "pfc_enable"),
        (("TC_TO_PRIORITY_GROUP_MAP", "SLUICE"), {"3": "8"}, "'3'"),
        # the lossless queues' egress profile: static, never a dynamic limit beside it
        (("BUFFER_PROFILE", "SLUICE_egress_lossless_3907K"), {"dynamic_th": "0"}, "static_th"),
        (("BUFFER_QUEUE", "Ethernet0|3"), {"profile": "no_such_profile"}, "does not exist"),
    ],
)
def test_a_broken_lossless_entry_is_refused(
    entry: tuple[str, str], fields: dict[str, str], reason: str
) -> None:
    before, after = _lossless_switch()
    after = {**after, entry: {**after.get(entry, {}), **fields}}
    problems = validate_change(before, after)
    assert any(reason in p and entry[0] in p for p in problems), problems
