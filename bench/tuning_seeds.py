"""How many seeds the tuner's search should run each candidate on: the ranking's stability
against the cost (issue 24; ``settings.twin.search_seeds``).

One command: ``nice -n 10 uv run --frozen python -m bench.tuning_seeds`` (``--flows`` per run,
1000; ``--load``, 0.7; ``--seeds``, 6; ``--parallel``, 2; ``--netsim``, the release binary;
``--json PATH``). Needs ``cargo build --release -p netsim`` (the same simulation as the debug
binary the product runs, faster).

The candidates are one search pass's from ``bench.tuning_search``'s start (its intent, a
summary the twin reproduces, web search at the load in ``bench.tuning_value.MIX``'s shares):
the current intent and each knob's other values with the rest held. Each runs on seeds
1 .. ``--seeds``. Then for N = 1, 2, 3 the seeds split into disjoint groups of N (1..N,
N+1..2N, ...), each group ranking the candidates by their mean objective score as the search
does; printed per N, over every pair of groups: how often their best candidate is the same,
the mean Kendall tau between their rankings, and how often each group's best on the mean
beats the current intent on every seed of the group (what the search proposes), and whether
the other group agrees it beats the current intent on its mean. Cost per pass is candidates x N
runs. Figures: docs/tuning.md, "How many seeds".
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.tuning_search import fabric_like_the_twin, flow_sizes
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import validate_intent
from controller.reconcile.fanout import map_parallel
from controller.services.tuning import netsim_search
from controller.tuning.counterfactual import TwinReading
from controller.tuning.search import (
    Score,
    candidate,
    knobs,
    mean_score,
    objectives,
    score,
    traffic_from_summary,
)

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT / "target" / "release" / "netsim"


def one_pass(intent: Intent) -> list[dict[str, float]]:
    """The settings one search pass tries first: the start, then each knob's other values."""
    axes = knobs(intent)
    start = {k.parameter: k.values[0] for k in axes}
    return [start] + [{**start, k.parameter: v} for k in axes for v in k.values[1:]]


def kendall_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-a between two scorings of the same items (1: the same order)."""
    pairs = list(itertools.combinations(range(len(a)), 2))
    agree = sum(1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 for i, j in pairs)
    return agree / len(pairs)


def group_view(scores: list[list[Score]], group: tuple[int, ...]) -> dict[str, Any]:
    """What the search sees on ``group``'s seeds: each candidate's mean score, the best on
    the mean, and whether that best beats the start (index 0) on every seed of the group."""
    means = [mean_score([per_seed[s] for s in group]) for per_seed in scores]
    best = min(range(len(means)), key=lambda i: means[i])
    wins = all(
        (scores[best][s].misses, scores[best][s].ratio) < (scores[0][s].misses, scores[0][s].ratio)
        for s in group
    )
    return {"means": means, "best": best, "clear": best != 0 and wins}


def stability(scores: list[list[Score]], seeds: int, n: int) -> dict[str, Any]:
    groups = [tuple(range(i, i + n)) for i in range(0, seeds - n + 1, n)]
    views = [group_view(scores, g) for g in groups]
    pairs = list(itertools.combinations(range(len(groups)), 2))
    same_best = sum(views[i]["best"] == views[j]["best"] for i, j in pairs)
    taus = [
        kendall_tau([m.ratio for m in views[i]["means"]], [m.ratio for m in views[j]["means"]])
        for i, j in pairs
    ]
    # A group's clear best, judged on another group's mean: does it still beat the start?
    confirmed = [
        views[j]["means"][views[i]["best"]] < views[j]["means"][0]
        for i, j in itertools.permutations(range(len(groups)), 2)
        if views[i]["clear"]
    ]
    return {
        "seeds_per_candidate": n,
        "groups": [list(g) for g in groups],
        "pairs": len(pairs),
        "same_best": same_best,
        "kendall_tau_mean": round(sum(taus) / len(taus), 3) if taus else None,
        "best_by_group": [v["best"] for v in views],
        "proposes": [v["clear"] for v in views],
        "confirmed_by_other_group": f"{sum(confirmed)} of {len(confirmed)}",
    }


def _raw(scores: list[list[Score]]) -> dict[str, Any]:
    return {"scores": [[[s.misses, s.ratio] for s in row] for row in scores]}


def main(argv: list[str] | None = None) -> int:
    from bench.tuning_value import MIX, bench_intent

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--netsim", type=Path, default=RELEASE)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    data: dict[str, Any] = dump_intent(bench_intent())
    data["fabric"]["tuning"].update({"search": "twin", "search_flows": args.flows})
    intent = validate_intent(parse_intent(data))
    simulate = netsim_search(args.netsim, 900.0)
    flows = flow_sizes("websearch", {name: args.load * share for name, share in MIX})
    traffic = traffic_from_summary(fabric_like_the_twin(intent, simulate, flows))
    wanted = objectives(intent)
    settings = one_pass(intent)
    started = time.monotonic()
    scores: list[list[Score]] = []
    for index, setting in enumerate(settings):
        tried = candidate(intent, setting)

        def on_seed(seed: int, tried: Intent = tried) -> TwinReading:
            return simulate(tried, replace(traffic, seed=seed))

        readings = map_parallel(
            on_seed,
            list(range(1, args.seeds + 1)),
            max_parallel=args.parallel,
            name="seeds",
        )
        scores.append([score(r.p99_small_us, wanted) for r in readings])
        if args.json:  # what is done so far, should the run be cut short
            args.json.write_text(json.dumps({"settings": settings[: len(scores)], **_raw(scores)}))
        print(
            f"candidate {index + 1}/{len(settings)} {setting}: ratios "
            f"{', '.join(f'{s.ratio:.3f}' for s in scores[-1])} "
            f"({time.monotonic() - started:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    results = [stability(scores, args.seeds, n) for n in (1, 2, 3) if n <= args.seeds // 2]
    for row in results:
        print(json.dumps(row))
    print(
        f"{len(settings)} candidates x {args.seeds} seeds, {args.flows} flows a run: "
        f"{time.monotonic() - started:.0f} s wall"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"settings": settings, **_raw(scores), "stability": results},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
