"""The counterfactual search: its knobs, its score, coordinate descent over a model whose
optimum is known, and the traffic a summary describes. The twin is replaced by closed-form
models here (``bowl``, below); ``bench/tuning_value.py`` runs the search on the real twin."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.qos.pias import load_workload
from controller.tuning.apply import class_lambda
from controller.tuning.search import (
    Knob,
    Score,
    SearchInputInvalid,
    coordinate_search,
    knobs,
    score,
    traffic_from_summary,
)
from controller.tuning.summary import FlowSizeSample, TelemetrySummary
from tests.unit.intent.intents import intent_data


def intent_with(objectives: Mapping[str, float], **ranges: tuple[int, int]) -> Intent:
    data: dict[str, Any] = intent_data()
    for service_class in data["service_classes"]:
        name = service_class["name"]
        if name in objectives:
            service_class["objective"] = {"p99_fct_us_small": objectives[name]}
        if name in ranges:
            low, high = ranges[name]
            service_class["scheduling"]["weight_min"] = low
            service_class["scheduling"]["weight_max"] = high
    return parse_intent(data)


def weight(intent: Intent, name: str) -> int | None:
    return next(c.scheduling.weight for c in intent.service_classes if c.name == name)


def test_knobs_are_each_marking_class_lambda_and_each_ranged_weight() -> None:
    intent = intent_with({}, storage=(30, 90))
    found = {k.parameter: k.values for k in knobs(intent)}
    # control has no ECN (no lambda); bulk's weight has no range (never moves).
    assert set(found) == {
        "ecn_lambda/rpc",
        "ecn_lambda/storage",
        "ecn_lambda/bulk",
        "weight/storage",
    }
    # The current value first, then 1.0 x (0.25, 0.5, 2.0), all inside [0.17, 2.0].
    assert found["ecn_lambda/storage"] == (1.0, 0.25, 0.5, 2.0)
    # 30, 60 (the middle, also the current weight), 90.
    assert found["weight/storage"] == (60.0, 30.0, 90.0)


def test_lambda_candidates_are_clamped_into_the_tuners_bounds() -> None:
    intent = intent_with({})
    (rpc,) = knobs(intent, lambda_factors=(0.1, 5.0))[:1]
    assert rpc == Knob("ecn_lambda/rpc", (1.0, 0.17, 2.0))


def test_score_counts_misses_first_then_the_geometric_mean_ratio() -> None:
    wanted = {"rpc": 1000.0, "storage": 4000.0, "bulk": 100.0}
    # bulk idle (no small flows): no say.
    got = score({"rpc": 2000.0, "storage": 1000.0}, wanted)
    assert got.misses == 1
    assert math.isclose(got.ratio, math.sqrt(2.0 * 0.25))
    assert Score(0, 5.0) < Score(1, 0.1)  # meeting every objective beats any ratio


def bowl(best_lambda: float, best_weight: int) -> Any:
    """A model twin on one seed: storage's p99 grows with the distance of its lambda and
    weight from a known optimum; rpc's does not move. Counts its calls."""
    calls: list[Intent] = []

    def evaluate(candidate: Intent) -> list[dict[str, float]]:
        calls.append(candidate)
        lam = class_lambda(candidate, "storage")
        w = weight(candidate, "storage") or 0
        distance = abs(math.log(lam / best_lambda)) + abs(w - best_weight) / 30
        return [{"storage": 1000.0 * (1 + distance), "rpc": 500.0}]

    evaluate.calls = calls  # type: ignore[attr-defined]
    return evaluate


def test_coordinate_search_finds_the_models_optimum_and_proposes_it() -> None:
    intent = intent_with({"storage": 1500.0, "rpc": 1000.0}, storage=(30, 90))
    evaluate = bowl(0.5, 90)
    axes = [k for k in knobs(intent) if k.parameter.endswith("storage")]
    result = coordinate_search(intent, evaluate, knob_list=axes, passes=2)
    assert dict(result.best.setting) == {"ecn_lambda/storage": 0.5, "weight/storage": 90.0}
    # Start: 1000 x 1 storage (lambda 1 is log 2 away, weight 60 is 1 away: 1 + 0.69 + 1).
    assert result.start.score.misses == 1
    assert result.best.score.misses == 0
    moved = {c.parameter: (c.current, c.proposed) for c in result.changes}
    assert moved == {"ecn_lambda/storage": (1.0, 0.5), "weight/storage": (60, 90)}
    assert all(c.evidence.rule == "search.twin" for c in result.changes)
    # One pass: start + 3 lambdas + 2 weights; the second pass moves nothing and stops.
    assert len(result.trials) == len(evaluate.calls) == 1 + 5 + 5


def test_a_gain_below_min_gain_does_not_move_a_knob() -> None:
    intent = intent_with({"storage": 5000.0}, storage=(30, 90))
    axes = [Knob("weight/storage", (60.0, 90.0))]
    # weight 90 is better by 1/(1 + 1 + 0.69) x ... : storage 2693 -> 1693 (37 %).
    assert coordinate_search(intent, bowl(1.0, 90), knob_list=axes, min_gain=0.5).changes == ()
    moved = coordinate_search(intent, bowl(1.0, 90), knob_list=axes, min_gain=0.1).changes
    assert [(c.parameter, c.proposed) for c in moved] == [("weight/storage", 90)]


def by_seed(table: Mapping[float, tuple[float, ...]]) -> Any:
    """A twin stand-in whose per-seed results are given: storage's small-flow p99 on each
    seed for each storage weight (rpc never moves)."""

    def evaluate(candidate: Intent) -> list[dict[str, float]]:
        p99s = table[float(weight(candidate, "storage") or 0)]
        return [{"storage": p99, "rpc": 500.0} for p99 in p99s]

    return evaluate


