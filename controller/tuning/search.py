"""Counterfactual tuning: search the knobs an operator sets, each candidate scored by a
simulation of the traffic the telemetry describes (issue 24, "Counterfactual tuning"). Pure:
the simulation is passed in (``evaluate``), so this module runs nothing itself.

The idea is Polyphony's (arXiv 2601.03593: capture the workload, predict each candidate
configuration in a simulator, apply the best) on the knobs a stock SONiC ASIC has: each
marking class's own ECN lambda (K = C x RTT x lambda, MQ-ECN NSDI'16 §2 Eq. 1) inside
``[fabric.tuning.ecn_lambda_min, ecn_lambda_max]``, and each DWRR class's weight inside its
``weight_min .. weight_max``. The objective is the intent's: each class's
``objective.p99_fct_us_small`` (the p99 completion time of its flows up to 100 kB).

The search is coordinate descent (one knob at a time, the others held at the best so far):
a full grid of 4 lambdas and 3 weights has 4^4 x 3^3 = 6 912 points, one pass over the axes
has 1 + sum of each knob's other values (about 20). A move replaces the incumbent only when it
scores better by more than ``min_gain`` (relative), so seed noise in a p99 does not move a
knob on its own.

The result is a list of ``Change`` (``ecn_lambda/<class>``, ``weight/<class>``; rule
``search.twin``) that ``controller.tuning.apply.apply_changes`` turns into the next intent,
with every evaluation in the evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from controller.intent.models import EcnMode, Intent, SchedulingType
from controller.tuning.apply import apply_changes, class_lambda
from controller.tuning.evidence import Change, Evidence
from controller.tuning.pias import nearest_workload
from controller.tuning.summary import FlowSizeSample, TelemetrySummary

Setting = Mapping[str, float]
# A candidate's per-class small-flow p99 FCT, us (a class with no small flows is absent).
Evaluate = Callable[[Intent], Mapping[str, float]]

RULE = "search.twin"
LAMBDA_FACTORS = (0.25, 0.5, 2.0)  # tried around the current lambda, inside the bounds
WEIGHT_POINTS = 3  # weight_min, the middle of the range, weight_max (and the current one)


class SearchInputInvalid(ValueError):
    """Nothing to search (no knob with room to move) or no objective to score against."""


@dataclass(frozen=True, slots=True)
class Knob:
    """One parameter and the values tried for it (the current one first)."""

    parameter: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True, order=True)
class Score:
    """Lower is better: first the classes that miss their objective, then the geometric mean
    over the classes with an objective of p99 / objective."""

    misses: int
    ratio: float


@dataclass(frozen=True, slots=True)
class Trial:
    setting: tuple[tuple[str, float], ...]
    p99_small_us: tuple[tuple[str, float], ...]
    score: Score


@dataclass(frozen=True, slots=True)
class SearchResult:
    start: Trial
    best: Trial
    trials: tuple[Trial, ...]
    changes: tuple[Change, ...]


def objectives(intent: Intent) -> dict[str, float]:
    """Each class's declared small-flow p99 objective, us."""
    return {
        c.name: c.objective.p99_fct_us_small
        for c in intent.service_classes
        if c.objective is not None and c.objective.p99_fct_us_small is not None
    }


def score(p99_small_us: Mapping[str, float], wanted: Mapping[str, float]) -> Score:
    """A candidate's score against the objectives; a class with an objective but no small
    flows measured (idle) has no say."""
    ratios = [p99_small_us[name] / bound for name, bound in wanted.items() if name in p99_small_us]
    if not ratios:
        return Score(0, 1.0)
    misses = sum(ratio > 1.0 for ratio in ratios)
    return Score(misses, math.exp(sum(math.log(r) for r in ratios) / len(ratios)))


def current(intent: Intent, parameter: str) -> float:
    """What the intent runs now for ``ecn_lambda/<class>`` or ``weight/<class>``."""
    kind, _, name = parameter.partition("/")
    if kind == "ecn_lambda":
        return class_lambda(intent, name)
    for service_class in intent.service_classes:
        if kind == "weight" and service_class.name == name:
            weight = service_class.scheduling.weight
            if weight is not None:
                return float(weight)
    raise SearchInputInvalid(f"no knob {parameter!r} in the intent")


