"""The counterfactual search as a tuning pass runs it, over a model twin (a closed-form
``simulate`` that counts its calls): no proposal on a misfit, the search's moves with their
predicted per-class change once the twin fits, the minimum interval keeping a knob out of the
search. ``tests/integration/tuning/test_tuning_search.py`` runs the pass on the real twin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from controller.intent.models import Intent
from controller.qos.pias import load_workload
from controller.tuning.apply import class_lambda
from controller.tuning.counterfactual import (
    PARAMETER,
    Timing,
    TwinReading,
    TwinUnavailable,
    search_in_twin,
)
from controller.tuning.fit import TwinQueue
from controller.tuning.search import Traffic, knobs
from controller.tuning.summary import FlowSizeSample, QueueSummary, TelemetrySummary
from tests.unit.tuning.test_search import intent_with, weight

KINDS = {("leaf1", "Ethernet0"): "leaf_down"}
NOW = Timing(now_s=10_000.0, last_changed={}, min_interval_s=900.0)
# The twin's storage queue: port at 0.5 of the line, storage 0.3 of it, 2 % marked, p95 30 kB.
FIGURES = TwinQueue("storage", "leaf_down", 0.5, 0.3, 0.02, 1_000.0, 30_000.0)


def websearch_sizes() -> tuple[tuple[float, float], ...]:
    cdf = load_workload("websearch")
    edges = [1000.0 * 2**k for k in range(21)]
    return (*((edge, 100.0 * cdf.cdf(edge)) for edge in edges), (math.inf, 100.0))


def summary(utilisation: float, share: float) -> TelemetrySummary:
    """The fabric's storage queue on leaf1 Ethernet0 and the hosts' flows: storage's load
    0.3, bulk's 0.2 (storage alone is measured on the switch here)."""
    queue = QueueSummary(
        "leaf1",
        "Ethernet0",
        "storage",
        25.0,
        utilisation=utilisation,
        occupancy_p50_bytes=1_500.0,
        occupancy_p95_bytes=35_000.0,
        mark_fraction=0.025,
        tx_bytes_per_s=share * 25e9 / 8,
    )
    flows = {
        "storage": FlowSizeSample("storage", websearch_sizes(), load=0.3),
        "bulk": FlowSizeSample("bulk", websearch_sizes(), load=0.2),
    }
    return TelemetrySummary(0.0, 600.0, queues=(queue,), flow_sizes=flows)


class ModelTwin:
    """Storage's small-flow p99 is least at lambda 0.5 and weight 90, and 100 us longer for
    each seed past the first; bulk's never moves."""

    def __init__(self) -> None:
        self.calls: list[tuple[Intent, Traffic]] = []

    def __call__(self, intent: Intent, traffic: Traffic) -> TwinReading:
        self.calls.append((intent, traffic))
        lam = class_lambda(intent, "storage")
        w = weight(intent, "storage") or 0
        storage = 1000.0 * (1 + abs(math.log(lam / 0.5)) + abs(w - 90) / 30)
        storage += 100.0 * (traffic.seed - 1)
        return TwinReading((FIGURES,), {"storage": storage, "bulk": 700.0})


def test_a_twin_that_does_not_reproduce_the_fabric_proposes_nothing() -> None:
    # The fabric's port runs at 0.9 with storage 0.7 of the line: the hosts' flows (0.5 in
    # all) cannot explain it, and the twin, given them, carries 0.5 and 0.3.
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    twin = ModelTwin()
    found = search_in_twin(intent, summary(0.9, 0.7), twin, kinds=KINDS, timing=NOW)
    assert found.changes == ()
    assert len(twin.calls) == 1  # the current intent, for the fit; no candidate ran
    assert found.fit is not None
    assert not found.fit.fits
    assert found.refused is not None
    assert found.refused.startswith("the twin does not reproduce the fabric")
    assert "storage class utilisation: measured 0.7, twin 0.3" in found.refused
    record = found.record
    assert record is not None
    assert record.parameter == PARAMETER
    assert record.held == found.refused
    assert record.evidence.inputs["workload"] == "websearch"
    assert record.evidence.inputs["load"] == 0.5
    misfits = record.evidence.outputs["misfits"]
    assert isinstance(misfits, tuple)
    assert len(misfits) == 2


