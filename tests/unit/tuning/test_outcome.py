"""A rolled-out proposal's predicted change beside the measured one (controller/tuning/
outcome.py), with worked numbers: the twin predicted storage 1000 -> 700 us (-30 %),
analytics 2000 -> 2100 us (+5 %, inside the 5 % band: no change), rpc 500 -> 450 us (-10 %)."""

from __future__ import annotations

from controller.tuning.evidence import Change, Evidence
from controller.tuning.outcome import (
    Predicted,
    baseline_of,
    compare,
    describe,
    direction,
    from_baseline,
    prediction_of,
    settled,
)
from controller.tuning.search import RULE
from controller.tuning.summary import SmallFlowFct

PREDICTION = (
    Predicted("analytics", 2000.0, 2100.0, 5.0),
    Predicted("rpc", 500.0, 450.0, -10.0),
    Predicted("storage", 1000.0, 700.0, -30.0),
)
BEFORE = {
    "storage": SmallFlowFct("storage", 1200.0, 400.0),
    "analytics": SmallFlowFct("analytics", 3000.0, 200.0),
    "rpc": SmallFlowFct("rpc", 800.0, 150.0),
}
WINDOW = (1000.0, 1600.0)


def fct(**p99_flows: tuple[float, float]) -> dict[str, SmallFlowFct]:
    return {name: SmallFlowFct(name, p99, flows) for name, (p99, flows) in p99_flows.items()}


def by_class(after: dict[str, SmallFlowFct]) -> dict[str, dict[str, object]]:
    outcome = compare(PREDICTION, BEFORE, after, rollout_id=7, window=WINDOW)
    return {c.service_class: c.as_dict() for c in outcome.classes}


def test_a_measured_change_the_way_the_twin_predicted_agrees_with_its_error() -> None:
    # storage 1200 -> 900 us: -25.0 %, predicted -30.0 %: error +5.0 pp. analytics 3000 ->
    # 3090: +3.0 %, predicted +5.0 %: both inside the band, error -2.0 pp. rpc: the hosts
    # reported none of its small flows after the rollout.
    after = fct(storage=(900.0, 380.0), analytics=(3090.0, 210.0))
    outcome = compare(PREDICTION, BEFORE, after, rollout_id=7, window=WINDOW)
    assert outcome.verdict == "agrees"
    assert (outcome.rollout_id, outcome.window_start_s, outcome.window_end_s) == (7, 1000.0, 1600.0)
    rows = {c.service_class: c for c in outcome.classes}
    storage = rows["storage"]
    assert (storage.measured_before_us, storage.measured_after_us) == (1200.0, 900.0)
    assert (storage.measured_pct, storage.agrees, storage.error_pp) == (-25.0, True, 5.0)
    assert (storage.flows_before, storage.flows_after) == (400.0, 380.0)
    analytics = rows["analytics"]
    assert (analytics.measured_pct, analytics.agrees, analytics.error_pp) == (3.0, True, -2.0)
    rpc = rows["rpc"]
    assert (rpc.measured_pct, rpc.agrees, rpc.error_pp) == (None, None, None)
    assert rpc.not_measurable is not None
    assert "no small flow of rpc finishing in the window after" in rpc.not_measurable
    assert outcome.reason == "analytics, storage moved the way the twin predicted"


def test_a_measured_change_against_the_prediction_disagrees() -> None:
    # storage 1200 -> 1500 us: +25.0 % where the twin said -30.0 %: error +55.0 pp.
    after = fct(storage=(1500.0, 390.0), analytics=(3090.0, 210.0), rpc=(720.0, 160.0))
    outcome = compare(PREDICTION, BEFORE, after, rollout_id=7, window=WINDOW)
    assert outcome.verdict == "disagrees"
    assert outcome.reason == "storage did not move the way the twin predicted"
    rows = {c.service_class: c for c in outcome.classes}
    assert (rows["storage"].measured_pct, rows["storage"].agrees) == (25.0, False)
    assert rows["storage"].error_pp == 55.0
    # rpc 800 -> 720 us: -10.0 %, exactly as predicted.
    rpc = rows["rpc"]
    assert (rpc.measured_pct, rpc.agrees, rpc.error_pp) == (-10.0, True, 0.0)
    line = describe(outcome)
    assert "storage predicted -30.0 %, measured +25.0 % (disagrees, error +55.0 pp)" in line


