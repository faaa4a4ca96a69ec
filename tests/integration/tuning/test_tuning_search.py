"""The tuning pass with ``fabric.tuning.search: twin``: real PostgreSQL (migrated), the real
netsim binary (``target/debug/netsim``; ``cargo build -p netsim``) behind
``netsim_search``, and summaries built by hand (the reader is passed in).

The intent is the example's with one marking class, storage (the others' ECN off, so the
search has 6 candidates: the current intent, lambda x 0.25, 0.5, 2, weight 20 and 80), each
run on the settings' seeds (``twin.search_seeds``, 3), side by side (``twin.parallel``), 200
flows a run: a few seconds of CPU per pass."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.tuning_search import Counted, fabric_like_the_twin, flow_sizes
from controller.intent.loader import dump_intent, load_intent_file
from controller.intent.models import Intent
from controller.rollout.gates import GatePolicy
from controller.services.auto_rollout import AutoTuner
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.plans import PlanService
from controller.services.rollouts import RolloutService
from controller.services.tuning import (
    SEARCH_OWNS,
    TuningService,
    fan_out,
    netsim_search,
    search_seeds,
)
from controller.settings import TwinSettings
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import intents as intents_repo
from controller.store.snapshots import decode_fleet
from controller.tuning.apply import class_lambda
from controller.tuning.counterfactual import PARAMETER
from controller.tuning.search import traffic_from_summary
from controller.tuning.summary import QueueSummary, TelemetrySummary
from tests.integration.tuning.history import HandClock

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Storage's small-flow p99 objective, us: missed by every candidate (their p99s are a few
# retransmission timeouts, 10-12 ms), so the geometric ratio alone decides.
OBJECTIVE_US = 2000.0
# storage and analytics share 0.9 of each host link 60/40: at this load and these flows the
# twin's storage p99 is lower at lambda 0.5 than at 1.0 by more than the search's 5 %.
LOAD, SHARES = 0.9, {"storage": 0.6, "analytics": 0.4}


def intent_data() -> dict[str, Any]:
    data: dict[str, Any] = dump_intent(load_intent_file(EXAMPLE))
    data["fabric"]["tuning"] = {"mode": "propose", "search": "twin", "search_flows": 200}
    for service_class in data["service_classes"]:
        if service_class["name"] in ("rpc", "analytics", "best-effort"):
            service_class["ecn"] = "off"
        if service_class["name"] == "storage":
            service_class["objective"] = {"p99_fct_us_small": OBJECTIVE_US}
            service_class["scheduling"].update({"weight_min": 20, "weight_max": 80})
    return data


def unreproducible() -> TelemetrySummary:
    """Storage's queue on leaf1's first host port at 0.9 of the line with the port at 0.95,
    while the hosts report finished flows for analytics alone (0.3): nothing the twin is
    given sends storage traffic."""
    queue = QueueSummary(
        "leaf1",
        "Ethernet0",
        "storage",
        25.0,
        utilisation=0.95,
        occupancy_p50_bytes=20_000.0,
        occupancy_p95_bytes=150_000.0,
        mark_fraction=0.05,
        tx_bytes_per_s=0.9 * 25e9 / 8,
    )
    return TelemetrySummary(
        0.0, 600.0, queues=(queue,), flow_sizes=flow_sizes("websearch", {"analytics": 0.3})
    )


@dataclass
class Searching:
    """A tuning service over a fresh database with the real twin; ``summary`` is what its
    reader returns."""

    intents: IntentService
    tuning: TuningService
    twin: Counted
    summary: TelemetrySummary | None = None


@pytest.fixture
def searching(db_url: str) -> Iterator[Searching]:
    engine = make_engine(db_url, pool_size=2)
    sessions = make_sessions(engine)
    clock = HandClock(NOW)
    intents = IntentService(sessions, clock=clock)
    settings = TwinSettings()
    twin = Counted(netsim_search(settings.netsim, settings.timeout_s))

    def read(_at: datetime, _window_s: float) -> TelemetrySummary:
        assert made.summary is not None
        return made.summary

    tuning = TuningService(
        sessions,
        intents,
        read,
        clock=clock,
        simulate=twin,
        search_seeds=search_seeds(settings.search_seeds),
        run_many=fan_out(settings.parallel),
    )
    made = Searching(intents, tuning, twin)
    intents.replace(intent_data(), expected=0, actor=ACTOR, reason="search in the twin")
    try:
        yield made
    finally:
        engine.dispose()


def test_a_summary_the_twin_cannot_reproduce_gets_no_proposal(searching: Searching) -> None:
    searching.summary = unreproducible()
    record = searching.tuning.run(ACTOR)
    assert record.state == "no_change"
    # The current intent on each seed (the first for the fit check); no candidate.
    assert searching.twin.runs == TwinSettings().search_seeds
    assert "[search: the twin does not reproduce the fabric" in record.reason
    assert "leaf1 Ethernet0 storage class utilisation: measured 0.9, twin 0" in record.reason
    (held,) = [h for h in record.held if h["parameter"] == PARAMETER]
    assert held["held"].startswith("the twin does not reproduce the fabric")
    assert [tuple(pair) for pair in held["evidence"]["inputs"]["mix"]] == [("analytics", 1.0)]
    assert record.changes == []


def test_a_summary_the_twin_fits_gets_the_searchs_change_with_its_prediction(
    searching: Searching,
) -> None:
    intent = searching.intents.current().intent
    flows = flow_sizes("websearch", {name: LOAD * share for name, share in SHARES.items()})
    searching.summary = fabric_like_the_twin(intent, searching.twin, flows)
    searching.twin.runs = 0
    record = searching.tuning.run(ACTOR)
    assert record.state == "pending", record.reason
    # The current intent for the fit (also the search's start), then lambda x 0.25, 0.5, 2
    # and weight 20, 80 around the best so far, each on every seed.
    seeds = TwinSettings().search_seeds
    assert searching.twin.runs == 6 * seeds
    moved = {c["parameter"]: (c["current"], c["proposed"]) for c in record.changes}
    # On seed 1 alone the search moved lambda to 0.5 here; on the mean of seeds 1-3 (and on
    # each of them) 2.0 is the better.
    assert moved["ecn_lambda/storage"] == (1.0, 2.0), moved
    evidence = record.changes[0]["evidence"]
    assert evidence["rule"] == "search.twin"
    assert evidence["inputs"]["fit"].startswith("the twin reproduces the fabric's")
    predicted = {row[0]: row[1:] for row in evidence["outputs"]["predicted_p99_small_us"]}
    before, after, change_pct = predicted["storage"]
    assert after < before * 0.95  # the search moves only for more than 5 %
    assert change_pct == pytest.approx((after - before) / before * 100, abs=0.1)
    # The prediction is the mean over the seeds; its spread over them holds it, and the best
    # won on every seed (each seed's score change below zero).
    assert list(evidence["outputs"]["prediction_seeds"]) == list(range(1, seeds + 1))
    spread = {row[0]: row[1:] for row in evidence["outputs"]["predicted_spread_pct"]}
    low, high = spread["storage"]
    assert low <= change_pct <= high
    by_seed = evidence["outputs"]["score_change_by_seed_pct"]
    assert len(by_seed) == seeds
    assert all(change < 0 for change in by_seed)
    # The recorded prediction is the twin's for the proposed intent: run it again on each
    # seed; the prediction is their mean.
    proposed = load_proposed(searching, record.id)
    assert class_lambda(proposed, "storage") == 2.0
    traffic = traffic_from_summary(searching.summary)
    again = [
        searching.twin.simulate(proposed, replace(traffic, seed=seed)).p99_small_us["storage"]
        for seed in range(1, seeds + 1)
    ]
    assert round(sum(again) / seeds, 1) == after
    # Lambdas and weights are the search's: the rules' verdicts on them (here the ECN rule
    # raising storage's lambda on its host ports, the weight rule lending it weight) are
    # reported held, not proposed.
    assert {c["evidence"]["rule"] for c in record.changes} == {"search.twin"}
    aside = {h["parameter"] for h in record.held if h["held"] == SEARCH_OWNS}
    assert aside == {"ecn_lambda/storage/25gbps", "weight/storage"}


def load_proposed(searching: Searching, proposal: int) -> Intent:
    """The proposal's intent, as approval would write it."""
    approved = searching.tuning.approve(proposal, ACTOR)
    assert approved.new_version == 2
    return searching.intents.current().intent


