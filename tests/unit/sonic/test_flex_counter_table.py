"""FLEX_COUNTER_TABLE from the intent: the agent's interval where an agent runs, SONiC's
defaults otherwise, and the diff owning only the two fields sluice writes. A lossless class
enables the priority group counters, except where the operator's config sets them, and the
release gives the operator's entries back exactly."""

from __future__ import annotations

from controller.intent.models import CounterPolling, EcnMode
from controller.services.coexistence import KnownSwitch, pg_counter_warnings
from controller.sonic.coexist import effective
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.sonic.tables.flex_counter_table import operator_disabled, polls_stopped_first
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_coexist import PORTS
from tests.unit.sonic.test_coexist_lossless import desired, operator, rdma


def flex(config: dict[tuple[str, str], dict[str, str]]) -> dict[str, str]:
    return {
        key: fields["POLL_INTERVAL"]
        for (table, key), fields in config.items()
        if table == "FLEX_COUNTER_TABLE" and fields["FLEX_COUNTER_STATUS"] == "enable"
    }


def test_a_dynamic_agent_polls_queues_at_its_interval_and_watermarks_at_their_floor() -> None:
    base = t.intent(t.VOICE, t.BULK, t.STORAGE_MQECN)
    agent = base.fabric.agent.model_copy(update={"interval_ms": 250})
    intent = base.model_copy(update={"fabric": base.fabric.model_copy(update={"agent": agent})})
    # queue = 250 (the agent's), port = 1000 (default), watermark = max(250, 1000 floor).
    assert flex(compile_switch(intent, intent.switches[0])) == {
        "QUEUE": "250",
        "PORT": "1000",
        "QUEUE_WATERMARK": "1000",
    }


def test_wred_ecn_counters_follow_the_queue_group_where_the_platform_has_them() -> None:
    base = t.intent(t.VOICE, t.BULK, t.STORAGE_MQECN)
    counters = CounterPolling(wred_ecn_queue=True, port_interval_ms=500)
    intent = base.model_copy(
        update={"fabric": base.fabric.model_copy(update={"counters": counters})}
    )
    assert flex(compile_switch(intent, intent.switches[0])) == {
        "QUEUE": "100",
        "PORT": "500",
        "QUEUE_WATERMARK": "1000",
        "WRED_ECN_QUEUE": "100",
    }


def test_the_diff_changes_only_sluices_fields_and_keeps_an_operators_groups() -> None:
    intent = t.intent(t.VOICE, t.BULK, t.STORAGE_MQECN)
    desired = compile_switch(intent, intent.switches[0])
    observed = {
        # SONiC's init_cfg.json entries: enabled, default interval, an extra field.
        ("FLEX_COUNTER_TABLE", "QUEUE"): {
            "FLEX_COUNTER_STATUS": "enable",
            "FLEX_COUNTER_DELAY_STATUS": "false",
        },
        ("FLEX_COUNTER_TABLE", "PFCWD"): {"FLEX_COUNTER_STATUS": "enable"},
    }
    plan = plan_switch("leaf1", desired, observed)
    flex_ops = [op for op in plan.ops if op.table == "FLEX_COUNTER_TABLE"]
    by_key = {op.key: op for op in flex_ops}
    assert set(by_key) == {"QUEUE", "PORT", "QUEUE_WATERMARK"}  # never PFCWD
    queue = by_key["QUEUE"]
    assert queue.kind == "change"
    assert not queue.whole_entry  # FLEX_COUNTER_DELAY_STATUS stays the operator's
    assert queue.fields == {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "100"}
    # The agent's orders come after the counters it reads are enabled.
    tables = [op.table for op in plan.ops]
    assert tables.index("FLEX_COUNTER_TABLE") < tables.index("SLUICE_AGENT")


def test_static_ecn_only_uses_the_intents_counter_intervals() -> None:
    intent = t.intent(t.dwrr("bulk", 1, 3, EcnMode.STANDARD, (10,)))
    assert flex(compile_switch(intent, intent.switches[0]))["QUEUE"] == "10000"