def knobs(
    intent: Intent,
    lambda_factors: Sequence[float] = LAMBDA_FACTORS,
    weight_points: int = WEIGHT_POINTS,
) -> tuple[Knob, ...]:
    """The knobs the search may move: each ECN-marking class's lambda (its current value x
    each factor, clamped into the tuner's lambda bounds) and each DWRR weight with a range
    (``weight_points`` spread over it, rounded). A lossless class is left alone (its marking
    is DCQCN's Kmin/Kmax, docs/lossless.md); so is a class without ECN or with DynaQ (drop
    thresholds, no lambda)."""
    tuning = intent.fabric.tuning
    out: list[Knob] = []
    for service_class in intent.service_classes:
        marks = service_class.ecn not in (EcnMode.OFF, EcnMode.DYNAQ)
        if marks and service_class.lossless is None:
            parameter = f"ecn_lambda/{service_class.name}"
            now = current(intent, parameter)
            tried = [
                round(min(max(now * f, tuning.ecn_lambda_min), tuning.ecn_lambda_max), 4)
                for f in lambda_factors
            ]
            out.append(Knob(parameter, _distinct(now, tried)))
    for service_class in intent.service_classes:
        scheduling = service_class.scheduling
        if scheduling.type is not SchedulingType.DWRR or scheduling.weight is None:
            continue
        low = scheduling.weight_min if scheduling.weight_min is not None else scheduling.weight
        high = scheduling.weight_max if scheduling.weight_max is not None else scheduling.weight
        if low == high:
            continue
        steps = max(weight_points - 1, 1)
        tried = [float(round(low + (high - low) * i / steps)) for i in range(steps + 1)]
        out.append(Knob(f"weight/{service_class.name}", _distinct(float(scheduling.weight), tried)))
    return tuple(k for k in out if len(k.values) > 1)


def _distinct(now: float, tried: Sequence[float]) -> tuple[float, ...]:
    values = [now]
    for value in tried:
        if value not in values:
            values.append(value)
    return tuple(values)


def changes_for(intent: Intent, setting: Setting, evidence: Evidence) -> list[Change]:
    """``setting`` as the tuner's changes from ``intent`` (a weight is an integer)."""
    out: list[Change] = []
    for parameter, value in setting.items():
        now = current(intent, parameter)
        proposed: float | int = int(value) if parameter.startswith("weight/") else value
        if parameter.startswith("weight/"):
            now = int(now)
        out.append(Change(parameter, now, proposed, evidence))
    return out


def candidate(intent: Intent, setting: Setting) -> Intent:
    """The intent with ``setting`` applied (``apply_changes``, so it is validated)."""
    evidence = Evidence(RULE, "counterfactual search", {}, {})
    return apply_changes(intent, changes_for(intent, setting, evidence)).intent


def coordinate_search(
    intent: Intent,
    evaluate: Evaluate,
    *,
    knob_list: Sequence[Knob] | None = None,
    passes: int = 1,
    min_gain: float = 0.05,
) -> SearchResult:
    """Coordinate descent over ``knob_list`` (default ``knobs(intent)``) from the intent's
    own values, scored against the intent's objectives. ``evaluate`` runs a candidate intent
    and returns its classes' small-flow p99 FCT, us."""
    wanted = objectives(intent)
    if not wanted:
        raise SearchInputInvalid("no class declares objective.p99_fct_us_small")
    axes = tuple(knob_list if knob_list is not None else knobs(intent))
    if not axes:
        raise SearchInputInvalid("no knob has room to move (lambda bounds, weight ranges)")
    best_setting: dict[str, float] = {k.parameter: k.values[0] for k in axes}
    trials: list[Trial] = []

    def trial(setting: Mapping[str, float]) -> Trial:
        measured = evaluate(candidate(intent, setting))
        done = Trial(
            tuple(sorted(setting.items())),
            tuple(sorted(measured.items())),
            score(measured, wanted),
        )
        trials.append(done)
        return done

    start = best = trial(best_setting)
    for _ in range(passes):
        moved = False
        for knob in axes:
            for value in knob.values:
                if value == best_setting[knob.parameter]:
                    continue
                tried = trial({**best_setting, knob.parameter: value})
                if better(tried.score, best.score, min_gain):
                    best, best_setting, moved = tried, dict(tried.setting), True
        if not moved:
            break
    evidence = Evidence(
        RULE,
        "coordinate descent over per-class lambda and DWRR weights, each candidate run in the "
        "twin on the telemetry's traffic",
        {
            "candidates": len(trials),
            "objectives": tuple(sorted(wanted.items())),
            "start_misses": start.score.misses,
            "start_ratio": round(start.score.ratio, 4),
        },
        {
            "best_misses": best.score.misses,
            "best_ratio": round(best.score.ratio, 4),
            "predicted_p99_small_us": predicted_change(start, best),
        },
    )
    moves = {p: v for p, v in best.setting if v != start_value(axes, p)}
    return SearchResult(start, best, tuple(trials), tuple(changes_for(intent, moves, evidence)))