def test_a_change_inside_the_band_where_the_twin_predicted_a_move_disagrees() -> None:
    # storage 1200 -> 1180 us: -1.7 %, no change, where the twin predicted -30 %.
    after = fct(storage=(1180.0, 400.0))
    assert by_class(after)["storage"]["agrees"] is False
    assert by_class(after)["storage"]["measured_pct"] == -1.7


def test_too_few_small_flows_for_a_p99_is_not_measurable() -> None:
    after = fct(storage=(900.0, 40.0))
    storage = by_class(after)["storage"]
    assert storage["measured_pct"] is None
    assert storage["measured_after_us"] == 900.0  # shown, not judged
    assert storage["not_measurable"] == (
        "40 small flows of storage finished in one window: a p99 needs at least 100"
    )
    outcome = compare(PREDICTION, BEFORE, after, rollout_id=7, window=WINDOW)
    assert (outcome.verdict, outcome.reason) == (
        "not_measurable",
        "no predicted class could be measured",
    )


def test_no_baseline_from_the_hosts_is_not_measurable() -> None:
    outcome = compare(PREDICTION, {}, BEFORE, rollout_id=7, window=WINDOW)
    assert outcome.verdict == "not_measurable"
    reasons = {c.not_measurable for c in outcome.classes}
    assert all(r is not None and "in the proposal's window" in r for r in reasons)


def test_direction_has_a_band_of_no_change() -> None:
    assert [direction(p) for p in (-30.0, -5.0, 0.0, 5.0, 5.1)] == [-1, 0, 0, 0, 1]


def test_the_prediction_is_read_from_the_searchs_stored_evidence() -> None:
    evidence = Evidence(
        RULE,
        "search",
        {},
        {
            "predicted_p99_small_us": (
                ("rpc", 500.0, 450.0, -10.0),
                ("storage", 1000.0, 700.0, -30.0),
            )
        },
    )
    other = Evidence("qjump.n", "rule", {}, {})
    stored = [
        Change("qjump/hosts", 8, 6, other).as_dict(),
        Change("ecn_lambda/storage", 1.0, 0.5, evidence).as_dict(),
    ]
    assert prediction_of(stored) == PREDICTION[1:]
    assert prediction_of([stored[0]]) == ()


def test_the_baseline_is_stored_and_read_back() -> None:
    stored = baseline_of(BEFORE)
    assert stored["storage"] == {"p99_us": 1200.0, "flows": 400.0}
    assert from_baseline(stored) == BEFORE


def test_a_window_is_settled_when_it_starts_after_the_rollout_completed() -> None:
    assert settled(finished_s=1000.0, window_start_s=1000.0)
    assert not settled(finished_s=1000.0, window_start_s=999.0)


def test_the_seeds_spread_is_read_and_the_measured_change_placed_in_it() -> None:
    # The twin gave storage -30 % on the search's seed, -34.0 and -22.5 % on two more.
    outputs = {
        "predicted_p99_small_us": (("storage", 1000.0, 700.0, -30.0),),
        "predicted_spread_pct": (("storage", -34.0, -22.5),),
    }
    stored = [Change("ecn_lambda/storage", 1.0, 0.5, Evidence(RULE, "search", {}, outputs))]
    (predicted,) = prediction_of([c.as_dict() for c in stored])
    assert (predicted.min_pct, predicted.max_pct) == (-34.0, -22.5)
    within = compare(
        (predicted,), BEFORE, fct(storage=(900.0, 380.0)), rollout_id=7, window=WINDOW
    )  # -25.0 %
    beyond = compare(
        (predicted,), BEFORE, fct(storage=(780.0, 380.0)), rollout_id=7, window=WINDOW
    )  # -35.0 %: the predicted way, past the seeds' least
    assert (within.classes[0].agrees, within.classes[0].within_spread) == (True, True)
    assert (beyond.classes[0].agrees, beyond.classes[0].within_spread) == (True, False)
    assert "[-34.0, -22.5] over seeds" in describe(beyond)
    assert "outside the seeds' spread" in describe(beyond)
    # Without a spread recorded there is nothing to place it in.
    assert by_class(fct(storage=(900.0, 380.0)))["storage"]["within_spread"] is None
