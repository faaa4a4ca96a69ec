"""Intent -> CONFIG_DB tables, values worked out by hand from K = C x RTT x lambda."""

from __future__ import annotations

import re

import pytest

from controller.errors import CompiledConfigInvalid
from controller.intent.models import EcnMode, Port, Qjump
from controller.sonic.compile import check_references, compile_fleet, compile_switch
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from controller.sonic.tables import SCHEMAS
from tests.unit.sonic import intents as t

STEP_FIELDS = ("min_threshold", "max_threshold")


def only(config: SwitchConfig, table: str) -> dict[str, dict[str, str]]:
    return {key: fields for (tbl, key), fields in config.items() if tbl == table}


def thresholds(fields: dict[str, str]) -> set[str]:
    """Every min/max threshold value of a WRED profile (all colours)."""
    return {v for k, v in fields.items() if k.endswith(STEP_FIELDS)}


def split_by_table(config: SwitchConfig) -> dict[str, dict[EntryKey, Fields]]:
    """Group a switch's entries by table (for ``check_references`` on any config)."""
    out: dict[str, dict[EntryKey, Fields]] = {}
    for entry_key, fields in config.items():
        out.setdefault(entry_key[0], {})[entry_key] = fields
    return out


def test_one_port_three_classes_gives_exact_tables() -> None:
    # 10 Gb/s port, RTT 10 us, lambda 1: K = 1.25e9 B/s x 10e-6 s x 1 = 12 500 B.
    # DWRR weights bulk 3, web 1 are already inside 1..100, so they stay; sum = 4.
    # voice (STRICT, standard): threshold K = 12 500.
    # bulk (per-queue-minimum): 12 500 x 3 / 4 = 9 375 (above the 1 500 B MTU floor).
    # web (ECN off): no WRED profile.
    intent = t.intent(t.VOICE, t.BULK, t.WEB)
    config = compile_switch(intent, intent.switches[0])

    assert only(config, "DSCP_TO_TC_MAP") == {
        "SLUICE": {"10": "1", "12": "1", "18": "3", "46": "5"}
    }
    assert only(config, "TC_TO_QUEUE_MAP") == {"SLUICE": {"1": "1", "3": "3", "5": "5"}}
    assert only(config, "SCHEDULER") == {
        "SLUICE_SCHED_1": {"type": "DWRR", "weight": "3"},
        "SLUICE_SCHED_3": {"type": "DWRR", "weight": "1"},
        "SLUICE_SCHED_5": {"type": "STRICT"},
    }
    assert only(config, "PORT_QOS_MAP") == {
        "Ethernet0": {"dscp_to_tc_map": "SLUICE", "tc_to_queue_map": "SLUICE"}
    }

    queues = only(config, "QUEUE")
    assert set(queues) == {"Ethernet0|1", "Ethernet0|3", "Ethernet0|5"}
    assert queues["Ethernet0|3"] == {"scheduler": "SLUICE_SCHED_3"}
    wred = only(config, "WRED_PROFILE")
    bulk_profile = wred[queues["Ethernet0|1"]["wred_profile"]]
    voice_profile = wred[queues["Ethernet0|5"]["wred_profile"]]
    assert queues["Ethernet0|1"]["scheduler"] == "SLUICE_SCHED_1"
    assert queues["Ethernet0|5"]["scheduler"] == "SLUICE_SCHED_5"
    assert thresholds(bulk_profile) == {"9375"}
    assert thresholds(voice_profile) == {"12500"}
    for profile in (bulk_profile, voice_profile):
        assert profile["ecn"] == "ecn_all"
        assert profile["wred_green_enable"] == "true"
        assert profile["green_drop_probability"] == "100"
    assert len(wred) == 2

    # Buffer: N = 3 queues; lone-queue share = 1 - (3 - 1) x 12 500 / 1 000 000 = 0.975.
    # alpha / (1 + alpha) <= 0.975 -> alpha <= 39 -> largest 2^n is 32 -> dynamic_th 5.
    ((buffer_name, buffer_fields),) = only(config, "BUFFER_PROFILE").items()
    assert buffer_fields == {"pool": "egress_lossy_pool", "size": "1500", "dynamic_th": "5"}
    assert only(config, "BUFFER_QUEUE") == {
        f"Ethernet0|{q}": {"profile": buffer_name} for q in (1, 3, 5)
    }

    agent = only(config, "SLUICE_AGENT")["global"]
    version = agent.pop("version")
    assert re.fullmatch(r"[0-9a-f]{12}", version)
    assert agent == {
        "algorithm": "static",
        "interval_ms": "100",
        "rtt_us": "10",
        "lambda": "1",
        "hysteresis_pct": "5",
        "hdcq_k": "0.06",
        "stale_after_ms": "1000",
        "queues": "",
    }
    assert only(config, "SLUICE_AGENT_QUEUE") == {}
    # No dynamic queue, so no agent reads counters: SONiC's default intervals (queue 10 s,
    # port 1 s, watermarks 60 s), enabled.
    assert only(config, "FLEX_COUNTER_TABLE") == {
        "QUEUE": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "10000"},
        "PORT": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "1000"},
        "QUEUE_WATERMARK": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "60000"},
    }
    # 1 + 1 + 3 schedulers + 1 port map + 3 queues + 2 WRED + 1 buffer profile + 3 buffer
    # queues + 1 agent + 3 counter groups = 19 entries.
    assert len(config) == 19


