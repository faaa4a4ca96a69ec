"""Ordered diff: what changes, in which order, and what is never touched."""

from __future__ import annotations

from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, diff_fleet, plan_switch
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.sonic.tables import SCHEMAS
from tests.unit.sonic import intents as t

# What an operator configured by hand on the switch before sluice arrived (sonic-buildimage
# src/sonic-yang-models/doc/Configuration.md).
OPERATOR: SwitchConfig = {
    ("WRED_PROFILE", "AZURE_LOSSLESS"): {
        "green_min_threshold": "1048576",
        "green_max_threshold": "2097152",
        "ecn": "ecn_all",
    },
    ("SCHEDULER", "scheduler.0"): {"type": "DWRR", "weight": "14"},
    ("DSCP_TO_TC_MAP", "AZURE"): {"46": "5", "8": "0"},
    ("QUEUE", "Ethernet0|0"): {"scheduler": "scheduler.0"},
    ("QUEUE", "Ethernet0|5"): {"scheduler": "scheduler.0", "wred_profile": "AZURE_LOSSLESS"},
    ("PORT_QOS_MAP", "Ethernet0"): {
        "pfc_enable": "3,4",
        "tc_to_pg_map": "AZURE",
        "dscp_to_tc_map": "AZURE",
    },
    ("BUFFER_POOL", "egress_lossy_pool"): {"type": "egress", "mode": "dynamic"},
    ("PORT", "Ethernet0"): {"speed": "10000", "admin_status": "up"},
}


def desired(*classes: object) -> SwitchConfig:
    intent = t.intent(*classes)  # type: ignore[arg-type]
    return compile_switch(intent, intent.switches[0])


def references_of(entry: tuple[str, str], fields: dict[str, str]) -> list[tuple[str, str]]:
    """The (table, key) entries this entry's fields name, per its schema."""
    schema = SCHEMAS[entry[0]]
    return [(s.ref, fields[s.name]) for s in schema.references() if s.ref and s.name in fields]


def assert_writes_precede_their_references(plan: Plan) -> None:
    position = {op.entry_key: i for i, op in enumerate(plan.ops) if op.kind != "delete"}
    for i, op in enumerate(plan.ops):
        if op.kind == "delete":
            continue
        for target in references_of(op.entry_key, op.fields):
            if target in position:
                assert position[target] < i, (op.entry_key, target)


def assert_deletes_follow_their_referrers(plan: Plan, observed: SwitchConfig) -> None:
    kinds = [op.kind for op in plan.ops]
    assert kinds == sorted(kinds, key=lambda k: k == "delete"), (
        "every write comes before every delete"
    )
    position = {op.entry_key: i for i, op in enumerate(plan.ops) if op.kind == "delete"}
    for i, op in enumerate(plan.ops):
        if op.kind != "delete":
            continue
        for target in references_of(op.entry_key, observed[op.entry_key]):
            if target in position:
                assert i < position[target], (op.entry_key, target)


def test_empty_switch_gets_every_entry_as_an_add_in_reference_order() -> None:
    want = desired(t.VOICE, t.BULK, t.STORAGE_MQECN)
    plan = plan_switch("leaf1", want, {})
    assert {op.kind for op in plan.ops} == {"add"}
    assert {op.entry_key for op in plan.ops} == set(want)
    assert plan.counts == {"add": len(want), "change": 0, "delete": 0}
    assert_writes_precede_their_references(plan)
    # SLUICE_AGENT is written after the per-queue orders and profiles it points the agent at.
    keys = [op.entry_key for op in plan.ops]
    assert keys.index(("SLUICE_AGENT", "global")) > keys.index(
        ("SLUICE_AGENT_QUEUE", "Ethernet0|3")
    )
    assert keys.index(("SLUICE_AGENT", "global")) > keys.index(
        ("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")
    )


def test_identical_switch_needs_no_ops() -> None:
    want = desired(t.VOICE, t.BULK)
    observed = {k: dict(v) for k, v in want.items()}
    assert plan_switch("leaf1", want, observed).ops == ()


