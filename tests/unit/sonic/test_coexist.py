"""Coexisting with an operator's QoS config: merged maps, the lossless rule (a test per case),
and the round trip from the operator's config through sluice's and back."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.errors import FieldProblem, LosslessConflict
from controller.intent.models import EcnMode
from controller.sonic.coexist import (
    BASELINE_TABLES,
    coexist,
    effective,
    lossless_ports,
    lossless_problems,
    merged_map_name,
    operator_baseline,
    refuse_lossless_changes,
    sluice_leftovers,
)
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, plan_switch, with_ownership
from controller.sonic.model import SwitchConfig
from tests.unit.sonic import intents as t
from vsonic.seed import operator_qos_config

PORTS = ("Ethernet0", "Ethernet4")


def td2(ports: tuple[str, ...] = PORTS) -> SwitchConfig:
    """SONiC's default QoS for a Trident2 switch (vsonic.seed), with its ports, as entries."""
    config: SwitchConfig = {
        ("PORT", port): {"speed": "10000", "admin_status": "up"} for port in ports
    }
    for table, entries in operator_qos_config(list(ports)).items():
        for key, fields in entries.items():
            config[(table, key)] = dict(fields)
    return config


OPERATOR = td2()
LOSSY = (t.VOICE, t.BULK)  # queues 5 and 1, DSCPs 46, 10 and 12: none lossless on td2


def compiled(*classes: object, ports: tuple[str, ...] = PORTS) -> SwitchConfig:
    switch = t.switch(ports=tuple((p, 10) for p in ports))
    intent = t.intent(*classes, switches=(switch,))  # type: ignore[arg-type]
    return compile_switch(intent, intent.switches[0])


def paths(problems: Sequence[FieldProblem]) -> set[str]:
    return {p.path for p in problems}


def test_a_port_bound_to_an_operator_map_gets_a_merged_one() -> None:
    found = coexist(compiled(*LOSSY), OPERATOR)
    binding = found.config[("PORT_QOS_MAP", "Ethernet0")]
    assert binding == {"dscp_to_tc_map": "SLUICE_AZURE", "tc_to_queue_map": "SLUICE_AZURE"}
    merged = found.config[("DSCP_TO_TC_MAP", "SLUICE_AZURE")]
    # The intent's DSCPs go to its queues; every other DSCP keeps the operator's TC.
    assert (merged["46"], merged["10"], merged["12"]) == ("5", "1", "1")
    assert (merged["3"], merged["4"], merged["8"], merged["5"]) == ("3", "4", "0", "2")
    assert len(merged) == 64
    inherited = found.inherited[("DSCP_TO_TC_MAP", "SLUICE_AZURE")]
    assert "3" in inherited
    assert "46" not in inherited
    assert set(inherited.values()) == {"AZURE"}
    tc = found.config[("TC_TO_QUEUE_MAP", "SLUICE_AZURE")]
    assert tc == {str(i): str(i) for i in range(8)}
    # sluice's plain maps are bound by no port any more: not written.
    assert ("DSCP_TO_TC_MAP", "SLUICE") not in found.config
    assert lossless_problems(found.config, OPERATOR) == []


def test_a_fresh_switch_keeps_sluices_own_maps() -> None:
    desired = compiled(*LOSSY)
    assert effective(desired, None) == desired
    assert effective(desired, {}) == desired
    bare = {("PORT", "Ethernet0"): {"speed": "10000"}}
    assert effective(desired, bare) == desired


def test_the_switch_wide_map_counts_for_a_port_without_its_own() -> None:
    operator = {k: v for k, v in OPERATOR.items() if k != ("PORT_QOS_MAP", "Ethernet4")}
    found = coexist(compiled(*LOSSY), operator)
    assert found.config[("PORT_QOS_MAP", "Ethernet4")]["dscp_to_tc_map"] == "SLUICE_AZURE"
    # No TC->queue map of its own: sluice's plain one, which the other port no longer uses.
    assert found.config[("PORT_QOS_MAP", "Ethernet4")]["tc_to_queue_map"] == "SLUICE"
    assert ("TC_TO_QUEUE_MAP", "SLUICE") in found.config