def test_a_fitted_twin_proposes_the_searchs_moves_with_their_predicted_change() -> None:
    # Within tolerance: 0.55 / 0.5 port, 0.33 / 0.3 storage, marks 2.5 / 2 %, p95 35 / 30 kB.
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    twin = ModelTwin()
    found = search_in_twin(intent, summary(0.55, 0.33), twin, kinds=KINDS, timing=NOW)
    assert found.refused is None
    assert found.record is None
    moved = {c.parameter: (c.current, c.proposed) for c in found.changes}
    assert moved == {"ecn_lambda/storage": (1.0, 0.5), "weight/storage": (60, 90)}
    evidence = found.changes[0].evidence
    # Start: 1000 x (1 + ln 2 + 1) = 2693.1 us; best: 1000 us, -62.9 %. bulk unchanged.
    assert evidence.outputs["predicted_p99_small_us"] == (
        ("bulk", 700.0, 700.0, 0.0),
        ("storage", 2693.1, 1000.0, -62.9),
    )
    assert str(evidence.inputs["fit"]).startswith("the twin reproduces the fabric's 1 queues")
    assert evidence.inputs["mix"] == (("bulk", 0.4), ("storage", 0.6))
    # Every run of the search had the same traffic; the fit's run was the search's start
    # (not run twice).
    every = 1 + sum(len(k.values) - 1 for k in knobs(intent))
    assert len({traffic for _, traffic in twin.calls}) == 1
    assert len(twin.calls) == every
    assert evidence.outputs["predicted_spread_pct"] == (
        ("bulk", 0.0, 0.0),
        ("storage", -62.9, -62.9),
    )
    assert evidence.outputs["prediction_seeds"] == (1,)


def test_on_three_seeds_every_candidate_runs_on_each_and_the_prediction_is_their_mean() -> None:
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    twin = ModelTwin()
    ran: list[list[int]] = []

    def side_by_side(run: Any, drawn: Sequence[Traffic]) -> list[TwinReading]:
        ran.append([traffic.seed for traffic in drawn])
        return [run(traffic) for traffic in drawn]

    found = search_in_twin(
        intent,
        summary(0.55, 0.33),
        twin,
        kinds=KINDS,
        timing=NOW,
        seeds=(1, 2, 3),
        run_many=side_by_side,
    )
    every = 1 + sum(len(k.values) - 1 for k in knobs(intent))
    assert ran == [[1, 2, 3]] * every  # each candidate's seeds handed over together
    assert len(twin.calls) == 3 * every
    moved = {c.parameter: (c.current, c.proposed) for c in found.changes}
    assert moved == {"ecn_lambda/storage": (1.0, 0.5), "weight/storage": (60, 90)}
    outputs = found.changes[0].evidence.outputs
    # Mean over seeds 1-3 (+0, +100, +200 us): 2793.1 -> 1100 us, -60.6 %.
    assert outputs["predicted_p99_small_us"] == (
        ("bulk", 700.0, 700.0, 0.0),
        ("storage", 2793.1, 1100.0, -60.6),
    )
    # Seed 1: 2693.1 -> 1000 us, -62.9 %; seed 2: -60.6 %; seed 3: 2893.1 -> 1200 us, -58.5 %.
    assert outputs["predicted_spread_pct"] == (("bulk", 0.0, 0.0), ("storage", -62.9, -58.5))
    assert outputs["prediction_seeds"] == (1, 2, 3)


class LuckyTwin:
    """A twin stand-in whose per-seed results are given: storage's small-flow p99 per
    storage weight and seed (lambda does not matter); bulk's never moves."""

    def __init__(self) -> None:
        self.p99 = {60: (2000.0,) * 3, 30: (2000.0,) * 3, 90: (600.0, 2100.0, 2100.0)}

    def __call__(self, intent: Intent, traffic: Traffic) -> TwinReading:
        p99 = self.p99[weight(intent, "storage") or 0][traffic.seed - 1]
        return TwinReading((FIGURES,), {"storage": p99, "bulk": 700.0})


def test_a_candidate_that_wins_on_seed_1_only_is_no_proposal_within_noise() -> None:
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    found = search_in_twin(
        intent, summary(0.55, 0.33), LuckyTwin(), kinds=KINDS, timing=NOW, seeds=(1, 2, 3)
    )
    assert found.changes == ()
    assert found.refused is not None
    # Weight 90: storage 2000 -> 600 us on seed 1 (-70 %), 2100 on seeds 2 and 3 (+5 %).
    assert found.refused.startswith("no proposal: within noise")
    assert "-70.0, +5.0, +5.0 % seed by seed" in found.refused
    assert found.record is not None
    assert found.record.held == found.refused
    inputs = found.record.evidence.inputs
    # Score ratio p99 / 1500 us: 1.333 on every seed; weight 90's 0.4, 1.4, 1.4.
    assert (inputs["score"], inputs["score_spread"]) == (1.3333, (1.3333, 1.3333))
    assert (inputs["best_score"], inputs["best_score_spread"]) == (1.0667, (0.4, 1.4))
    setting = inputs["best_setting"]
    assert isinstance(setting, tuple)
    assert ("weight/storage", 90.0) in setting
    # On seed 1 alone the same twin proposes it.
    alone = search_in_twin(intent, summary(0.55, 0.33), LuckyTwin(), kinds=KINDS, timing=NOW)
    assert [(c.parameter, c.proposed) for c in alone.changes] == [("weight/storage", 90)]


