"""Health gates judged from values (controller/rollout/gates.py), with worked numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.rollout.gates import (
    BUILTINS,
    Gate,
    GatePolicy,
    GatePolicyInvalid,
    Stage,
    judge,
    parse_policy,
    read_all,
    switches_regex,
)

AT = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)


def verdict(gate: Gate, value: float | None, baseline: float | None, stage: Stage = "soak") -> str:
    found = judge(gate, stage=stage, batch=1, expression="x", value=value, baseline=baseline, at=AT)
    return found.verdict


def test_increase_gate_worked_example() -> None:
    # Drops were 40 packets/s before the batch; 50 % more is allowed: the limit is 60.
    gate = Gate("drops", 50.0, "max_increase_pct", builtin="drops")
    found = judge(gate, stage="soak", batch=2, expression="q", value=60.0, baseline=40.0, at=AT)
    assert (found.limit, found.verdict) == (60.0, "pass")
    assert verdict(gate, 60.5, 40.0) == "fail"
    assert (
        "60.5 > 60 (baseline 40 + 50 %)"
        in judge(
            gate, stage="soak", batch=2, expression="q", value=60.5, baseline=40.0, at=AT
        ).detail
    )


def test_a_zero_baseline_allows_no_increase() -> None:
    gate = Gate("drops", 50.0, "max_increase_pct", builtin="drops")
    assert verdict(gate, 0.0, 0.0) == "pass"
    assert verdict(gate, 0.001, 0.0) == "fail"


def test_absolute_gate_is_a_ceiling_inclusive() -> None:
    gate = Gate("marks", 0.2, "absolute", builtin="mark_fraction")
    assert verdict(gate, 0.2, None) == "pass"
    assert verdict(gate, 0.21, 0.0) == "fail"


def test_no_value_fails_and_a_relative_gate_without_baseline_fails_after_the_soak() -> None:
    gate = Gate("drops", 10.0, "max_increase_pct", builtin="drops")
    assert verdict(gate, None, 5.0) == "fail"
    assert verdict(gate, 1.0, None) == "fail"
    # Before any batch (pre-check, baseline) there is nothing to compare with: it only records.
    assert verdict(gate, 1.0, None, stage="precheck") == "pass"


def test_builtins_are_scoped_to_the_batch_switches() -> None:
    gate = Gate("drops", 1.0, builtin="drops")
    text = gate.expression(["leaf2", "leaf1"])
    assert text == 'sum(sluice_queue_dropped_packets_per_second{switch=~"leaf1|leaf2"})'
    assert switches_regex(["a.b"]) == r"a\.b"
    raw = Gate("p99", 5.0, query='max(x{switch=~"$switches"})')
    assert raw.expression(["s1"]) == 'max(x{switch=~"s1"})'


def test_read_all_passes_each_expression_to_the_reader_with_its_baseline() -> None:
    policy = GatePolicy(
        (
            Gate("drops", 100.0, "max_increase_pct", builtin="drops"),
            Gate("fallback", 0.0, builtin="agent_fallback"),
        )
    )
    values = {BUILTINS["drops"].replace("$switches", "leaf1"): 30.0}
    found = read_all(
        policy,
        lambda q: values.get(q, 1.0),
        stage="soak",
        batch=1,
        switches=["leaf1"],
        baselines={"drops": 10.0},
        at=AT,
    )
    assert [(e.gate, e.value, e.limit, e.verdict) for e in found] == [
        ("drops", 30.0, 20.0, "fail"),
        ("fallback", 1.0, 0.0, "fail"),
    ]


def test_policy_round_trips_and_rejects_bad_gates() -> None:
    policy = GatePolicy((Gate("drops", 5.0, builtin="drops"),), 30.0, "halt", True)
    assert parse_policy(policy.to_json()) == policy
    assert parse_policy(None) is None
    with pytest.raises(GatePolicyInvalid, match="unknown built-in"):
        parse_policy({"gates": [{"builtin": "nope", "threshold": 1}]})
    with pytest.raises(GatePolicyInvalid, match="exactly one"):
        parse_policy({"gates": [{"name": "a", "builtin": "drops", "query": "x", "threshold": 1}]})
    with pytest.raises(GatePolicyInvalid, match="unique"):
        parse_policy({"gates": [{"builtin": "drops", "threshold": 1}] * 2})
    with pytest.raises(GatePolicyInvalid, match="on_fail"):
        parse_policy({"gates": [], "on_fail": "explode"})
