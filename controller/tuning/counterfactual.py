"""The counterfactual search as a tuning pass runs it (``fabric.tuning.search: twin``): the
twin on the current intent and the traffic the summary describes, the fit check, then the
coordinate search over the twin. Pure: the twin run (a netsim subprocess at the edge,
``controller.services.tuning.netsim_twin``) is passed in as ``Simulate``.

Every candidate of one pass runs on the same traffic and the same seeds (``seeds``, the
settings' ``twin.search_seeds``), so candidates differ only by their configuration (common
random numbers); a candidate's seeds run side by side (``run_many``: the service's thread
fan-out, at most ``twin.parallel`` netsim processes at once). The current intent's runs serve
both the fit check (its first seed) and the search's starting point, so a pass costs (1 + the
knobs' other values) x seeds runs. The search ranks candidates by their mean over the seeds
and proposes the best only when it beats the current intent on every seed; the prediction
carries its spread over them, min and max per class.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from controller.intent.loader import dump_intent
from controller.intent.models import Intent
from controller.tuning.apply import lambda_class
from controller.tuning.evidence import Change, Evidence, Value
from controller.tuning.fit import FitVerdict, PortKinds, Tolerance, TwinQueue, check_fit
from controller.tuning.search import (
    RULE,
    Knob,
    Measured,
    SearchInputInvalid,
    SearchResult,
    Traffic,
    coordinate_search,
    knobs,
    objectives,
    predicted_spread,
    seed_pairs,
    traffic_from_summary,
)
from controller.tuning.stability import ChangeTimes
from controller.tuning.summary import TelemetrySummary

log = logging.getLogger(__name__)

PARAMETER = "search/twin"  # the held verdict a pass records when the search proposes nothing


@dataclass(frozen=True, slots=True)
class TwinReading:
    """What the pass reads from one twin run: each class's queue figures per port kind (for
    the fit check) and its small-flow p99 FCT, us (for the search's score)."""

    queues: tuple[TwinQueue, ...]
    p99_small_us: Mapping[str, float]


Simulate = Callable[[Intent, Traffic], TwinReading]
# Runs one intent on each traffic given (one per seed), answers in their order: the edge
# decides how many run at once.
RunMany = Callable[[Callable[[Traffic], TwinReading], Sequence[Traffic]], list[TwinReading]]


def one_at_a_time(
    run: Callable[[Traffic], TwinReading], drawn: Sequence[Traffic]
) -> list[TwinReading]:
    return [run(traffic) for traffic in drawn]


class TwinUnavailable(Exception):
    """The twin could not run an intent (its binary missing or failing, the intent beyond
    what it models): the edge raises it, the pass records it and proposes nothing."""


@dataclass(frozen=True, slots=True)
class SearchPass:
    """The search's changes (each with the fit and the predicted per-class change in its
    evidence), or none and ``refused`` saying why, with ``record`` (a held Change on
    ``search/twin``) carrying the same for ``sluice tune explain``."""

    changes: tuple[Change, ...]
    refused: str | None
    record: Change | None
    fit: FitVerdict | None


@dataclass(frozen=True, slots=True)
class Timing:
    """When the pass runs and when each parameter last changed: a knob changed less than
    ``min_interval_s`` ago is not searched (the minimum interval, docs/tuning.md). No
    candidate starts once ``elapsed()`` (seconds since the pass began) has reached
    ``budget_s``: the pass must end inside its tuning window, when the next one is due."""

    now_s: float
    last_changed: ChangeTimes
    min_interval_s: float
    budget_s: float = math.inf
    elapsed: Callable[[], float] = lambda: 0.0


class OutOfTime(Exception):
    """The search's budget was spent before its last candidate."""


def search_in_twin(
    intent: Intent,
    summary: TelemetrySummary,
    simulate: Simulate,
    *,
    kinds: PortKinds,
    timing: Timing,
    tolerance: Tolerance | None = None,
    seeds: Sequence[int] = (1,),
    run_many: RunMany = one_at_a_time,
) -> SearchPass:
    """One pass of the counterfactual search on ``intent`` (the one the fabric ran over the
    summary's window), each candidate run on every one of ``seeds``."""
    if not seeds:
        raise ValueError("the search needs at least one seed")
    if not objectives(intent):
        return refused("no class declares objective.p99_fct_us_small: nothing to score", {})
    try:
        traffic = traffic_from_summary(summary)
    except SearchInputInvalid as error:
        return refused(f"no traffic for the twin: {error}", {})
    facts: dict[str, Value] = {
        "workload": traffic.workload,
        "load": round(traffic.load, 4),
        "mix": tuple((name, round(share, 4)) for name, share in traffic.mix),
    }
    drawn = [replace(traffic, seed=seed) for seed in seeds]

    def on_every_seed(run: Intent) -> list[TwinReading]:
        return run_many(lambda one: simulate(run, one), drawn)

    log.info("tuning search: the twin runs the current intent on %s, seeds %s", facts, seeds)
    try:
        currents = on_every_seed(intent)
    except TwinUnavailable as error:
        log.warning("tuning search: the twin could not run the current intent: %s", error)
        return refused(f"the twin could not run the current intent: {error}", facts)
    fit = check_fit(
        summary, currents[0].queues, kinds, mtu_bytes=intent.fabric.mtu_bytes, tolerance=tolerance
    )
    facts["fit"] = fit.reason()
    if not fit.fits:
        log.warning("tuning search: no proposal: %s", fit.reason())
        return refused(fit.reason(), facts, fit)
    axes, frozen = _movable(intent, timing)
    facts["not_searched"] = frozen
    if not axes:
        return refused("no knob may move (ranges, bounds, minimum interval)", facts, fit)
    runs = [0]
    total = 1 + sum(len(k.values) - 1 for k in axes)
    key = _key(intent)

    def evaluate(candidate: Intent) -> list[Measured]:
        if _key(candidate) == key:
            # The fit check's runs: same intent, traffic and seeds.
            return [reading.p99_small_us for reading in currents]
        if timing.elapsed() >= timing.budget_s:
            raise OutOfTime
        runs[0] += 1
        log.info(
            "tuning search: candidate %d of at most %d in the twin, on %d seeds",
            runs[0],
            total - 1,
            len(drawn),
        )
        return [reading.p99_small_us for reading in on_every_seed(candidate)]

    try:
        result = coordinate_search(intent, evaluate, knob_list=axes)
    except TwinUnavailable as error:
        log.warning("tuning search: a candidate failed in the twin: %s", error)
        return refused(f"a candidate failed in the twin: {error}", facts, fit)
    except OutOfTime:
        # A search cut short has not compared the knobs it did not reach: nothing proposed.
        return refused(
            f"the search spent its {timing.budget_s:g} s budget after {runs[0]} of "
            f"{total - 1} candidates",
            facts,
            fit,
        )
    if result.within_noise is not None:
        log.info("tuning search: %s", result.within_noise)
        return refused(result.within_noise, {**facts, **_scores(result)}, fit)
    if not result.changes:
        return refused(
            f"no candidate beat the current intent in the twin ({len(result.trials)} tried)",
            {**facts, **_scores(result)},
            fit,
        )
    spread: dict[str, Value] = {
        "predicted_spread_pct": predicted_spread(seed_pairs(result.start, result.best)),
        "prediction_seeds": tuple(seeds),
    }
    changes = tuple(
        Change(
            c.parameter,
            c.current,
            c.proposed,
            Evidence(
                c.evidence.rule,
                c.evidence.source,
                {**facts, **c.evidence.inputs},
                {**c.evidence.outputs, **spread},
            ),
        )
        for c in result.changes
    )
    log.info(
        "tuning search: proposes %s",
        ", ".join(f"{c.parameter} {c.current} -> {c.proposed}" for c in changes),
    )
    return SearchPass(changes, None, None, fit)


def _scores(result: SearchResult) -> dict[str, Value]:
    """For a refusal: the start's mean score and its spread over seeds, and the same for the
    candidate with the best mean (proposed or not)."""
    top = min(result.trials, key=lambda t: t.score)
    return {
        "score": round(result.start.score.ratio, 4),
        "misses": result.start.score.misses,
        "score_spread": tuple(round(r, 4) for r in result.start.ratio_spread()),
        "best_setting": top.setting,
        "best_score": round(top.score.ratio, 4),
        "best_misses": top.score.misses,
        "best_score_spread": tuple(round(r, 4) for r in top.ratio_spread()),
    }


def _movable(intent: Intent, timing: Timing) -> tuple[tuple[Knob, ...], tuple[str, ...]]:
    """The knobs the search may move now, and those the minimum interval holds."""
    recent = {
        _family(key)
        for key, at in timing.last_changed.items()
        if timing.now_s - at < timing.min_interval_s
    }
    axes = knobs(intent)
    return (
        tuple(k for k in axes if k.parameter not in recent),
        tuple(k.parameter for k in axes if k.parameter in recent),
    )


def _family(parameter: str) -> str:
    """A rule's ``ecn_lambda/<class>/<speed>gbps`` is the search's ``ecn_lambda/<class>``."""
    name = lambda_class(parameter)
    return parameter if name is None else f"ecn_lambda/{name}"


def _key(intent: Intent) -> str:
    return json.dumps(dump_intent(intent), sort_keys=True)


def refused(reason: str, facts: Mapping[str, Value], fit: FitVerdict | None = None) -> SearchPass:
    outputs: dict[str, Value] = {}
    if fit is not None:
        outputs = {"compared": fit.compared, "misfits": tuple(m.describe() for m in fit.misfits)}
    record = Change(
        PARAMETER,
        None,
        None,
        Evidence(
            RULE,
            "the twin on the current intent, its fit to the telemetry, then coordinate "
            "descent over per-class lambda and DWRR weights",
            dict(facts),
            outputs,
        ),
        held=reason,
    )
    return SearchPass((), reason, record, fit)


def searched(parameter: str) -> bool:
    """Whether the search owns ``parameter`` (a lambda or a weight; the rules' keys too)."""
    return parameter.partition("/")[0] in ("ecn_lambda", "weight")