def predicted_change(start: Trial, best: Trial) -> tuple[tuple[str, float, float, float], ...]:
    """Per class the twin's small-flow p99 for the current intent and for the best candidate,
    us, and the change in %: the prediction a proposal carries, to be set against what the
    fabric measures after the rollout."""
    before, after = dict(start.p99_small_us), dict(best.p99_small_us)
    return tuple(
        (name, round(before[name], 1), round(after[name], 1), _pct(before[name], after[name]))
        for name in sorted(before.keys() & after.keys())
    )


def predicted_spread(
    runs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]],
) -> tuple[tuple[str, float, float], ...]:
    """Per class measured in every run, the least and the largest predicted change, %, over
    ``runs``: each the twin's small-flow p99 for the current and the best intent on one seed."""
    names = (
        set.intersection(*(set(before) & set(after) for before, after in runs)) if runs else set()
    )
    return tuple(
        (
            name,
            min(_pct(before[name], after[name]) for before, after in runs),
            max(_pct(before[name], after[name]) for before, after in runs),
        )
        for name in sorted(names)
    )


def _pct(before: float, after: float) -> float:
    return round((after - before) / before * 100.0, 1) if before else 0.0


def start_value(axes: Sequence[Knob], parameter: str) -> float:
    return next(k.values[0] for k in axes if k.parameter == parameter)


def better(new: Score, old: Score, min_gain: float) -> bool:
    """Fewer missed objectives, or as many and a ratio lower by more than ``min_gain``."""
    if new.misses != old.misses:
        return new.misses < old.misses
    return new.ratio < old.ratio * (1.0 - min_gain)


@dataclass(frozen=True, slots=True)
class Traffic:
    """The traffic a telemetry summary describes, as the twin takes it: the nearest shipped
    flow-size workload, the total load of a host link, each class's share of it."""

    workload: str
    load: float
    mix: tuple[tuple[str, float], ...]
    # Which draw of that traffic the twin runs (netsim's seed): every run of one search uses
    # the same (common random numbers); the winner is run again on others for its spread.
    seed: int = 1


def traffic_from_summary(summary: TelemetrySummary) -> Traffic:
    """From the hosts' finished-flow histograms (every class's pooled, for the workload) and
    each class's measured load (``FlowSizeSample.load``: its sent bits over its ports' speed).
    A class with no measured load carries none."""
    samples = [s for s in summary.flow_sizes.values() if s.flows > 0]
    if not samples:
        raise SearchInputInvalid("the summary has no finished flows to draw traffic from")
    loads = {s.service_class: s.load or 0.0 for s in samples}
    total = sum(loads.values())
    if total <= 0:
        raise SearchInputInvalid("the summary measured no load for any class")
    pooled = _pooled(samples)
    mix = tuple((name, load / total) for name, load in sorted(loads.items()) if load > 0)
    return Traffic(nearest_workload(pooled), min(total, 0.99), mix)


def _pooled(samples: Sequence[FlowSizeSample]) -> FlowSizeSample:
    edges = [edge for edge, _ in samples[0].buckets]
    counts = [sum(dict(s.buckets).get(edge, 0.0) for s in samples) for edge in edges]
    return FlowSizeSample("all", tuple(zip(edges, counts, strict=True)))
