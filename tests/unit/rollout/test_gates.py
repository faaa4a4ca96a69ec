"""Health gates judged from values (controller/rollout/gates.py), with worked numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.intent.loader import parse_intent
from controller.rollout.gates import (
    BUILTINS,
    NO_VALUE,
    Gate,
    GatePolicy,
    GatePolicyInvalid,
    Stage,
    explain_no_value,
    judge,
    no_reader,
    parse_policy,
    read_all,
    switches_regex,
)
from controller.services.rollouts import gated_for
from tests.unit.intent.test_lossless_intent import lossless_data

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
    # Per switch, its drops; a switch whose agent reports idle counts 0 instead (its last
    # rates are not now's), so a batch of idle switches reads 0, not nothing.
    assert text == (
        "sum((sum by (switch) "
        '(sluice_queue_dropped_packets_per_second{switch=~"leaf1|leaf2"})'
        ' unless on (switch) sluice_agent_mode_info{switch=~"leaf1|leaf2",mode="idle"})'
        " or on (switch) (0 * max by (switch) "
        '(sluice_agent_mode_info{switch=~"leaf1|leaf2",mode="idle"})))'
    )
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
    values = {BUILTINS["drops"].query.replace("$switches", "leaf1"): 30.0}
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


def test_faults_at_the_baseline_do_not_pass_by_standing_still() -> None:
    # "No more agents falling back" with 19 faulty queues before and after the batch: the
    # baseline is no pass mark for a fault count, the limit is 0.
    gate = Gate("agent_fallback", 0.0, "max_increase_pct", builtin="agent_fallback")
    found = judge(gate, stage="soak", batch=0, expression="q", value=19.0, baseline=19.0, at=AT)
    assert (found.limit, found.verdict) == (0.0, "fail")
    assert "19 faults do not pass by standing still" in found.detail
    assert verdict(gate, 0.0, 19.0) == "pass"  # the batch cleared them
    assert verdict(gate, 0.0, 0.0) == "pass"
    assert verdict(gate, 1.0, 0.0) == "fail"
    # The pre-check of the relative gate only records: a fabric with faults may start.
    assert verdict(gate, 19.0, None, stage="precheck") == "pass"
    # A relative gate that counts no faults keeps its baseline as the pass mark.
    drops = Gate("drops", 0.0, "max_increase_pct", builtin="drops")
    assert verdict(drops, 19.0, 19.0) == "pass"


def test_an_objective_holds_or_the_batch_made_it_no_worse() -> None:
    # p99 of small flows, objective 2000 us.
    gate = Gate("fct", 2000.0, "objective", builtin="fct_p99_small", service_class="rpc")
    assert verdict(gate, 1999.0, 900.0) == "pass"
    assert verdict(gate, 2000.5, 900.0) == "fail"  # the batch broke the objective
    # Already missed before the batch (2500 us): no worse than that passes, worse fails.
    found = judge(gate, stage="soak", batch=0, expression="q", value=2400.0, baseline=2500.0, at=AT)
    assert (found.limit, found.verdict) == (2500.0, "pass")
    assert "already missed the objective 2000" in found.detail
    assert verdict(gate, 2600.0, 2500.0) == "fail"
    assert verdict(gate, 3000.0, None, stage="precheck") == "pass"
    assert verdict(gate, 1000.0, None) == "fail"  # after the soak it needs its baseline


def test_the_fct_builtin_reads_one_class_over_the_policy_soak() -> None:
    gate = Gate("f", 50.0, "max_increase_pct", builtin="fct_p99_small", service_class="rpc")
    assert gate.expression(["leaf1"], 29.2) == (
        "histogram_quantile(0.99, sum by (le) (increase("
        'sluice_host_flow_completion_seconds_bucket{class="rpc",size="small"}[30s]))) * 1e6'
    )
    parsed = parse_policy(
        {"gates": [{"builtin": "fct_p99_small", "class": "rpc", "threshold": 10}], "soak_s": 30}
    )
    assert parsed is not None
    assert parsed.gates[0].name == "fct_p99_small.rpc"
    assert parse_policy(parsed.to_json()) == parsed
    with pytest.raises(GatePolicyInvalid, match="needs the class"):
        parse_policy({"gates": [{"builtin": "fct_p99_small", "threshold": 1}]})
    with pytest.raises(GatePolicyInvalid, match="only a per-class built-in"):
        parse_policy({"gates": [{"builtin": "drops", "class": "rpc", "threshold": 1}]})


def test_a_gate_with_no_value_says_which_series_was_empty() -> None:
    fct = Gate("f", 50.0, "max_increase_pct", builtin="fct_p99_small", service_class="rpc")
    expression = fct.expression(["leaf1"], 30.0)
    buckets = 'sluice_host_flow_completion_seconds_bucket{class="rpc",size="small"}'

    def answers(known: dict[str, float]) -> dict[str, float]:
        return {"vector(1)": 1.0, **known}

    # No metrics source, or Prometheus does not answer at all.
    assert "no metrics source is configured" in explain_no_value(
        fct, ["leaf1"], 30.0, expression, no_reader
    )
    assert "Prometheus did not answer" in explain_no_value(
        fct, ["leaf1"], 30.0, expression, lambda _: None
    )
    # No host exporter: the class's buckets have no samples.
    empty = answers({})
    text = explain_no_value(fct, ["leaf1"], 30.0, expression, empty.get)
    assert text == f"{NO_VALUE}: no samples of {buckets}"
    # The buckets exist but no small flow finished in the window.
    exists = answers({f"count({buckets})": 10.0})
    text = explain_no_value(fct, ["leaf1"], 30.0, expression, exists.get)
    assert "no flow of class rpc up to 100 kB finished in the last 30s" in text
    # A raw query names the selectors that had no samples.
    raw = Gate("p", 1.0, query='max(a{switch=~"$switches"}) + max(b{x="1"})')
    query = raw.expression(["s1"])
    some = answers({'count(a{switch=~"s1"})': 2.0})
    text = explain_no_value(raw, ["s1"], 0.0, query, some.get)
    assert text == f'{NO_VALUE}: no samples of b{{x="1"}}'


def test_read_all_explains_a_missing_value_in_the_evaluation() -> None:
    policy = GatePolicy((Gate("drops", 10.0, "max_increase_pct", builtin="drops"),), 5.0)
    (found,) = read_all(
        policy,
        {"vector(1)": 1.0}.get,
        stage="soak",
        batch=0,
        switches=["leaf1"],
        baselines={"drops": 1.0},
        at=AT,
    )
    assert found.verdict == "fail"
    assert found.detail == (
        f'{NO_VALUE}: no samples of sluice_queue_dropped_packets_per_second{{switch=~"leaf1"}}'
    )


def test_a_lossless_class_turns_on_its_gates_in_a_gated_rollout_only() -> None:
    data = lossless_data()
    data["fabric"]["health"] = {"pfc_pause_per_s_critical": 2500}
    intent = parse_intent(data)
    own = Gate("lossless_drops.storage", 5.0, builtin="lossless_drops", service_class="storage")
    policy = gated_for(GatePolicy((own,), soak_s=30.0), intent)
    assert policy is not None
    found = {(g.name, g.threshold, g.comparison) for g in policy.gates}
    assert found == {
        ("lossless_drops.storage", 5.0, "absolute"),  # the operator's own gate of the name wins
        ("pfc_pause_rate.storage", 2500.0, "absolute"),
        ("pfc_storms.storage", 0.0, "absolute"),
    }
    assert policy.soak_s == 30.0
    assert gated_for(None, intent) is None
    assert gated_for(GatePolicy(), intent) == GatePolicy()
    classes = [{k: v for k, v in c.items() if k != "lossless"} for c in data["service_classes"]]
    lossy = parse_intent({**data, "service_classes": classes})
    plain = GatePolicy((own,))
    assert gated_for(plain, lossy) == plain


def test_the_lossless_builtins_read_the_class_on_the_batch() -> None:
    storms = Gate("s", 0.0, builtin="pfc_storms", service_class="storage")
    assert storms.expression(["leaf1"], 30.0) == (
        "(sum(increase(sluice_queue_pfc_storms_detected_total"
        '{switch=~"leaf1",class="storage"}[30s])) or vector(0))'
        ' + (count(sluice_queue_pfc_storm_active{switch=~"leaf1",class="storage"} == 1)'
        " or vector(0))"
    )
    pauses = Gate("p", 3000.0, builtin="pfc_pause_rate", service_class="storage")
    assert pauses.expression(["leaf1", "leaf2"]) == (
        'max({__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second",'
        'switch=~"leaf1|leaf2",class="storage"})'
    )
    with pytest.raises(GatePolicyInvalid, match="needs the class"):
        parse_policy({"gates": [{"builtin": "lossless_drops", "threshold": 0}]})
