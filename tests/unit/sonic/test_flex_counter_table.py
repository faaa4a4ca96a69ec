"""FLEX_COUNTER_TABLE from the intent: the agent's interval where an agent runs, SONiC's
defaults otherwise, and the diff owning only the two fields sluice writes."""

from __future__ import annotations

from controller.intent.models import CounterPolling, EcnMode
from controller.sonic.compile import compile_switch
from controller.sonic.diff import plan_switch
from tests.unit.sonic import intents as t


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
