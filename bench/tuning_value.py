"""Does the loop beat a well-tuned static config after the workload shifts? (issue 24)

One command: ``uv run --frozen python -m bench.tuning_value`` (``--scenarios``, ``--flows``
(1000), ``--seeds`` (the judge's), ``--search-seeds`` (each candidate runs on these and is
ranked by its mean score, moving only when it wins on every seed, as the tuner's search
does), ``--parallel`` (twin runs at once), ``--knobs`` (search only these), ``--json PATH``;
needs ``cargo build --release -p netsim``). ``--ns3-from PATH`` (a ``--json`` file) judges
its scenarios' phase two again, by netsim and ns-3.37 on the same flows (``ns3_judge``;
``--ns3-flows``). Figures and commands: docs/tuning.md, "Tuned vs a well-tuned static config
after a workload shift".

Each scenario has two phases of traffic on the example fabric (``bench.tuning_twin``'s
static intent: the example with DWRR weight ranges), with each loaded class given a
small-flow objective (``OBJECTIVES``, ``objective.p99_fct_us_small``):

* ``load``: web search at load 0.5, then 0.9;
* ``idle``: web search at load 0.7, then storage goes idle (the other classes keep their load);
* ``sizes``: web search at load 0.7, then data mining flow sizes at the same load;
* ``incast``: web search for rpc, analytics and best-effort (storage idle), then storage
  appears as an incast class: every other host sends it 64 kB at once, at Poisson times
  (``Incast``), carrying 0.175 of the host links (storage's share of ``MIX`` at 0.7).

1. **Static, well tuned for phase one**: ``controller.tuning.search.coordinate_search`` from
   the example's values over every class's lambda and every DWRR weight in its range, each
   candidate run in the twin on phase one's traffic (``--search-seeds``). What an operator
   with a simulator would write; its cost is printed.
2. **The loop in phase two**: the static intent runs on phase two's traffic (seed
   ``OBSERVE_SEED``); its run becomes a telemetry summary (``summary_from_run``, as
   ``bench.tuning_twin`` builds it); the tuner's rules (``propose``, ``apply_changes``) run
   on it, then the counterfactual search from their result, its candidates run in the twin
   on the traffic the summary describes (``traffic_from_summary``: the nearest shipped
   workload to the hosts' flow sizes, each class's measured load; ``--search-seeds``),
   not on phase two's real description.
3. **Judged**: static and tuned on phase two's real traffic with fresh seeds (``--seeds``,
   default 1 2 3); per class the small-flow (<= 100 kB) p99 FCT against its objective, the
   mean FCT (what large flows pay), and the objective score (geometric mean over the
   classes of p99 / objective), each with its spread over the seeds.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.netsim_bench import NS3_BINARY, ensure_ns3, percentile, read_csv, run_measured
from bench.tuning_twin import Run, run_twin, static_intent, summary_from_run
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import validate_intent
from controller.qos.pias import load_workload
from controller.reconcile.fanout import map_parallel
from controller.tuning.apply import apply_changes, intent_diff
from controller.tuning.search import (
    Score,
    SearchResult,
    Traffic,
    coordinate_search,
    knobs,
    objectives,
    score,
    seed_changes,
    traffic_from_summary,
)
from controller.tuning.tune import propose
from controller.twin.translate import Request, translate

JsonObject = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
NETSIM = ROOT / "target" / "release" / "netsim"
SMALL_BYTES = 100_000
SEARCH_SEED = 101  # the searches' runs (phase one's, and phase two's on the summary's traffic)
OBSERVE_SEED = 201  # the static config's run on phase two's traffic that telemetry reports
# Each lambda tried at half and twice the current one (the search's default also tries a
# quarter): 15 candidates per search instead of 19, on a machine shared by several jobs.
LAMBDA_FACTORS = (0.5, 2.0)
NOW_S = 3600.0  # the rules' pass, long after any earlier change (no interval holds)
# What the operator declares per class: small-flow p99 FCT, us.
OBJECTIVES = {"rpc": 5_000.0, "storage": 20_000.0, "analytics": 40_000.0, "best-effort": 40_000.0}
# Each class's share of the load (control, QJUMP level 7 at ~309 Mb/s per host, carries
# none: its bucket, not the fabric, would set its FCT, docs/netsim.md).
MIX = (("rpc", 0.15), ("storage", 0.25), ("analytics", 0.45), ("best-effort", 0.15))


@dataclass(frozen=True, slots=True)
class Incast:
    """A class whose traffic is incast: at Poisson times (drawn from the run's seed) a
    receiver drawn at random gets ``bytes`` from every other host at once, the events
    carrying ``load`` of the host links on average, over the span the Poisson classes'
    arrivals take. netsim's ``incast`` parts; ``Request`` has no word for them."""

    service_class: str
    load: float
    bytes: int = 64_000

    def parts(self, intent: Intent, phase: Phase, flows: int, seed: int) -> list[JsonObject]:
        topology = translate(intent, phase.request(flows, seed)).config["topology"]
        hosts = int(topology["leaves"]) * int(topology["hosts_per_leaf"])
        link_bytes_per_s = float(topology["host_link_bps"]) / 8
        # The Poisson parts' arrival span: their flows' bytes over their load of the links.
        offered = phase.load * hosts * link_bytes_per_s
        total_bytes = round(flows * phase.flows_factor) * load_workload(phase.workload).mean_bytes()
        span_s = total_bytes / offered
        per_event = (hosts - 1) * self.bytes
        rate = self.load * hosts * link_bytes_per_s / per_event  # events per second
        draw = random.Random(f"incast-{seed}")
        index = [c.name for c in intent.service_classes].index(self.service_class)
        parts: list[JsonObject] = []
        at_s = draw.expovariate(rate)
        while at_s < span_s:
            parts.append(
                {
                    "kind": "incast",
                    "receiver": draw.randrange(hosts),
                    "senders": hosts - 1,
                    "bytes": self.bytes,
                    "at_ns": at_s * 1e9,
                    "class": index,
                }
            )
            at_s += draw.expovariate(rate)
        return parts


@dataclass(frozen=True, slots=True)
class Phase:
    workload: str
    load: float
    mix: tuple[tuple[str, float], ...]
    flows_factor: float = 1.0  # flows relative to --flows (a class gone idle sends none)
    incast: Incast | None = None  # a class that sends incast, beside the Poisson ones

    def request(self, flows: int, seed: int) -> Request:
        return Request(self.workload, self.load, round(flows * self.flows_factor), seed, self.mix)

    def extra(self, intent: Intent, flows: int, seed: int) -> list[JsonObject]:
        """The traffic parts beside ``request``'s (the incast class's)."""
        return [] if self.incast is None else self.incast.parts(intent, self, flows, seed)


WITHOUT_STORAGE = tuple((n, s) for n, s in MIX if n != "storage")
STORAGE_SHARE = dict(MIX)["storage"]
SCENARIOS: dict[str, tuple[Phase, Phase]] = {
    "load": (Phase("websearch", 0.5, MIX), Phase("websearch", 0.9, MIX)),
    "idle": (
        Phase("websearch", 0.7, MIX),
        # The other classes keep their load; the flows shrink with it (same time span).
        Phase("websearch", 0.7 * (1 - STORAGE_SHARE), WITHOUT_STORAGE, 1 - STORAGE_SHARE),
    ),
    "sizes": (Phase("websearch", 0.7, MIX), Phase("datamining", 0.7, MIX)),
    # Storage idle, then an incast class at its share of the load; the others keep theirs.
    "incast": (
        Phase("websearch", 0.7 * (1 - STORAGE_SHARE), WITHOUT_STORAGE, 1 - STORAGE_SHARE),
        Phase(
            "websearch",
            0.7 * (1 - STORAGE_SHARE),
            WITHOUT_STORAGE,
            1 - STORAGE_SHARE,
            Incast("storage", 0.7 * STORAGE_SHARE),
        ),
    ),
}


def bench_intent() -> Intent:
    """The tuning bench's static intent with each loaded class's objective."""
    data: dict[str, Any] = dump_intent(static_intent())
    for service_class in data["service_classes"]:
        if service_class["name"] in OBJECTIVES:
            service_class["objective"] = {"p99_fct_us_small": OBJECTIVES[service_class["name"]]}
    return validate_intent(parse_intent(data))


def class_figures(run: Run) -> dict[str, JsonObject]:
    """Per class: flows, small flows, small-flow p99 and mean FCT (us), all flows' mean."""
    return figures(
        (run.classes[int(f["class"])], int(f["bytes"]), float(f["fct_ns"]) / 1e3)
        for f in run.flows
        if f["fct_ns"]
    )


def figures(rows: Iterable[tuple[str, int, float]]) -> dict[str, JsonObject]:
    """``class_figures`` from (class, bytes, FCT us) rows of finished flows."""
    small: dict[str, list[float]] = {}
    every: dict[str, list[float]] = {}
    for name, size, fct_us in rows:
        every.setdefault(name, []).append(fct_us)
        if size <= SMALL_BYTES:
            small.setdefault(name, []).append(fct_us)
    return {
        name: {
            "flows": len(fcts),
            "small_flows": len(small.get(name, [])),
            "p99_small_us": percentile(small[name], 99) if name in small else None,
            "mean_small_us": statistics.fmean(small[name]) if name in small else None,
            "mean_us": statistics.fmean(fcts),
        }
        for name, fcts in every.items()
    }


def p99_small(runs: list[Run]) -> dict[str, float]:
    """Per class, the small-flow p99 FCT over every run's flows pooled (one p99 of all the
    seeds' small flows, not a mean of per-seed p99s)."""
    pooled = figures(
        (run.classes[int(f["class"])], int(f["bytes"]), float(f["fct_ns"]) / 1e3)
        for run in runs
        for f in run.flows
        if f["fct_ns"]
    )
    return {
        name: row["p99_small_us"] for name, row in pooled.items() if row["p99_small_us"] is not None
    }


class Twin:
    """Runs candidates in netsim and counts the runs and their wall time; ``only`` restricts
    the searches to the named knobs (``ecn_lambda/<class>``, ``weight/<class>``; empty: all);
    each candidate runs on every seed of ``search_seeds`` (``parallel`` at once), ranked by
    its mean score and moving only when it wins on every seed (``coordinate_search``)."""

    def __init__(
        self,
        binary: Path,
        timeout_s: float,
        only: tuple[str, ...] = (),
        search_seeds: tuple[int, ...] = (SEARCH_SEED,),
        parallel: int = 1,
    ) -> None:
        self.binary, self.timeout_s, self.only = binary, timeout_s, only
        self.search_seeds, self.parallel = search_seeds, parallel
        self.runs, self.seconds = 0, 0.0

    def run(self, intent: Intent, request: Request, extra: list[JsonObject] | None = None) -> Run:
        started = time.perf_counter()
        out = run_twin(intent, request, self.binary, self.timeout_s, extra or ())
        self.runs += 1
        self.seconds += time.perf_counter() - started
        return out

    def on_seeds(self, intent: Intent, request: Request) -> list[Run]:
        """``intent`` on ``request`` with each search seed in its place, side by side."""
        return map_parallel(
            lambda seed: self.run(intent, dataclasses.replace(request, seed=seed)),
            self.search_seeds,
            max_parallel=self.parallel,
            name="tuning-value",
        )


def search(
    twin: Twin, intent: Intent, request: Request, label: str
) -> tuple[SearchResult, JsonObject]:
    """The counterfactual search from ``intent`` on ``request``'s traffic, with its cost; each
    candidate runs once per seed of ``twin.search_seeds`` (in place of the request's seed)."""
    runs, seconds, started = twin.runs, twin.seconds, time.perf_counter()

    def evaluate(candidate: Intent) -> list[dict[str, float]]:
        per_seed = [p99_small([run]) for run in twin.on_seeds(candidate, request)]
        wanted = objectives(candidate)
        trials = ", ".join(
            f"{s.misses}/{s.ratio:.3f}" for s in (score(m, wanted) for m in per_seed)
        )
        print(
            f"  {label} run {twin.runs - runs}: misses/ratio by seed {trials}",
            file=sys.stderr,
            flush=True,
        )
        return per_seed

    axes = [
        k
        for k in knobs(intent, lambda_factors=LAMBDA_FACTORS)
        if not twin.only or k.parameter in twin.only
    ]
    result = coordinate_search(intent, evaluate, knob_list=axes)
    wall_s = time.perf_counter() - started
    cost = {
        "candidates": len(result.trials),
        "runs": twin.runs - runs,
        "search_seeds": list(twin.search_seeds),
        "wall_s": round(wall_s, 1),
        "netsim_s": round(twin.seconds - seconds, 1),
        "candidates_per_s": round(len(result.trials) / wall_s, 4) if wall_s else None,
        "within_noise": result.within_noise,
    }
    return result, cost


def tuned_static(twin: Twin, phase: Phase, flows: int) -> tuple[Intent, JsonObject]:
    """The operator's static config: the search's best on phase one's traffic."""
    start = bench_intent()
    result, cost = search(twin, start, phase.request(flows, SEARCH_SEED), "static (phase 1)")
    static = validate_intent(apply_changes(start, result.changes).intent)
    return static, {**cost, **_search_doc(start, static, result)}


def loop(twin: Twin, static: Intent, phase: Phase, flows: int) -> tuple[Intent, JsonObject]:
    """What the loop makes of phase two: rules on the summary, then the search on the
    summary's traffic."""
    observed = twin.run(
        static, phase.request(flows, OBSERVE_SEED), phase.extra(static, flows, OBSERVE_SEED)
    )
    summary = summary_from_run(observed, static)
    changes = propose(static, summary, now_s=NOW_S, last_changed={})
    ruled = validate_intent(apply_changes(static, changes).intent)
    traffic = traffic_from_summary(summary)
    request = Request(traffic.workload, traffic.load, flows, SEARCH_SEED, traffic.mix)
    result, cost = search(twin, ruled, request, "loop (phase 2)")
    tuned = validate_intent(apply_changes(ruled, result.changes).intent)
    return tuned, {
        "rules": [
            {"parameter": c.parameter, "current": c.current, "proposed": c.proposed}
            for c in changes
            if c.applies
        ],
        "rules_diff": intent_diff(dump_intent(static), dump_intent(ruled)),
        "summary_traffic": _traffic_doc(traffic),
        **cost,
        **_search_doc(ruled, tuned, result),
    }


def _traffic_doc(traffic: Traffic) -> JsonObject:
    return {
        "workload": traffic.workload,
        "load": round(traffic.load, 3),
        "mix": {n: round(s, 3) for n, s in traffic.mix},
    }


def _search_doc(before: Intent, after: Intent, result: SearchResult) -> JsonObject:
    return {
        "start_score": _score_doc(result.start.score),
        "best_score": _score_doc(result.best.score),
        "best_score_by_seed_pct": [round(c, 1) for c in seed_changes(result.start, result.best)],
        "diff": intent_diff(dump_intent(before), dump_intent(after)),
    }


def _score_doc(s: Score) -> JsonObject:
    return {"misses": s.misses, "ratio": round(s.ratio, 4)}


def judge(
    twin: Twin, static: Intent, tuned: Intent, phase: Phase, flows: int, seeds: list[int]
) -> JsonObject:
    """Static and tuned on phase two's real traffic, one run each per seed."""
    wanted = objectives(static)
    per_seed = []
    for seed in seeds:
        row: JsonObject = {"seed": seed}
        for name, intent in (("static", static), ("tuned", tuned)):
            figures = class_figures(
                twin.run(intent, phase.request(flows, seed), phase.extra(intent, flows, seed))
            )
            measured = {n: r["p99_small_us"] for n, r in figures.items() if r["p99_small_us"]}
            row[name] = {"classes": figures, "score": _score_doc(score(measured, wanted))}
        print(
            f"  judge seed {seed}: score static {row['static']['score']['ratio']:.3f} "
            f"tuned {row['tuned']['score']['ratio']:.3f}",
            file=sys.stderr,
            flush=True,
        )
        per_seed.append(row)
    return {"seeds": per_seed, "summary": judge_summary(per_seed, wanted)}


def judge_summary(per_seed: list[JsonObject], wanted: dict[str, float]) -> JsonObject:
    """Over the seeds: each class's small-flow p99 and mean FCT (mean, min, max) for both
    configs, the relative change of each, whether the objective held in every seed; the
    objective score's change per seed."""
    classes: JsonObject = {}
    names = sorted({n for row in per_seed for n in row["static"]["classes"]})
    for name in names:
        entry: JsonObject = {"objective_us": wanted.get(name)}
        for key in ("p99_small_us", "mean_us"):
            for config in ("static", "tuned"):
                values = [
                    row[config]["classes"][name][key]
                    for row in per_seed
                    if name in row[config]["classes"] and row[config]["classes"][name][key]
                ]
                entry[f"{config}_{key}"] = _spread(values)
            entry[f"{key}_change_pct"] = _spread(
                [
                    _pct(row["static"]["classes"][name][key], row["tuned"]["classes"][name][key])
                    for row in per_seed
                    if name in row["static"]["classes"]
                    and name in row["tuned"]["classes"]
                    and row["static"]["classes"][name][key]
                    and row["tuned"]["classes"][name][key]
                ]
            )
        if name in wanted:
            for config in ("static", "tuned"):
                entry[f"{config}_meets_objective"] = all(
                    (row[config]["classes"].get(name, {}).get("p99_small_us") or 0) <= wanted[name]
                    for row in per_seed
                )
        classes[name] = entry
    return {
        "classes": classes,
        "score_change_pct": _spread(
            [_pct(r["static"]["score"]["ratio"], r["tuned"]["score"]["ratio"]) for r in per_seed]
        ),
        "static_score": _spread([r["static"]["score"]["ratio"] for r in per_seed]),
        "tuned_score": _spread([r["tuned"]["score"]["ratio"] for r in per_seed]),
    }


def _pct(before: float, after: float) -> float:
    return (after - before) / before * 100.0


def _spread(values: list[float]) -> JsonObject | None:
    if not values:
        return None
    return {
        "mean": round(statistics.fmean(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def one_scenario(twin: Twin, name: str, flows: int, seeds: list[int]) -> JsonObject:
    first, second = SCENARIOS[name]
    print(f"scenario {name}: phase 1 {first}, phase 2 {second}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    static, static_doc = tuned_static(twin, first, flows)
    tuned, loop_doc = loop(twin, static, second, flows)
    verdict = judge(twin, static, tuned, second, flows, seeds)
    return {
        "scenario": name,
        "phases": [_phase_doc(first), _phase_doc(second)],
        "flows": flows,
        "static_search": static_doc,
        "loop": loop_doc,
        "judge": verdict,
        "wall_s": round(time.perf_counter() - started, 1),
        # For the ns-3 judge (--ns3-from), which runs these again.
        "intents": {"static": dump_intent(static), "tuned": dump_intent(tuned)},
    }


def for_ns3(data: JsonObject) -> Intent:
    """The intent as ns-3's driver can run it: without QJUMP's host buckets, which it refuses
    (control, the one class on a QJUMP level, carries no traffic in these scenarios)."""
    data = copy.deepcopy(data)
    data["fabric"]["qjump"] = None
    for service_class in data["service_classes"]:
        service_class["qjump_level"] = None
    return validate_intent(parse_intent(data))


def both_judges(
    intent: Intent,
    request: Request,
    work: Path,
    netsim: Path,
    timeout_s: float,
    extra: list[JsonObject] | None = None,
) -> JsonObject:
    """One run description judged by netsim and ns-3: the twin's translation with MQ-ECN per
    packet (ns-3's driver does not run the qos-agent's loop) and the ``extra`` traffic parts,
    resolved by netsim into explicit flows, then run by both on the very same flows."""
    twin = translate(intent, dataclasses.replace(request, per_packet=True))
    twin.config["traffic"] = [*twin.config["traffic"], *(extra or [])]
    config, resolved = work / "run.json", work / "resolved.json"
    config.write_text(json.dumps(twin.config))
    subprocess.run(
        [str(netsim), "resolve", "--config", str(config), "--out", str(resolved)],
        check=True,
        capture_output=True,
        timeout=timeout_s,
    )
    flows = [f for part in json.loads(resolved.read_text())["traffic"] for f in part["flows"]]
    ours, theirs = work / "netsim.csv", work / "ns3.csv"
    netsim_cost, _ = run_measured(
        [str(netsim), "run", "--quiet", "--config", str(resolved), "--csv", str(ours)]
    )
    ns3_cost, _ = run_measured([str(NS3_BINARY), str(resolved), str(theirs)])
    rows = {int(r["flow"]): float(r["fct_ns"]) for r in read_csv(theirs)}
    names = twin.classes
    return {
        "netsim": figures(
            (names[int(r["class"])], int(r["bytes"]), float(r["fct_ns"]) / 1e3)
            for r in read_csv(ours)
            if r["fct_ns"]
        ),
        "ns3": figures(
            (names[int(f.get("class", 0))], int(f["bytes"]), rows[i] / 1e3)
            for i, f in enumerate(flows)
            if rows.get(i, -1.0) >= 0
        ),
        "ns3_unfinished": sum(1 for i in range(len(flows)) if rows.get(i, -1.0) < 0),
        "cpu_s": {"netsim": round(netsim_cost.cpu_s, 2), "ns3": round(ns3_cost.cpu_s, 1)},
    }


def ns3_judge(
    docs: list[JsonObject], flows: int, seeds: list[int], netsim: Path, timeout_s: float
) -> list[JsonObject]:
    """Phase two of each scenario again, static and tuned, judged by netsim and ns-3 on the
    same flows (``both_judges``), with ``flows`` flows (ns-3 costs about 50 times netsim's
    CPU here)."""
    ensure_ns3()
    out = []
    for doc in docs:
        phase = SCENARIOS[doc["scenario"]][1]
        intents = {name: for_ns3(doc["intents"][name]) for name in ("static", "tuned")}
        wanted = objectives(intents["static"])
        per_seed = []
        for seed in seeds:
            row: JsonObject = {"seed": seed}
            for name, intent in intents.items():
                with tempfile.TemporaryDirectory(prefix="tuning-value-ns3-") as work:
                    row[name] = both_judges(
                        intent,
                        phase.request(flows, seed),
                        Path(work),
                        netsim,
                        timeout_s,
                        phase.extra(intent, flows, seed),
                    )
                for judge_name in ("netsim", "ns3"):
                    measured = {
                        n: r["p99_small_us"]
                        for n, r in row[name][judge_name].items()
                        if r["p99_small_us"]
                    }
                    row[name][f"{judge_name}_score"] = _score_doc(score(measured, wanted))
                print(
                    f"  ns-3 judge {doc['scenario']} seed {seed} {name}: score netsim "
                    f"{row[name]['netsim_score']['ratio']:.3f}, ns-3 "
                    f"{row[name]['ns3_score']['ratio']:.3f}, CPU s {row[name]['cpu_s']}",
                    file=sys.stderr,
                    flush=True,
                )
            per_seed.append(row)
        summaries = {
            judge_name: judge_summary(
                [
                    {
                        "seed": row["seed"],
                        **{
                            config: {
                                "classes": row[config][judge_name],
                                "score": row[config][f"{judge_name}_score"],
                            }
                            for config in ("static", "tuned")
                        },
                    }
                    for row in per_seed
                ],
                wanted,
            )
            for judge_name in ("netsim", "ns3")
        }
        out.append(
            {"scenario": doc["scenario"], "flows": flows, "seeds": per_seed, "summary": summaries}
        )
    return out


def render_ns3(doc: JsonObject) -> str:
    lines = [
        f"{doc['scenario']} phase 2, MQ-ECN per packet, {doc['flows']} flows: "
        "tuned vs static, judged by netsim and ns-3.37 on the same flows"
    ]
    for judge_name, label in (("netsim", "netsim"), ("ns3", "ns-3")):
        s = doc["summary"][judge_name]
        sc = s["score_change_pct"]
        lines.append(
            f"  {label}: objective score static {s['static_score']['mean']:.3f}, tuned "
            f"{s['tuned_score']['mean']:.3f}, change {sc['mean']:+.1f} % "
            f"[{sc['min']:+.1f}, {sc['max']:+.1f}]"
        )
        for name, c in s["classes"].items():
            change = c["p99_small_us_change_pct"]
            lines.append(
                f"    {name:<12} p99 small {_cell(c['static_p99_small_us'], '.0f')} -> "
                f"{_cell(c['tuned_p99_small_us'], '.0f')} ({_cell(change, '+.1f')} %), "
                f"mean FCT {_cell(c['mean_us_change_pct'], '+.1f')} %"
            )
    return "\n".join(lines)


def _cell(v: JsonObject | None, fmt: str) -> str:
    if not v:
        return "-"
    return f"{format(v['mean'], fmt)} [{format(v['min'], fmt)}, {format(v['max'], fmt)}]"


def _phase_doc(phase: Phase) -> JsonObject:
    return {
        "workload": phase.workload,
        "load": round(phase.load, 3),
        "mix": dict(phase.mix),
        "flows_factor": phase.flows_factor,
        "incast": dataclasses.asdict(phase.incast) if phase.incast else None,
    }


def _num(value: float | None, fmt: str) -> str:
    return format(value, fmt) if value is not None else "-"


def render(doc: JsonObject) -> str:
    s = doc["judge"]["summary"]
    lines = [
        f"{doc['scenario']}: phase 1 {doc['phases'][0]}, phase 2 {doc['phases'][1]}, "
        f"{doc['flows']} flows",
        f"  static search: {doc['static_search']['candidates']} candidates, "
        f"{doc['static_search']['wall_s']} s; {doc['static_search']['start_score']} -> "
        f"{doc['static_search']['best_score']}",
    ]
    lines += [
        f"    {e['path']}: {e['before']} -> {e['after']}" for e in doc["static_search"]["diff"]
    ]
    loop_doc = doc["loop"]
    lines.append(f"  loop rules: {loop_doc['rules'] or 'no change'}")
    lines.append(
        f"  loop search on {loop_doc['summary_traffic']}: {loop_doc['candidates']} candidates, "
        f"{loop_doc['wall_s']} s; {loop_doc['start_score']} -> {loop_doc['best_score']}"
    )
    lines += [f"    {e['path']}: {e['before']} -> {e['after']}" for e in loop_doc["diff"]]
    lines.append(
        f"  {'class':<12}{'objective':>10}{'static p99 small':>26}{'tuned p99 small':>26}"
        f"{'change':>22}{'mean FCT change':>22}"
    )
    for name, c in s["classes"].items():
        cells = []
        for key in (
            "static_p99_small_us",
            "tuned_p99_small_us",
            "p99_small_us_change_pct",
            "mean_us_change_pct",
        ):
            v = c[key]
            fmt = "+.1f" if key.endswith("pct") else ".0f"
            cells.append(
                f"{_num(v['mean'], fmt)} [{_num(v['min'], fmt)}, {_num(v['max'], fmt)}]"
                if v
                else "-"
            )
        met = (
            f" met static/tuned {c.get('static_meets_objective')}/{c.get('tuned_meets_objective')}"
            if c["objective_us"]
            else ""
        )
        lines.append(
            f"  {name:<12}{_num(c['objective_us'], '.0f'):>10}{cells[0]:>26}{cells[1]:>26}"
            f"{cells[2]:>22}{cells[3]:>22}{met}"
        )
    sc = s["score_change_pct"]
    lines.append(
        f"  objective score (geo-mean p99 / objective): static {s['static_score']}, tuned "
        f"{s['tuned_score']}; change {sc['mean']:+.1f} % [{sc['min']:+.1f}, {sc['max']:+.1f}]"
    )
    lines.append(f"  wall {doc['wall_s']} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--netsim", type=Path, default=NETSIM)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--ns3-from",
        type=Path,
        help="judge the static and tuned intents of this --json file's scenarios by ns-3",
    )
    parser.add_argument("--ns3-flows", type=int, default=400)
    parser.add_argument(
        "--search-seeds",
        type=int,
        nargs="+",
        default=[SEARCH_SEED],
        help="run each candidate on these seeds; rank by the mean, move on a win on every seed",
    )
    parser.add_argument("--parallel", type=int, default=1, help="twin runs at once")
    parser.add_argument(
        "--knobs", nargs="*", default=[], help="search only these (e.g. weight/storage)"
    )
    args = parser.parse_args(argv)
    if args.ns3_from:
        chosen = [
            d for d in json.loads(args.ns3_from.read_text()) if d["scenario"] in args.scenarios
        ]
        judged = []
        for doc in ns3_judge(chosen, args.ns3_flows, args.seeds, args.netsim, args.timeout_s):
            print(render_ns3(doc), flush=True)
            judged.append(doc)
            if args.json:
                args.json.write_text(json.dumps(judged, indent=2, default=str))
        return 0
    twin = Twin(
        args.netsim, args.timeout_s, tuple(args.knobs), tuple(args.search_seeds), args.parallel
    )
    docs = []
    for name in args.scenarios:
        doc = one_scenario(twin, name, args.flows, args.seeds)
        print(render(doc), flush=True)
        docs.append(doc)
        if args.json:
            args.json.write_text(json.dumps(docs, indent=2, default=str))
    print(f"{twin.runs} twin runs, {twin.seconds:.0f} s of netsim wall time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