# --------------------------------------------------------------------------------------------
# a lossless class's priority group counters (PG_DROP, PG_WATERMARK)

PG_DROP = ("FLEX_COUNTER_TABLE", "PG_DROP")
PG_WATERMARK = ("FLEX_COUNTER_TABLE", "PG_WATERMARK")
ENABLED = {"FLEX_COUNTER_STATUS": "enable"}
LEAF1_PORTS = tuple((p, 10) for p in PORTS)  # the ports of ``desired``'s switch


def lossless_switch(**groups: dict[str, str]) -> SwitchConfig:
    """SONiC's stock Trident2 QoS with the operator's lossless priorities (3, 4), and the
    given priority group counter groups as the operator left them."""
    config = operator()
    config.update({("FLEX_COUNTER_TABLE", group): dict(f) for group, f in groups.items()})
    return config


def adopted(config: SwitchConfig) -> tuple[SwitchConfig, SwitchConfig, Plan]:
    """The rdma class (PFC priority 2) rolled out on ``config``: what sluice writes there,
    the switch afterwards, and the plan that gave it."""
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    plan = plan_switch("leaf1", want, config, baseline=config)
    return want, apply_plan(config, plan), plan


def released(want: SwitchConfig, running: SwitchConfig, baseline: SwitchConfig) -> SwitchConfig:
    """The switch after its release, or its first rollout's rollback: both plan from the
    empty desired state, with the adoption's baseline (controller/rollout/switches.py)."""
    return apply_plan(running, plan_switch("leaf1", {}, running, want, baseline=baseline))


def flex_ops(plan: Plan) -> dict[str, Op]:
    return {op.key: op for op in plan.ops if op.table == "FLEX_COUNTER_TABLE"}


def test_a_lossless_class_enables_the_priority_group_counters_with_their_status_only() -> None:
    own, _, _ = desired(rdma(2, 2, 26))
    assert own[PG_DROP] == own[PG_WATERMARK] == ENABLED
    lossy = t.intent(t.VOICE, t.BULK)
    compiled = compile_switch(lossy, lossy.switches[0])
    assert not {PG_DROP, PG_WATERMARK} & compiled.keys()


def test_groups_the_operator_never_set_are_enabled_and_given_back_exactly() -> None:
    # PG_DROP with an interval of the operator's (counterpoll pg-drop interval) but never
    # enabled; PG_WATERMARK absent.
    config = lossless_switch(PG_DROP={"POLL_INTERVAL": "5000"})
    want, running, plan = adopted(config)
    ops = flex_ops(plan)
    assert (ops["PG_DROP"].kind, ops["PG_DROP"].fields) == ("change", ENABLED)
    assert not ops["PG_DROP"].removed_fields  # the operator's interval stays
    assert (ops["PG_WATERMARK"].kind, ops["PG_WATERMARK"].fields) == ("add", ENABLED)
    assert running[PG_DROP] == {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "5000"}
    assert running[PG_WATERMARK] == ENABLED
    assert plan_switch("leaf1", want, running, want, baseline=config).ops == ()
    assert released(want, running, config) == config


def test_groups_the_operator_enabled_are_left_as_they_are() -> None:
    theirs = {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "10000"}
    config = lossless_switch(PG_DROP=theirs, PG_WATERMARK=ENABLED)
    want, running, plan = adopted(config)
    assert not {PG_DROP, PG_WATERMARK} & want.keys()
    assert not {"PG_DROP", "PG_WATERMARK"} & flex_ops(plan).keys()
    assert running[PG_DROP] == theirs
    assert released(want, running, config) == config
    assert operator_disabled(desired(rdma(2, 2, 26))[0], config) == ()