def test_remapping_a_lossless_dscp_to_a_lossy_class_is_refused() -> None:
    """Case 1 of 3: DSCP 3 is lossless (TC 3, pfc_enable 3,4); a class that takes it to
    queue 1 would make RoCE lossy."""
    grabs_3 = t.dwrr("bulk", 1, 3, EcnMode.PER_QUEUE_MINIMUM, (10, 3))
    problems = lossless_problems(effective(compiled(t.VOICE, grabs_3), OPERATOR), OPERATOR)
    assert paths(problems) == {"DSCP_TO_TC_MAP|SLUICE_AZURE.3"}
    (problem,) = problems
    assert "lossless (PFC priority 3)" in problem.reason
    assert "lossy TC 1" in problem.reason
    assert "Ethernet0, Ethernet4" in problem.reason


def test_changing_a_lossless_queues_scheduler_is_refused() -> None:
    """Case 2 of 3: a class on queue 4 (ECN off: no WRED) would set its scheduler and its
    buffer profile; both are the operator's lossless settings."""
    on_4 = t.dwrr("bulk", 4, 3, EcnMode.OFF, (10,))
    problems = lossless_problems(effective(compiled(t.VOICE, on_4), OPERATOR), OPERATOR)
    assert {
        "QUEUE|Ethernet0|4.scheduler",
        "QUEUE|Ethernet4|4.scheduler",
        "BUFFER_QUEUE|Ethernet0|4.profile",
    } <= paths(problems)
    assert not any(p.endswith(".wred_profile") for p in paths(problems))
    scheduler = next(p for p in problems if p.path == "QUEUE|Ethernet0|4.scheduler")
    assert "the operator's scheduler.1" in scheduler.reason
    assert "SLUICE_SCHED_4" in scheduler.reason
    # DSCP 10 is lossy on the operator's map, and the class puts it on PFC priority 4.
    assert "DSCP_TO_TC_MAP|SLUICE_AZURE.10" in paths(problems)


def test_changing_a_lossless_queues_wred_profile_is_refused() -> None:
    """Case 3 of 3: a class with ECN on queue 3 would replace AZURE_LOSSLESS."""
    on_3 = t.dwrr("storage", 3, 1, EcnMode.STANDARD, (18,))
    problems = lossless_problems(effective(compiled(t.VOICE, on_3), OPERATOR), OPERATOR)
    wred = next(p for p in problems if p.path == "QUEUE|Ethernet0|3.wred_profile")
    assert "the operator's AZURE_LOSSLESS" in wred.reason
    assert "QUEUE|Ethernet0|3.scheduler" in paths(problems)


def test_moving_a_lossless_tc_to_another_queue_is_refused() -> None:
    """An operator whose lossless TC 3 lives in queue 5: a class on queue 3 would write
    TC 3 -> queue 3 into the merged map."""
    operator = dict(OPERATOR)
    operator[("TC_TO_QUEUE_MAP", "AZURE")] = {**OPERATOR[("TC_TO_QUEUE_MAP", "AZURE")], "3": "5"}
    on_3 = t.dwrr("storage", 3, 1, EcnMode.OFF, (18,))
    problems = lossless_problems(effective(compiled(t.VOICE, on_3), operator), operator)
    assert "TC_TO_QUEUE_MAP|SLUICE_AZURE.3" in paths(problems)
    assert lossless_ports(operator)["Ethernet0"].queues == frozenset({3, 4, 5})


def test_a_priority_the_intent_declares_lossless_is_its_own() -> None:
    on_4 = t.dwrr("bulk", 4, 3, EcnMode.OFF, (10,))
    desired = effective(compiled(t.VOICE, on_4), OPERATOR)
    assert lossless_problems(desired, OPERATOR, declared=(4,)) == []
    assert lossless_problems(desired, OPERATOR, declared=(3,)) != []


def test_refusal_names_the_switch_and_every_field() -> None:
    grabs_3 = t.dwrr("bulk", 1, 3, EcnMode.PER_QUEUE_MINIMUM, (10, 3))
    with pytest.raises(LosslessConflict) as refused:
        refuse_lossless_changes(
            effective(compiled(t.VOICE, grabs_3), OPERATOR), OPERATOR, switch="leaf1"
        )
    assert [p.path for p in refused.value.problems] == ["leaf1: DSCP_TO_TC_MAP|SLUICE_AZURE.3"]
    refuse_lossless_changes(effective(compiled(*LOSSY), OPERATOR), OPERATOR, switch="leaf1")


