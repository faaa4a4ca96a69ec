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
has 1 + sum of each knob's other values (about 20). Each candidate is run on every seed the
caller gives (the same seeds for every candidate: common random numbers) and ranked by its
mean score over them; a move replaces the incumbent only when that mean is better by more
than ``min_gain`` (relative) and it is better on every seed too (``clear_of_noise``: the
spread of its per-seed change does not reach the losing side). One seed's p99 of a hundred
small flows swings with the draw, so a candidate can win the mean by one seed's luck; when
such a candidate is all that beat the current intent, the result carries ``within_noise``
and no change.

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
Measured = Mapping[str, float]
# A candidate run on each of the search's seeds: one ``Measured`` per seed, always in the
# same order of seeds, so that the i-th of two candidates saw the same traffic.
Evaluate = Callable[[Intent], Sequence[Measured]]

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
    over the classes with an objective of p99 / objective (over seeds: each one's mean)."""

    misses: float
    ratio: float


@dataclass(frozen=True, slots=True)
class Trial:
    """One candidate: its setting, per class the mean over seeds of its small-flow p99, its
    mean score (what ranks it), and each seed's p99s and score (its spread)."""

    setting: tuple[tuple[str, float], ...]
    p99_small_us: tuple[tuple[str, float], ...]
    score: Score
    per_seed: tuple[tuple[tuple[str, float], ...], ...] = ()
    seed_scores: tuple[Score, ...] = ()

    def ratio_spread(self) -> tuple[float, float]:
        """The least and largest score ratio over its seeds."""
        ratios = [s.ratio for s in self.seed_scores] or [self.score.ratio]
        return min(ratios), max(ratios)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """``changes`` is empty when no candidate beat the start on the mean and on every seed;
    ``within_noise`` then says, seed by seed, how the best on the mean did where it beat the
    start on the mean alone."""

    start: Trial
    best: Trial
    trials: tuple[Trial, ...]
    changes: tuple[Change, ...]
    within_noise: str | None = None


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


def mean_score(scores: Sequence[Score]) -> Score:
    """A candidate's rank over its seeds: the mean of each seed's misses and ratio."""
    return Score(
        sum(s.misses for s in scores) / len(scores), sum(s.ratio for s in scores) / len(scores)
    )


def mean_p99(per_seed: Sequence[Measured]) -> dict[str, float]:
    """Per class measured on every seed, the mean of its small-flow p99 over them."""
    names = set.intersection(*(set(m) for m in per_seed)) if per_seed else set()
    return {name: sum(m[name] for m in per_seed) / len(per_seed) for name in names}


def seed_changes(start: Trial, best: Trial) -> tuple[float, ...]:
    """Per seed, the best's score ratio relative to the start's, %."""
    return tuple(
        _pct(old.ratio, new.ratio)
        for old, new in zip(start.seed_scores, best.seed_scores, strict=True)
    )


def clear_of_noise(start: Trial, best: Trial) -> bool:
    """Whether ``best`` beats ``start`` by more than the seeds' spread: on every seed it
    misses no more objectives, and misses fewer or scores a lower ratio. A mean gain that one
    seed carries (the others no better) is the draw's luck, not the configuration's."""
    return all(
        better(new, old, 0.0) for old, new in zip(start.seed_scores, best.seed_scores, strict=True)
    )


def noise_reason(start: Trial, best: Trial) -> str:
    changes = seed_changes(start, best)
    by_seed = ", ".join(f"{c:+.1f}" for c in changes)
    misses = ", ".join(f"{s.misses:g}" for s in best.seed_scores)
    was = ", ".join(f"{s.misses:g}" for s in start.seed_scores)
    return (
        f"no proposal: within noise: the best candidate's objective score ratio changes "
        f"{_pct(start.score.ratio, best.score.ratio):+.1f} % on the mean, {by_seed} % "
        f"seed by seed (objectives missed {was} -> {misses}): it does not beat the current "
        "intent on every seed"
    )


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
    on each of the search's seeds and returns, per seed, its classes' small-flow p99 FCT, us.
    Moves follow the mean score over the seeds; the best is proposed only when it is
    ``clear_of_noise`` against the start."""
    wanted = objectives(intent)
    if not wanted:
        raise SearchInputInvalid("no class declares objective.p99_fct_us_small")
    axes = tuple(knob_list if knob_list is not None else knobs(intent))
    if not axes:
        raise SearchInputInvalid("no knob has room to move (lambda bounds, weight ranges)")
    best_setting: dict[str, float] = {k.parameter: k.values[0] for k in axes}
    trials: list[Trial] = []

    def trial(setting: Mapping[str, float]) -> Trial:
        per_seed = list(evaluate(candidate(intent, setting)))
        if not per_seed:
            raise SearchInputInvalid("the twin returned no seed's figures for a candidate")
        scores = tuple(score(measured, wanted) for measured in per_seed)
        done = Trial(
            tuple(sorted(setting.items())),
            tuple(sorted(mean_p99(per_seed).items())),
            mean_score(scores),
            tuple(tuple(sorted(m.items())) for m in per_seed),
            scores,
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
                if improves(tried, best, min_gain):
                    best, best_setting, moved = tried, dict(tried.setting), True
        if not moved:
            break
    changes = seed_changes(start, best)
    evidence = Evidence(
        RULE,
        "coordinate descent over per-class lambda and DWRR weights, each candidate run in the "
        "twin on the telemetry's traffic on every seed, ranked by its mean score",
        {
            "candidates": len(trials),
            "seeds": len(start.seed_scores),
            "objectives": tuple(sorted(wanted.items())),
            "start_misses": start.score.misses,
            "start_ratio": round(start.score.ratio, 4),
            "start_ratio_spread": _rounded(start.ratio_spread()),
        },
        {
            "best_misses": best.score.misses,
            "best_ratio": round(best.score.ratio, 4),
            "best_ratio_spread": _rounded(best.ratio_spread()),
            "score_change_by_seed_pct": tuple(round(c, 1) for c in changes),
            "predicted_p99_small_us": predicted_change(start, best),
        },
    )
    moves = {p: v for p, v in best.setting if v != start_value(axes, p)}
    if not moves:
        # Nothing moved: say so when a candidate's mean beat the start but not every seed.
        lucky = min(trials, key=lambda t: t.score)
        if better(lucky.score, start.score, min_gain):
            return SearchResult(start, best, tuple(trials), (), noise_reason(start, lucky))
    return SearchResult(start, best, tuple(trials), tuple(changes_for(intent, moves, evidence)))


def _rounded(pair: tuple[float, float]) -> tuple[float, float]:
    return round(pair[0], 4), round(pair[1], 4)


def predicted_change(start: Trial, best: Trial) -> tuple[tuple[str, float, float, float], ...]:
    """Per class the twin's small-flow p99 for the current intent and for the best candidate
    (each the mean over the seeds), us, and the change in %: the prediction a proposal
    carries, to be set against what the fabric measures after the rollout."""
    before, after = dict(start.p99_small_us), dict(best.p99_small_us)
    return tuple(
        (name, round(before[name], 1), round(after[name], 1), _pct(before[name], after[name]))
        for name in sorted(before.keys() & after.keys())
    )


def seed_pairs(start: Trial, best: Trial) -> list[tuple[dict[str, float], dict[str, float]]]:
    """Each seed's small-flow p99s for the start and the best, as ``predicted_spread`` takes
    them."""
    return [(dict(old), dict(new)) for old, new in zip(start.per_seed, best.per_seed, strict=True)]


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


def improves(new: Trial, old: Trial, min_gain: float) -> bool:
    """A move: ``new``'s mean score is ``better`` than ``old``'s and it is ``clear_of_noise``
    (better on every seed). Each move clears the noise against the one before, seed by seed,
    so the search's best beats its start on every seed too."""
    return better(new.score, old.score, min_gain) and clear_of_noise(old, new)


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
    # Which draw of that traffic the twin runs (netsim's seed): every candidate of one search
    # runs on the same seeds (common random numbers).
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