def test_a_group_the_operator_disabled_stays_off_and_the_plan_warns() -> None:
    off = {"FLEX_COUNTER_STATUS": "disable"}
    config = lossless_switch(PG_DROP=off)
    own, _, _ = desired(rdma(2, 2, 26))
    want, running, plan = adopted(config)
    assert "PG_DROP" not in flex_ops(plan)
    assert running[PG_DROP] == off
    assert running[PG_WATERMARK] == ENABLED  # the other group is sluice's to enable
    assert released(want, running, config) == config
    assert operator_disabled(own, config) == ("PG_DROP",)
    known = {"leaf1": KnownSwitch(config, adopted=True, discovery=None)}
    [warning] = pg_counter_warnings({"leaf1": own}, known)
    assert warning.path == "switches.leaf1"
    assert warning.reason.startswith("FLEX_COUNTER_TABLE|PG_DROP: disabled in the operator's")
    # A switch nothing is known of (no baseline) gets both groups, and no warning.
    assert pg_counter_warnings({"leaf1": own}, {}) == []
    assert effective(own, None)[PG_DROP] == ENABLED


def test_groups_sluice_enabled_are_disabled_by_a_write_before_their_entries_go() -> None:
    # orchagent acts on a SET alone: deleting an enabled group's entry (PG_WATERMARK, all
    # sluice's) or its status field (PG_DROP, the operator's interval left) would leave the
    # group polled; each is disabled first, and the release then ends as the operator had it.
    config = lossless_switch(PG_DROP={"POLL_INTERVAL": "5000"})
    want, running, _ = adopted(config)
    release = plan_switch("leaf1", {}, running, want, baseline=config)
    stops = polls_stopped_first(release)
    # Every group sluice enabled where this stock config sets none: the priority groups, and
    # the queue and port groups (on a switch from SONiC's init_cfg.json those are the
    # operator's, enabled, and stay so).
    groups = ("PG_DROP", "PG_WATERMARK", "PORT", "QUEUE", "QUEUE_WATERMARK")
    assert {op.key: (op.kind, op.fields) for op in stops.ops} == dict.fromkeys(
        groups, ("change", {"FLEX_COUNTER_STATUS": "disable"})
    )
    assert not any(op.removed_fields for op in stops.ops)  # the operator's interval stays
    stopped = apply_plan(running, stops)
    assert stopped[PG_DROP] == {"FLEX_COUNTER_STATUS": "disable", "POLL_INTERVAL": "5000"}
    assert apply_plan(stopped, release) == released(want, running, config) == config
    # Groups the operator's config sets, and plans that delete no enabled group: nothing first.
    theirs = lossless_switch(
        **{group: {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "1000"} for group in groups}
    )
    want, running, rollout = adopted(theirs)
    assert polls_stopped_first(plan_switch("leaf1", {}, running, want, baseline=theirs)).ops == ()
    assert polls_stopped_first(rollout).ops == ()


def test_the_status_sluice_enabled_is_its_own_repaired_and_removed_with_the_class() -> None:
    config = lossless_switch(PG_DROP={"POLL_INTERVAL": "5000"})
    want, running, _ = adopted(config)
    # Turned off behind sluice's back: drift repair enables it again, the interval untouched.
    drifted = {**running, PG_DROP: {"FLEX_COUNTER_STATUS": "disable", "POLL_INTERVAL": "5000"}}
    repair = flex_ops(plan_switch("leaf1", want, drifted, want, baseline=config))
    assert set(repair) == {"PG_DROP"}
    assert repair["PG_DROP"].fields == ENABLED
    # The lossless class dropped (a lossy intent): the groups go as on release.
    lossy_intent = t.intent(t.VOICE, t.BULK, switches=(t.switch(ports=LEAF1_PORTS),))
    lossy = effective(compile_switch(lossy_intent, lossy_intent.switches[0]), config)
    after = apply_plan(running, plan_switch("leaf1", lossy, running, want, baseline=config))
    assert after[PG_DROP] == config[PG_DROP]
    assert PG_WATERMARK not in after