def test_operator_entries_and_fields_are_left_alone() -> None:
    want = desired(t.VOICE, t.BULK)
    plan = plan_switch("leaf1", want, OPERATOR)
    touched = {op.entry_key for op in plan.ops}
    for entry in (
        ("WRED_PROFILE", "AZURE_LOSSLESS"),
        ("SCHEDULER", "scheduler.0"),
        ("DSCP_TO_TC_MAP", "AZURE"),
        (
            "QUEUE",
            "Ethernet0|0",
        ),
        ("BUFFER_POOL", "egress_lossy_pool"),
        ("PORT", "Ethernet0"),
    ):
        assert entry not in touched
    assert not [op for op in plan.ops if op.kind == "delete"]

    port_map = next(op for op in plan.ops if op.entry_key == ("PORT_QOS_MAP", "Ethernet0"))
    # Only the two map fields: the operator's dscp_to_tc_map is overwritten (the intent asks
    # for this port), pfc_enable and tc_to_pg_map are not sluice's and not in the op.
    assert port_map.kind == "change"
    assert port_map.fields == {"dscp_to_tc_map": "SLUICE", "tc_to_queue_map": "SLUICE"}
    assert port_map.old_fields == {"dscp_to_tc_map": "AZURE"}
    assert port_map.removed_fields == ()

    after = apply_plan(OPERATOR, plan)
    assert after[("PORT_QOS_MAP", "Ethernet0")] == {
        "pfc_enable": "3,4",
        "tc_to_pg_map": "AZURE",
        "dscp_to_tc_map": "SLUICE",
        "tc_to_queue_map": "SLUICE",
    }
    for entry, fields in OPERATOR.items():
        if entry not in touched:
            assert after[entry] == fields
    assert plan_switch("leaf1", want, after).ops == ()


def test_removing_a_class_deletes_its_entries_in_reverse_order() -> None:
    before = desired(t.VOICE, t.BULK, t.STORAGE_MQECN)
    running = apply_plan(OPERATOR, plan_switch("leaf1", before, OPERATOR))
    after_want = desired(t.VOICE, t.BULK)  # storage (queue 3, MQ-ECN) is gone
    plan = plan_switch("leaf1", after_want, running, before)

    deleted = {op.entry_key: op for op in plan.ops if op.kind == "delete"}
    assert set(deleted) >= {
        ("QUEUE", "Ethernet0|3"),
        ("BUFFER_QUEUE", "Ethernet0|3"),
        ("SCHEDULER", "SLUICE_SCHED_3"),
        ("WRED_PROFILE", "SLUICE_Q_Ethernet0_3"),
        ("SLUICE_AGENT_QUEUE", "Ethernet0|3"),
    }
    # Nothing the operator set is deleted.
    assert not set(deleted) & set(OPERATOR)
    # Shared-table deletes remove only sluice's fields.
    assert deleted[("QUEUE", "Ethernet0|3")].whole_entry is False
    assert deleted[("SCHEDULER", "SLUICE_SCHED_3")].whole_entry is True
    assert_writes_precede_their_references(plan)
    assert_deletes_follow_their_referrers(plan, running)
    # The agent is told first (a change: no dynamic queue left), its orders removed after.
    agent = next(op for op in plan.ops if op.entry_key == ("SLUICE_AGENT", "global"))
    assert (agent.kind, agent.fields["algorithm"], agent.fields["queues"]) == (
        "change",
        "static",
        "",
    )

    converged = apply_plan(running, plan)
    assert plan_switch("leaf1", after_want, converged, after_want).ops == ()
    assert ("QUEUE", "Ethernet0|3") not in converged


def test_removing_every_class_gives_the_operator_back_what_sluice_overwrote() -> None:
    """Leaving restores (the contract since adoption records, issue 25): every field of a
    shared entry that sluice overwrote gets the operator's saved value back, every field and
    entry it added goes, and the switch holds the operator's config, field for field."""
    before = desired(t.VOICE, t.BULK)
    running = apply_plan(OPERATOR, plan_switch("leaf1", before, OPERATOR))
    assert running[("PORT_QOS_MAP", "Ethernet0")]["dscp_to_tc_map"] == "SLUICE"
    assert running[("QUEUE", "Ethernet0|5")]["scheduler"] == "SLUICE_SCHED_5"
    plan = plan_switch("leaf1", {}, running, before, baseline=OPERATOR)
    restores = {op.entry_key: op for op in plan.ops if op.kind == "change"}
    assert restores[("PORT_QOS_MAP", "Ethernet0")].fields == {"dscp_to_tc_map": "AZURE"}
    assert restores[("PORT_QOS_MAP", "Ethernet0")].removed_fields == ("tc_to_queue_map",)
    assert restores[("QUEUE", "Ethernet0|5")].fields == {
        "scheduler": "scheduler.0",
        "wred_profile": "AZURE_LOSSLESS",
    }
    assert_deletes_follow_their_referrers(plan, running)
    left = apply_plan(running, plan)
    assert left == OPERATOR
    assert plan_switch("leaf1", {}, left, before, baseline=OPERATOR).ops == ()


def test_without_a_baseline_leaving_deletes_what_sluice_overwrote() -> None:
    """A switch sluice managed before adoption records has no saved values: sluice's fields
    go, and the operator's overwritten ones cannot come back."""
    before = desired(t.VOICE, t.BULK)
    running = apply_plan(OPERATOR, plan_switch("leaf1", before, OPERATOR))
    plan = plan_switch("leaf1", {}, running, before)
    assert {op.kind for op in plan.ops} == {"delete"}
    left = apply_plan(running, plan)
    assert left[("PORT_QOS_MAP", "Ethernet0")] == {"pfc_enable": "3,4", "tc_to_pg_map": "AZURE"}
    assert ("QUEUE", "Ethernet0|5") not in left
    assert all(
        not key.startswith("SLUICE") and not table.startswith("SLUICE") for table, key in left
    )