def test_mqecn_queue_gets_its_own_profile_and_agent_orders() -> None:
    # storage: DWRR weight 1 of total 3 + 1 = 4 on a 10 Gb/s port, K = 12 500 B.
    # floor = per-queue minimum 12 500 x 1 / 4 = 3 125 (above the 1 500 B MTU),
    # ceiling = K = 12 500, static fallback = floor = 3 125.
    intent = t.intent(t.VOICE, t.BULK, t.STORAGE_MQECN)
    config = compile_switch(intent, intent.switches[0])

    assert config[("QUEUE", "Ethernet0|3")] == {
        "scheduler": "SLUICE_SCHED_3",
        "wred_profile": "SLUICE_Q_Ethernet0_3",
    }
    profile = config[("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]
    assert thresholds(profile) == {"3125"}
    assert profile["ecn"] == "ecn_all"
    port_wide = {"speed_gbps": "10", "buffer_bytes": "1000000"}
    # The agent sees every queue the port's scheduler serves: storage is its own (managed);
    # voice (STRICT, weight 0) and bulk (DWRR 3) are not, but their rates count in the shares.
    assert only(config, "SLUICE_AGENT_QUEUE") == {
        "Ethernet0|3": {
            "managed": "true",
            "wred_profile": "SLUICE_Q_Ethernet0_3",
            "weight": "1",
            "floor_bytes": "3125",
            "ceiling_bytes": "12500",
            "static_bytes": "3125",
            **port_wide,
        },
        "Ethernet0|5": {"managed": "false", "weight": "0", **port_wide},
        "Ethernet0|1": {"managed": "false", "weight": "3", **port_wide},
    }
    agent = config[("SLUICE_AGENT", "global")]
    assert agent["algorithm"] == "mqecn"
    assert agent["queues"] == "3"


def test_agent_queue_schema_keeps_bounds_on_managed_entries_only() -> None:
    schema = SCHEMAS["SLUICE_AGENT_QUEUE"]
    base = {"weight": "3", "speed_gbps": "10", "buffer_bytes": "1000000"}
    assert schema.field_problems({"managed": "false", **base}) == []
    # The model's own error-messages (sonic-sluice-agent.yang's must statements).
    assert schema.field_problems({"managed": "false", "floor_bytes": "1", **base}) == [
        "field 'floor_bytes': floor_bytes is only for a managed queue"
    ]
    assert schema.field_problems({"managed": "true", "wred_profile": "SLUICE_Q", **base}) == [
        "field 'floor_bytes': A managed queue needs wred_profile, floor_bytes, ceiling_bytes "
        "and static_bytes "
        "(missing: floor_bytes, ceiling_bytes, static_bytes)"
    ]
    assert schema.field_problems({"managed": "yes", **base}) != []
    # The model's default: an entry without ``managed`` is a managed queue (as the agent reads it).
    assert schema.field_problems(base) == [
        "field 'wred_profile': A managed queue needs wred_profile, floor_bytes, ceiling_bytes "
        "and static_bytes "
        "(missing: wred_profile, floor_bytes, ceiling_bytes, static_bytes)"
    ]


def test_dynaq_strict_queue_drops_without_ecn_and_may_use_the_whole_buffer() -> None:
    # DynaQ's bounds come from the port's egress buffer B = 1 000 000 B, not from K (12 500 B
    # at 10 Gb/s): a STRICT queue (weight 0) may use the whole buffer, ceiling = static = B,
    # floor one MTU (1 500 B). DynaQ needs no ECN, so the profile drops: ecn_none.
    dynaq = t.strict("voice", 5, EcnMode.DYNAQ, (46,))
    intent = t.intent(dynaq, t.BULK)
    config = compile_switch(intent, intent.switches[0])
    profile = config[("WRED_PROFILE", "SLUICE_Q_Ethernet0_5")]
    assert profile["ecn"] == "ecn_none"
    assert thresholds(profile) == {"1000000"}
    orders = config[("SLUICE_AGENT_QUEUE", "Ethernet0|5")]
    assert (
        orders["weight"],
        orders["floor_bytes"],
        orders["ceiling_bytes"],
        orders["static_bytes"],
    ) == (
        "0",
        "1500",
        "1000000",
        "1000000",
    )
    assert config[("SLUICE_AGENT", "global")]["algorithm"] == "dynaq"


def test_dynaq_dwrr_bounds_are_weighted_shares_of_the_buffer() -> None:
    # Weights 3 (queue 1) and 1 (queue 3), sum 4, B = 1 000 000 B (K = 12 500 B plays no part):
    #   queue 1: floor = static = 1 000 000 x 3 // 4 = 750 000 B, ceiling = B;
    #   queue 3: floor = static = 1 000 000 x 1 // 4 = 250 000 B, ceiling = B.
    # The static shares sum to B exactly: without the agent the buffer is split by weight.
    bulk = t.dwrr("bulk", 1, 3, EcnMode.DYNAQ, (10, 12))
    storage = t.dwrr("storage", 3, 1, EcnMode.DYNAQ, (18,))
    intent = t.intent(bulk, storage)
    config = compile_switch(intent, intent.switches[0])
    bounds = {
        key: (f["floor_bytes"], f["ceiling_bytes"], f["static_bytes"])
        for key, f in only(config, "SLUICE_AGENT_QUEUE").items()
    }
    assert bounds == {
        "Ethernet0|1": ("750000", "1000000", "750000"),
        "Ethernet0|3": ("250000", "1000000", "250000"),
    }
    assert thresholds(config[("WRED_PROFILE", "SLUICE_Q_Ethernet0_1")]) == {"750000"}
    assert thresholds(config[("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]) == {"250000"}


def test_dynaq_bounds_follow_a_port_buffer_override() -> None:
    # A port with its own buffer_bytes = 200 000 B: strict queue ceiling = static = 200 000 B.
    dynaq = t.strict("voice", 5, EcnMode.DYNAQ, (46,))
    switch = t.switch().model_copy(
        update={"ports": (Port(name="Ethernet0", speed_gbps=10, buffer_bytes=200_000),)}
    )
    intent = t.intent(dynaq, t.BULK, switches=(switch,))
    orders = compile_switch(intent, intent.switches[0])[("SLUICE_AGENT_QUEUE", "Ethernet0|5")]
    assert (orders["floor_bytes"], orders["ceiling_bytes"]) == ("1500", "200000")


def test_pias_stage_maps_its_dscp_to_its_own_strict_queue() -> None:
    intent = t.intent(t.RPC_PIAS, t.BULK)
    config = compile_switch(intent, intent.switches[0])
    dscp_map = config[("DSCP_TO_TC_MAP", "SLUICE")]
    assert (dscp_map["34"], dscp_map["36"]) == ("6", "4")
    assert config[("TC_TO_QUEUE_MAP", "SLUICE")]["4"] == "4"
    assert config[("QUEUE", "Ethernet0|4")]["scheduler"] == "SLUICE_SCHED_4"
    assert config[("SCHEDULER", "SLUICE_SCHED_4")] == {"type": "STRICT"}
    # The stage keeps the class's ECN mode (standard): the same K = 12 500 B as queue 6, in
    # a profile of its own queue, so a lambda change moves both in place (stable names).
    stage, head = (config[("QUEUE", f"Ethernet0|{q}")]["wred_profile"] for q in (4, 6))
    assert (stage, head) == ("SLUICE_WRED_10G_Q4", "SLUICE_WRED_10G_Q6")
    assert config[("WRED_PROFILE", stage)] == config[("WRED_PROFILE", head)]
    assert thresholds(config[("WRED_PROFILE", stage)]) == {"12500"}


def test_static_profiles_are_shared_across_ports_and_split_by_speed() -> None:
    ports = (*((f"Ethernet{4 * i}", 10) for i in range(64)), ("Ethernet256", 40))
    intent = t.intent(t.VOICE, t.BULK, t.WEB, switches=(t.switch(ports=ports),))
    config = compile_switch(intent, intent.switches[0])
    wred = only(config, "WRED_PROFILE")
    # Two ECN queues x two speeds: 10G gives 12 500 and 9 375; 40G gives K = 5e9 x 10e-6 =
    # 50 000 and 50 000 x 3 / 4 = 37 500. Four profiles for 65 ports, not 130.
    assert sorted(min(thresholds(f)) for f in wred.values()) == ["12500", "37500", "50000", "9375"]
    assert all(len(name) <= 32 and name.startswith("SLUICE_") for name in wred)
    assert len(only(config, "QUEUE")) == 65 * 3


def test_every_entry_satisfies_its_schema_and_every_reference_resolves() -> None:
    intent = t.intent(
        t.RPC_PIAS,
        t.BULK,
        t.STORAGE_MQECN,
        switches=(t.switch(ports=(("Ethernet0", 25), ("Ethernet8", 100))),),
    )
    config = compile_switch(intent, intent.switches[0])
    for (table, key), fields in config.items():
        schema = SCHEMAS[table]
        assert schema.key_problem(key) is None, (table, key)
        assert schema.field_problems(fields) == [], (table, key)
        for spec in schema.references():
            if spec.name in fields and spec.ref in SCHEMAS:
                assert (spec.ref, fields[spec.name]) in config, (table, key, spec.name)


def test_version_follows_the_config() -> None:
    one = t.intent(t.VOICE, t.BULK)
    same = t.intent(t.VOICE, t.BULK)
    slower = t.intent(t.VOICE, t.BULK, fabric=t.FABRIC.model_copy(update={"base_rtt_us": 20}))

    def version(intent: object) -> str:
        config = compile_fleet(intent)["leaf1"]  # type: ignore[arg-type]
        return config[("SLUICE_AGENT", "global")]["version"]

    # QJUMP is enforced on hosts; nothing on the switch changes, so neither does the version.
    qjump = t.intent(t.VOICE, t.BULK, fabric=t.FABRIC.model_copy(update={"qjump": Qjump(hosts=8)}))
    assert version(one) == version(same) == version(qjump)
    assert version(one) != version(slower)


def test_no_classes_compiles_to_nothing() -> None:
    intent = t.intent()
    assert compile_switch(intent, intent.switches[0]) == {}


def test_fleet_compiles_every_switch_by_name() -> None:
    switches = (t.switch("leaf1"), t.switch("leaf2", (("Ethernet0", 40),), gnmi_port=50052))
    intent = t.intent(t.VOICE, switches=switches)
    fleet = compile_fleet(intent)
    assert set(fleet) == {"leaf1", "leaf2"}
    assert fleet["leaf1"] == compile_switch(intent, switches[0])


def test_dangling_reference_fails_loudly() -> None:
    intent = t.intent(t.VOICE, t.BULK)
    config = compile_switch(intent, intent.switches[0])
    config[("QUEUE", "Ethernet0|5")] = {"scheduler": "SLUICE_SCHED_7"}
    with pytest.raises(
        CompiledConfigInvalid, match=r"QUEUE.scheduler names SCHEDULER\|SLUICE_SCHED_7"
    ):
        check_references(split_by_table(config))


def test_a_class_with_its_own_lambda_gets_its_own_k_and_orders_it_to_the_agent() -> None:
    # Fabric lambda 1: K = 12 500 B at 10 Gb/s and 10 us (above). bulk (per-queue-minimum,
    # weight 3 of 4) with ecn_lambda 2: K_bulk = 25 000 B, threshold 25 000 x 3 / 4 = 18 750.
    # storage (MQ-ECN, weight 1 of 4) with ecn_lambda 0.5: K_storage = 6 250 B, ceiling 6 250,
    # floor = static = 6 250 x 1 / 4 = 1 562.5 -> 1 562 (whole bytes, rounded down; above the
    # 1 500 B MTU).
    # voice keeps the fabric's: 12 500.
    bulk = t.BULK.model_copy(update={"ecn_lambda": 2.0})
    storage = t.STORAGE_MQECN.model_copy(update={"ecn_lambda": 0.5})
    intent = t.intent(t.VOICE, bulk, storage)
    config = compile_switch(intent, intent.switches[0])
    queues = only(config, "QUEUE")
    wred = only(config, "WRED_PROFILE")
    assert thresholds(wred[queues["Ethernet0|1"]["wred_profile"]]) == {"18750"}
    assert thresholds(wred[queues["Ethernet0|5"]["wred_profile"]]) == {"12500"}
    orders = config[("SLUICE_AGENT_QUEUE", "Ethernet0|3")]
    assert (orders["floor_bytes"], orders["ceiling_bytes"], orders["static_bytes"]) == (
        "1562",
        "6250",
        "1562",
    )
    assert orders["lambda"] == "0.5"
    # The agent's global lambda stays the fabric's; unmanaged queues carry no lambda.
    assert config[("SLUICE_AGENT", "global")]["lambda"] == "1"
    assert "lambda" not in config[("SLUICE_AGENT_QUEUE", "Ethernet0|1")]


def test_a_class_lambda_equal_to_none_keeps_the_version_and_another_changes_it() -> None:
    def version(intent: object) -> str:
        config = compile_fleet(intent)["leaf1"]  # type: ignore[arg-type]
        return config[("SLUICE_AGENT", "global")]["version"]

    plain = t.intent(t.VOICE, t.STORAGE_MQECN)
    tuned = t.intent(t.VOICE, t.STORAGE_MQECN.model_copy(update={"ecn_lambda": 0.5}))
    same_k = t.intent(t.VOICE, t.STORAGE_MQECN.model_copy(update={"ecn_lambda": 1.0}))
    assert version(plain) != version(tuned)
    # lambda 1.0 on the class gives the fabric's K, but the agent is ordered it explicitly.
    assert version(plain) != version(same_k)
    assert version(plain) == version(t.intent(t.VOICE, t.STORAGE_MQECN))