def test_a_knob_changed_inside_the_minimum_interval_is_not_searched() -> None:
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    recent = Timing(10_000.0, {"ecn_lambda/storage/25gbps": 9_500.0}, 900.0)
    twin = ModelTwin()
    found = search_in_twin(intent, summary(0.55, 0.33), twin, kinds=KINDS, timing=recent)
    assert [c.parameter for c in found.changes] == ["weight/storage"]
    assert found.changes[0].evidence.inputs["not_searched"] == ("ecn_lambda/storage",)
    for candidate, _ in twin.calls:
        assert class_lambda(candidate, "storage") == 1.0


def test_without_an_objective_or_traffic_the_twin_does_not_run() -> None:
    twin = ModelTwin()
    bare = intent_with({}, storage=(30, 90))
    found = search_in_twin(bare, summary(0.55, 0.33), twin, kinds=KINDS, timing=NOW)
    assert found.refused is not None
    assert "objective" in found.refused
    scored = intent_with({"storage": 1500.0}, storage=(30, 90))
    empty = TelemetrySummary(0.0, 600.0)
    found = search_in_twin(scored, empty, twin, kinds=KINDS, timing=NOW)
    assert found.refused is not None
    assert "no finished flows" in found.refused
    assert twin.calls == []


def test_no_candidate_starts_once_the_budget_is_spent() -> None:
    # The clock reads 0, 100, 200, 300 s before each candidate: with a 250 s budget the
    # fit's run and three candidates run, the fourth does not start, nothing is proposed.
    spent = [0.0]

    def elapsed() -> float:
        spent[0] += 100.0
        return spent[0] - 100.0

    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    timing = Timing(10_000.0, {}, 900.0, budget_s=250.0, elapsed=elapsed)
    twin = ModelTwin()
    found = search_in_twin(intent, summary(0.55, 0.33), twin, kinds=KINDS, timing=timing)
    assert found.changes == ()
    assert len(twin.calls) == 1 + 3
    every = sum(len(k.values) - 1 for k in knobs(intent))
    assert found.refused == f"the search spent its 250 s budget after 3 of {every} candidates"


def test_a_twin_that_cannot_run_is_recorded_and_proposes_nothing() -> None:
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))

    def broken(candidate: Intent, traffic: Traffic) -> TwinReading:
        raise TwinUnavailable("netsim exited 101: boom")

    found = search_in_twin(intent, summary(0.55, 0.33), broken, kinds=KINDS, timing=NOW)
    assert found.changes == ()
    assert found.refused == "the twin could not run the current intent: netsim exited 101: boom"
    assert found.record is not None
    assert found.record.held == found.refused

    twin = ModelTwin()

    def fails_on_a_candidate(candidate: Intent, traffic: Traffic) -> TwinReading:
        if twin.calls:
            raise TwinUnavailable("netsim ran past 600 s")
        return twin(candidate, traffic)

    found = search_in_twin(
        intent, summary(0.55, 0.33), fails_on_a_candidate, kinds=KINDS, timing=NOW
    )
    assert found.changes == ()
    assert found.refused == "a candidate failed in the twin: netsim ran past 600 s"


def test_the_budget_stops_a_search_on_three_seeds_between_candidates() -> None:
    # The clock reads 0 s before the first two candidates, then past the 100 s budget: each
    # of those ran on all three seeds, the third did not start.
    intent = intent_with({"storage": 1500.0}, storage=(30, 90))
    candidates = sum(len(k.values) - 1 for k in knobs(intent))
    reads = [0]

    def elapsed() -> float:
        reads[0] += 1
        return 0.0 if reads[0] <= 2 else 1000.0

    timing = Timing(10_000.0, {}, 900.0, budget_s=100.0, elapsed=elapsed)
    twin = ModelTwin()
    found = search_in_twin(
        intent, summary(0.55, 0.33), twin, kinds=KINDS, timing=timing, seeds=(1, 2, 3)
    )
    assert len(twin.calls) == 3 * (1 + 2)
    assert found.changes == ()
    assert found.refused == f"the search spent its 100 s budget after 2 of {candidates} candidates"