WEIGHTS = [Knob("weight/storage", (60.0, 30.0, 90.0))]


def test_a_candidate_that_wins_on_one_seed_only_is_not_proposed() -> None:
    # Weight 30 cuts storage's p99 from 2000 to 500 us on seed 1 and lengthens it 5 % on
    # seeds 2 and 3: 22 % better on the mean (past min_gain), worse on two seeds of three.
    intent = intent_with({"storage": 5000.0}, storage=(30, 90))
    table = {60.0: (2000.0, 2000.0, 2000.0), 30.0: (500.0, 2100.0, 2100.0), 90.0: (2000.0,) * 3}
    result = coordinate_search(intent, by_seed(table), knob_list=WEIGHTS)
    assert result.changes == ()
    assert dict(result.best.setting) == {"weight/storage": 60.0}
    assert result.within_noise is not None
    assert result.within_noise.startswith("no proposal: within noise")
    # Score ratio p99 / 5000 us (storage alone has an objective): 0.4 -> 0.1, 0.42, 0.42,
    # -75 %, +5 %, +5 % seed by seed; on the mean 0.4 -> 0.313, -21.7 %.
    assert "-21.7 % on the mean, -75.0, +5.0, +5.0 % seed by seed" in result.within_noise
    # Seed 1 alone (what the search scored before it ran seeds) proposes it.
    first = {w: p99s[:1] for w, p99s in table.items()}
    alone = coordinate_search(intent, by_seed(first), knob_list=WEIGHTS)
    assert [(c.parameter, c.proposed) for c in alone.changes] == [("weight/storage", 30)]
    assert alone.within_noise is None


def test_the_search_ranks_by_the_mean_and_moves_only_on_a_win_on_every_seed() -> None:
    # Weight 30 wins the first seed by far; weight 90 wins every seed by 20 %: the search takes
    # 90, and records its mean, spread and per-seed change.
    intent = intent_with({"storage": 5000.0}, storage=(30, 90))
    table = {
        60.0: (2000.0, 2000.0, 2000.0),
        30.0: (200.0, 2100.0, 2100.0),
        90.0: (1600.0, 1600.0, 1600.0),
    }
    result = coordinate_search(intent, by_seed(table), knob_list=WEIGHTS)
    assert [(c.parameter, c.current, c.proposed) for c in result.changes] == [
        ("weight/storage", 60, 90)
    ]
    assert result.within_noise is None
    # Mean ratios (p99 / 5000 us): weight 30's 0.293 is the best mean, but it loses seeds 2
    # and 3; weight 90's 0.32 wins all three.
    assert [t.score.ratio for t in result.trials] == pytest.approx([0.4, 0.88 / 3, 0.32])
    outputs = result.changes[0].evidence.outputs
    assert outputs["score_change_by_seed_pct"] == (-20.0, -20.0, -20.0)
    assert outputs["best_ratio_spread"] == (0.32, 0.32)
    assert result.changes[0].evidence.inputs["seeds"] == 3
    # Storage's predicted p99 is the mean over the seeds.
    assert outputs["predicted_p99_small_us"] == (
        ("rpc", 500.0, 500.0, 0.0),
        ("storage", 2000.0, 1600.0, -20.0),
    )


def test_fewer_missed_objectives_on_the_mean_alone_is_within_noise() -> None:
    # Storage's objective is 1000 us: weight 90 meets it on seed 2 only (missing it on
    # seeds 1 and 3 by more than before): fewer misses on the mean, more p99 on two seeds.
    intent = intent_with({"storage": 1000.0}, storage=(30, 90))
    table = {60.0: (1100.0, 1100.0, 1100.0), 30.0: (1100.0,) * 3, 90.0: (1200.0, 900.0, 1200.0)}
    result = coordinate_search(intent, by_seed(table), knob_list=WEIGHTS)
    assert result.changes == ()
    assert result.within_noise is not None
    assert "objectives missed 1, 1, 1 -> 1, 0, 1" in result.within_noise


def test_no_objective_or_no_knob_is_refused() -> None:
    with pytest.raises(SearchInputInvalid, match="objective"):
        coordinate_search(intent_with({}), bowl(1.0, 60))
    with pytest.raises(SearchInputInvalid, match="no knob"):
        coordinate_search(intent_with({"rpc": 1.0}), bowl(1.0, 60), knob_list=[])


def test_traffic_from_summary_pools_the_sizes_and_shares_the_measured_loads() -> None:
    # Two classes' flows drawn as data mining's CDF says (at the exporter's edges, 100 each):
    # pooled, data mining is at KS distance 0.
    cdf = load_workload("datamining")
    edges = [1000.0 * 2**k for k in range(21)]
    sizes = (*((edge, 100.0 * cdf.cdf(edge)) for edge in edges), (math.inf, 100.0))
    summary = TelemetrySummary(
        0.0,
        600.0,
        flow_sizes={
            "rpc": FlowSizeSample("rpc", sizes, load=0.1),
            "storage": FlowSizeSample("storage", sizes, load=0.3),
            "bulk": FlowSizeSample("bulk", ((1_000.0, 0.0), (10_000.0, 0.0), (math.inf, 0.0))),
        },
    )
    traffic = traffic_from_summary(summary)
    assert traffic.workload == "datamining"
    assert math.isclose(traffic.load, 0.4)
    assert [name for name, _ in traffic.mix] == ["rpc", "storage"]  # bulk finished no flows
    assert [share for _, share in traffic.mix] == pytest.approx([0.25, 0.75])


def test_a_summary_without_flows_has_no_traffic() -> None:
    with pytest.raises(SearchInputInvalid, match="no finished flows"):
        traffic_from_summary(TelemetrySummary(0.0, 600.0))