def test_a_port_dropped_from_the_intent_gets_its_operator_values_back() -> None:
    """Not only a release: a shared field sluice stops setting on one port is restored
    while the rest of the switch stays sluice's."""
    two_ports = t.switch(ports=(("Ethernet0", 10), ("Ethernet4", 10)))
    operator = {
        **OPERATOR,
        ("PORT", "Ethernet4"): {"speed": "10000", "admin_status": "up"},
        ("PORT_QOS_MAP", "Ethernet4"): {"dscp_to_tc_map": "AZURE", "pfc_enable": "3,4"},
    }
    both = t.intent(t.VOICE, switches=(two_ports,))
    one = t.intent(t.VOICE)
    before = compile_switch(both, both.switches[0])
    after = compile_switch(one, one.switches[0])
    running = apply_plan(operator, plan_switch("leaf1", before, operator))
    plan = plan_switch("leaf1", after, running, before, baseline=operator)
    left = apply_plan(running, plan)
    assert left[("PORT_QOS_MAP", "Ethernet4")] == operator[("PORT_QOS_MAP", "Ethernet4")]
    assert left[("PORT_QOS_MAP", "Ethernet0")]["dscp_to_tc_map"] == "SLUICE"
    assert plan_switch("leaf1", after, left, after, baseline=operator).ops == ()


def test_agent_moved_thresholds_are_not_fought() -> None:
    want = desired(t.VOICE, t.STORAGE_MQECN)
    observed = {k: dict(v) for k, v in want.items()}
    observed[("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]["green_min_threshold"] = "7000"
    observed[("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]["green_max_threshold"] = "7000"
    assert plan_switch("leaf1", want, observed).ops == ()

    observed[("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]["ecn"] = "ecn_none"  # not the agent's
    (op,) = plan_switch("leaf1", want, observed).ops
    assert (op.kind, op.fields["ecn"], op.old_fields["ecn"]) == ("change", "ecn_all", "ecn_none")
    assert "green_min_threshold" not in op.fields  # the agent's live value stands


def test_stale_field_on_a_sluice_entry_is_removed() -> None:
    want = desired(t.VOICE, t.BULK)
    observed = {k: dict(v) for k, v in want.items()}
    observed[("SCHEDULER", "SLUICE_SCHED_5")] = {"type": "STRICT", "weight": "7"}
    (op,) = plan_switch("leaf1", want, observed).ops
    assert (op.kind, op.removed_fields) == ("change", ("weight",))
    assert apply_plan(observed, Plan("leaf1", (op,)))[("SCHEDULER", "SLUICE_SCHED_5")] == {
        "type": "STRICT"
    }


def test_owned_entry_without_prefix_is_deleted_unowned_one_is_not() -> None:
    observed: SwitchConfig = {
        ("SCHEDULER", "legacy"): {"type": "STRICT"},
        ("SCHEDULER", "other"): {"type": "STRICT"},
    }
    plan = plan_switch("leaf1", {}, observed, owned=[("SCHEDULER", "legacy")])
    assert [(op.kind, op.key) for op in plan.ops] == [("delete", "legacy")]


def test_diff_fleet_plans_desired_switches_only() -> None:
    want = desired(t.VOICE)
    plans = diff_fleet({"leaf1": want}, {"leaf1": {}, "gone": dict(want)})
    assert set(plans) == {"leaf1"}
    assert plans["leaf1"].counts["add"] == len(want)


def test_op_paths_and_plan_summary() -> None:
    op = Op(
        "change",
        "QUEUE",
        "Ethernet0|3",
        {"scheduler": "S"},
        {"scheduler": "T", "wred_profile": "W"},
        False,
    )
    assert op.gnmi_path == "/CONFIG_DB/localhost/QUEUE/Ethernet0|3"
    assert op.field_path("wred_profile") == "/CONFIG_DB/localhost/QUEUE/Ethernet0|3/wred_profile"
    assert op.removed_fields == ("wred_profile",)
    plan = Plan("leaf1", (op, Op("add", "SCHEDULER", "S", {"type": "STRICT"}, {})))
    assert plan.counts == {"add": 1, "change": 1, "delete": 0}
    assert plan.counts_by_table == {"QUEUE": {"change": 1}, "SCHEDULER": {"add": 1}}
    # A QUEUE change takes its port admin down and up on a SONiC switch: the summary says so.
    assert plan.summary() == "leaf1: 1 add, 1 change, 0 delete; takes 1 port(s) down: Ethernet0"
    assert Plan("leaf1", plan.ops[1:]).summary() == "leaf1: 1 add, 0 change, 0 delete"
    assert plan.as_dict()["ops"][0]["path"] == "/CONFIG_DB/localhost/QUEUE/Ethernet0|3"  # type: ignore[index]