def test_a_twin_that_cannot_run_is_a_recorded_no_change_not_an_error(
    searching: Searching, tmp_path: Path
) -> None:
    searching.twin.simulate = netsim_search(tmp_path / "netsim", 10.0)  # no binary there
    searching.summary = TelemetrySummary(
        0.0, 600.0, flow_sizes=flow_sizes("websearch", {"storage": 0.5})
    )
    record = searching.tuning.run(ACTOR)
    assert record.state == "no_change"
    assert record.reason == (
        "tuner: no change [search: the twin could not run the current intent: netsim "
        f"binary not found at {tmp_path / 'netsim'} (cargo build -p netsim)]"
    )


def test_in_auto_mode_the_workers_queued_search_approves_and_starts_the_rollout(
    searching: Searching, db_url: str
) -> None:
    auto = intent_data()
    auto["fabric"]["tuning"]["mode"] = "auto"
    searching.intents.replace(auto, expected=1, actor=ACTOR, reason="auto")
    engine = make_engine(db_url, pool_size=2)
    try:
        sessions = make_sessions(engine)
        # The switches run version 2 (as a verified rollout records): the tuner's rollout is
        # then no first rollout, which would take ports down.
        plans = PlanService(sessions, clock=lambda: NOW)
        with sessions() as session:
            desired = decode_fleet(intents_repo.desired_states(session=session, version=2))
        for name, config in desired.items():
            plans.record_running_state(switch=name, config=config, source="test: version 2")
        intent = searching.intents.current().intent
        flows = flow_sizes("websearch", {name: LOAD * share for name, share in SHARES.items()})
        searching.summary = fabric_like_the_twin(intent, searching.twin, flows)
        searching.twin.runs = 0
        rollouts = RolloutService(sessions, clock=lambda: NOW)
        tuner = AutoTuner(searching.tuning, rollouts, None, None, GatePolicy())
        # The worker's round, inside the switch work lock: the due pass is only queued.
        assert tuner.tick() == 1
        (queued,) = searching.tuning.list()
        assert (queued.state, searching.twin.runs) == ("queued", 0)
        # Outside the lock: the search, its proposal approved by the tuner, and its rollout.
        assert tuner.search_once() == 2
        done = searching.tuning.get(queued.id)
        assert done.state == "approved", done.reason
        assert (done.base_version, done.new_version, done.decided_by) == (2, 3, "tuner")
        assert searching.twin.runs == 6 * TwinSettings().search_seeds
        active = rollouts.active()
        assert active is not None
        assert (active.to_version, active.created_by) == (3, "tuner")
        assert tuner.search_once() == 0  # nothing left queued
    finally:
        engine.dispose()