def test_the_baseline_is_the_operators_part_and_must_be_taken_before_the_first_write() -> None:
    kept = operator_baseline(OPERATOR)
    # The QoS tables, and where buffermgrd writes lossless groups (the cables; no model said)
    cables = {("CABLE_LENGTH", "AZURE"): {"Ethernet0": "5m", "Ethernet4": "5m"}}
    assert kept == {k: v for k, v in OPERATOR.items() if k[0] in BASELINE_TABLES} | cables
    metadata = {("DEVICE_METADATA", "localhost"): {"hostname": "leaf1", "buffer_model": "dynamic"}}
    assert operator_baseline(OPERATOR | metadata) == kept | {
        ("DEVICE_METADATA", "localhost"): {"buffer_model": "dynamic"}
    }
    assert ("BUFFER_PG", "Ethernet0|0") in kept
    assert ("PORT", "Ethernet0") not in kept
    running = apply_plan(
        OPERATOR, plan_switch("leaf1", effective(compiled(*LOSSY), OPERATOR), OPERATOR)
    )
    after = operator_baseline(running)
    assert sluice_leftovers(after) == []
    assert sluice_leftovers(running)
    assert sluice_leftovers(OPERATOR) == []
    # Read after sluice wrote, the operator's bindings are gone from it: the adoption record
    # is taken from the read before the first write for that reason.
    assert "dscp_to_tc_map" not in after[("PORT_QOS_MAP", "Ethernet0")]


def test_merged_names_stay_within_sonics_limit() -> None:
    assert merged_map_name("AZURE") == "SLUICE_AZURE"
    long = merged_map_name("A" * 30)
    assert len(long) <= 32
    assert long.startswith("SLUICE_AAAA")
    assert merged_map_name("A" * 30) != merged_map_name("A" * 29 + "B")


def test_adopt_then_release_gives_the_operator_config_back_field_for_field() -> None:
    """The whole round trip in the model: the operator's config, sluice's merged config on
    top (lossless settings untouched), then a release from the baseline."""
    desired = effective(compiled(*LOSSY), OPERATOR)
    first = plan_switch("leaf1", desired, OPERATOR, baseline=OPERATOR)
    running = apply_plan(OPERATOR, first)
    for port in PORTS:
        assert running[("PORT_QOS_MAP", port)]["pfc_enable"] == "3,4"
        assert running[("QUEUE", f"{port}|3")] == OPERATOR[("QUEUE", f"{port}|3")]
        assert running[("BUFFER_QUEUE", f"{port}|3-4")] == {"profile": "egress_lossless_profile"}
    assert plan_switch("leaf1", desired, running, desired, baseline=OPERATOR).ops == ()
    release = plan_switch("leaf1", {}, running, desired, baseline=OPERATOR)
    assert apply_plan(running, release) == OPERATOR


def test_a_plan_names_the_operators_fields_kept_and_overwritten() -> None:
    desired = coexist(compiled(*LOSSY), OPERATOR)
    plan = with_ownership(
        plan_switch("leaf1", desired.config, OPERATOR, baseline=OPERATOR),
        OPERATOR,
        OPERATOR,
        desired.inherited,
    )
    port_map = {o.field: o for o in plan.ownership[("PORT_QOS_MAP", "Ethernet0")]}
    assert port_map["dscp_to_tc_map"].owner == "operator_overwritten"
    assert port_map["dscp_to_tc_map"].saved == "AZURE"
    assert port_map["dscp_to_tc_map"].value == "SLUICE_AZURE"
    assert port_map["pfc_enable"].owner == "operator_kept"
    queue = {o.field: o for o in plan.ownership[("QUEUE", "Ethernet0|5")]}
    assert (queue["scheduler"].owner, queue["scheduler"].saved) == (
        "operator_overwritten",
        "scheduler.0",
    )
    assert queue["wred_profile"].owner == "sluice"
    merged = {o.field: o for o in plan.ownership[("DSCP_TO_TC_MAP", "SLUICE_AZURE")]}
    assert (merged["3"].owner, merged["3"].source) == ("operator_kept", "AZURE")
    assert merged["46"].owner == "sluice"
    ops = plan.as_dict()["ops"]
    assert isinstance(ops, list)
    assert any("ownership" in op for op in ops)
