"""Tuned vs static in the packet-level twin: FCT per class before and after the tuner.

One command: ``uv run --frozen python -m bench.tuning_twin`` (``--workload``, ``--flows``,
``--load``, ``--seeds``, ``--rounds``, ``--json``).

1. The static intent: ``docs/example-intent.yaml`` with DWRR weight ranges added (the example
   gives none, and a class without a range never moves, docs/tuning.md); the weights
   themselves are the example's (storage 50, analytics 30, best-effort 20).
2. A workload whose per-class demand differs from what the weights assume: web-search flow
   sizes (the twin's ``websearch`` CDF; ``--workload datamining`` for flows unlike the
   ``websearch`` the example's PIAS class names), analytics carrying most of the load
   although it has the smallest-but-one weight (``MIX``).
3. The static intent runs in the twin (``controller.twin``); its per-class, per-hop output
   becomes a ``TelemetrySummary`` (``summary_from_run``, which says what netsim measures and
   what it does not).
4. The real tuner (``controller.tuning.tune.propose``, ``controller.tuning.apply``) turns the
   summary into the tuned intent; with ``--rounds N`` the tuned intent runs again, is
   measured again and tuned again, each round one minimum interval later (the tuner's own
   step limit spreads a large move over rounds).
5. Static and tuned run on the same workload and seed; FCT per class (mean, p99, and mean
   of flows <= 100 KB) and the relative change are printed, with what the tuner changed.

Small-flow means come from netsim's per-flow CSV (``--csv``), the same flows as the
summary's FCT rows.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.intent.loader import dump_intent, load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import validate_intent
from controller.settings import TwinSettings
from controller.telemetry.tuning_summary import class_loads
from controller.tuning.apply import apply_changes, intent_diff
from controller.tuning.evidence import Change
from controller.tuning.summary import FlowSizeSample, QueueSummary, TelemetrySummary
from controller.tuning.tune import propose
from controller.twin.results import result
from controller.twin.translate import NETSIM_PACKET_BYTES, WORKLOADS, Request, translate

JsonObject = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
NETSIM = TwinSettings().netsim  # target/debug/netsim (cargo build -p netsim)
EXAMPLE = ROOT / "docs" / "example-intent.yaml"
MSS = 1460  # netsim's payload per packet
SMALL_BYTES = 100_000  # PIAS NSDI'15 §6.1's small-flow bucket, as netsim's report uses
# The host exporter's flow-size buckets (sluice_host_exporter.py FLOW_BUCKETS, docs/tuning.md):
# what the twin's flows are binned into, as the hosts would report them.
EXPORTER_FLOW_BUCKETS = tuple(1000 * 2**k for k in range(21))
# A twin run holds a few hundred flows per class (260 of 2000 for rpc in MIX); the intent's
# default, 1000 finished flows before PIAS drift is judged, suits a fabric's 10-minute window.
TWIN_PIAS_MIN_FLOWS = 200
# Each class's share of the offered load: analytics (weight 30 of 100) carries 60 %.
MIX = (
    ("control", 0.02),
    ("rpc", 0.13),
    ("storage", 0.13),
    ("analytics", 0.6),
    ("best-effort", 0.12),
)
# The ranges the operator allows (weight_min, weight_max) around the example's weights.
RANGES = {"storage": (20, 70), "analytics": (15, 75), "best-effort": (10, 40)}
WINDOW_S = 600.0  # the tuning window each round stands for (fabric.tuning.window_s default)


def static_intent(example: Path = EXAMPLE) -> Intent:
    """The example intent with weight ranges on its DWRR classes (weights unchanged), and
    the PIAS rule judging drift from ``TWIN_PIAS_MIN_FLOWS`` finished flows."""
    data: dict[str, Any] = dump_intent(load_intent_file(example))
    data["fabric"].setdefault("tuning", {})["pias_min_flows"] = TWIN_PIAS_MIN_FLOWS
    for service_class in data["service_classes"]:
        if service_class["name"] in RANGES:
            low, high = RANGES[service_class["name"]]
            service_class["scheduling"]["weight_min"] = low
            service_class["scheduling"]["weight_max"] = high
    return validate_intent(parse_intent(data))


@dataclass(frozen=True, slots=True)
class Run:
    """One twin run: netsim's raw summary, its per-flow rows, and the class names."""

    raw: JsonObject
    flows: list[dict[str, str]]
    classes: tuple[str, ...]
    config: JsonObject
    not_modelled: tuple[str, ...]


def run_twin(
    intent: Intent,
    request: Request,
    binary: Path,
    timeout_s: float,
    extra: Sequence[JsonObject] = (),
) -> Run:
    """``request``'s traffic in the twin, with ``extra`` netsim traffic parts beside it
    (``bench.tuning_value``'s incast class: what ``Request`` does not describe)."""
    twin = translate(intent, request)
    twin.config["traffic"] = [*twin.config["traffic"], *extra]
    with tempfile.TemporaryDirectory(prefix="sluice-tuning-twin-") as work:
        config_path = Path(work) / "run.json"
        summary_path, flows_path = Path(work) / "summary.json", Path(work) / "flows.csv"
        config_path.write_text(json.dumps(twin.config))
        command = [
            str(binary),
            "run",
            "--config",
            str(config_path),
            "--json",
            str(summary_path),
            "--csv",
            str(flows_path),
            "--quiet",
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=timeout_s)
        raw: JsonObject = json.loads(summary_path.read_text())
        with flows_path.open() as handle:
            flows = list(csv.DictReader(handle))
    return Run(raw, flows, twin.classes, twin.config, twin.not_modelled)


def summary_from_run(run: Run, intent: Intent, *, demand: bool = True) -> TelemetrySummary:
    """What the switches' telemetry would have shown for this traffic, from the twin.

    netsim reports, per class and hop position, the packets that crossed the queues (data
    and ACKs alike), their queueing delay (mean, p99) and the packets marked CE and dropped
    there; per flow its size and start. One QueueSummary per class stands for the leaf's host-facing
    ports (``leaf_down``: every byte delivered to a host leaves one of them, and there the
    host links' load meets the DWRR scheduler), averaged over those ports. The window is the
    traffic's arrival span (first to last flow start); the simulated time also holds the
    drain after the last arrival, which would dilute every rate.

    * ``tx_bytes_per_s``: the class's flow bytes on the wire (1500 B per 1460 B of payload)
      / window / ports (counted from the flows: netsim's hop packet counts include ACKs);
    * ``utilisation``: every class's bytes there over the ports' line rate;
    * ``offered_utilisation``: the same number, the port's offered demand: every flow of the
      window is delivered (netsim runs them to completion), so over the arrival span the
      port carries what it is offered; a switch cannot see demand (``None`` there, and
      here with ``demand=False``: ``--switch-view``);
    * ``occupancy_p50_bytes`` / ``p95``: mean / p99 queueing delay at leaf_down x line rate
      (the delay a packet saw is the backlog ahead of it drained at line rate; mean stands
      in for p50, p99 for p95, so both lean high);
    * ``mark_fraction``: the class's packets marked at leaf_down over those that crossed it
      (data and ACKs alike, as a switch's per-queue counters count them; ACKs are not
      ECN-capable, so this leans low); ``dropped_packets_per_s``: its drops there / window /
      ports.
    """
    topology = run.config["topology"]
    ports = int(topology["leaves"]) * int(topology["hosts_per_leaf"])
    line_bps = float(topology["host_link_bps"])
    starts = [float(flow["start_ns"]) for flow in run.flows]
    seconds = (max(starts) - min(starts)) / 1e9 or float(run.raw["simulated_ns"]) / 1e9
    wire: dict[int, float] = {}
    for flow in run.flows:
        index = int(flow["class"])
        wire[index] = wire.get(index, 0.0) + int(flow["bytes"]) * NETSIM_PACKET_BYTES / MSS
    tx = {index: total / seconds / ports for index, total in wire.items()}
    utilisation = sum(tx.values()) * 8 / line_bps
    queues: list[QueueSummary] = []
    for row in run.raw["hops"]["by_class"]:
        if row["hop"] != "leaf_down":
            continue
        index = int(row["class"])
        queues.append(
            QueueSummary(
                switch="twin",
                port=f"leaf_down (mean of {ports})",
                service_class=intent.service_classes[index].name,
                speed_gbps=line_bps / 1e9,
                utilisation=utilisation,
                occupancy_p50_bytes=float(row["mean_us"]) * 1e-6 * line_bps / 8,
                occupancy_p95_bytes=float(row["p99_us"]) * 1e-6 * line_bps / 8,
                mark_fraction=int(row["marked_packets"]) / max(int(row["packets"]), 1),
                dropped_packets_per_s=int(row["dropped_packets"]) / seconds / ports,
                tx_bytes_per_s=tx.get(index, 0.0),
                threshold_bytes=None,
                offered_utilisation=utilisation if demand else None,
            )
        )
    # The window's times are the twin's (simulated seconds), not wall-clock ones.
    return TelemetrySummary(
        start_s=min(starts) / 1e9,
        end_s=max(starts) / 1e9,
        queues=tuple(queues),
        flow_sizes=flow_sizes_from_run(run, intent, class_loads(queues)),
    )


def flow_sizes_from_run(
    run: Run, intent: Intent, loads: dict[str, float]
) -> dict[str, FlowSizeSample]:
    """Per class, its flows' sizes as the hosts' exporters would report them: bytes on the
    wire (1500 B per 1460 B of payload, as conntrack counts IP bytes) in the exporter's
    cumulative buckets, 1 kB x 2^k and +Inf; the class's load as the switches' summary
    gives it (``class_loads``)."""
    sizes: dict[int, list[float]] = {}
    for flow in run.flows:
        wire = int(flow["bytes"]) * NETSIM_PACKET_BYTES / MSS
        sizes.setdefault(int(flow["class"]), []).append(wire)
    out: dict[str, FlowSizeSample] = {}
    for index, measured in sorted(sizes.items()):
        name = intent.service_classes[index].name
        edges = [*EXPORTER_FLOW_BUCKETS, math.inf]
        buckets = tuple((edge, float(sum(size <= edge for size in measured))) for edge in edges)
        out[name] = FlowSizeSample(name, buckets, loads.get(name))
    return out


@dataclass(frozen=True, slots=True)
class Round:
    """One tuning pass: the summary it read, every verdict, and what applied."""

    summary: TelemetrySummary
    changes: tuple[Change, ...]
    applied: tuple[Change, ...]


def tune_in_twin(
    static: Intent,
    request: Request,
    rounds: int,
    binary: Path,
    timeout_s: float,
    *,
    demand: bool = True,
) -> tuple[Intent, list[Round], Run]:
    """Measure, tune, repeat: each round one minimum interval after the last, so the guards'
    interval never holds a change (the step limit still does). Returns the tuned intent, the
    rounds, and the static intent's run (round 1 measured it)."""
    intent, passes, last = static, [], dict[str, float]()
    interval = static.fabric.tuning.min_interval_s
    first: Run | None = None
    for number in range(1, rounds + 1):
        run = run_twin(intent, request, binary, timeout_s)
        first = first or run
        now_s = number * max(interval, WINDOW_S)
        summary = summary_from_run(run, intent, demand=demand)
        changes = propose(intent, summary, now_s=now_s, last_changed=last)
        applied = apply_changes(intent, changes)
        intent = validate_intent(applied.intent)
        last.update({c.parameter: now_s for c in applied.applied})
        passes.append(Round(summary, tuple(changes), applied.applied))
    assert first is not None  # rounds >= 1 (argparse)
    return intent, passes, first


def fct_rows(run: Run) -> list[JsonObject]:
    """Per class, then ``all``: flows, mean and p99 FCT (netsim's summary) and the
    small-flow mean (its per-flow CSV), in µs."""
    summary = result(run.raw, run.classes, ())
    named = {row["name"]: row for row in [*summary["classes"], summary["all"]]}
    small: dict[str, list[float]] = {}
    for flow in run.flows:
        if flow["fct_ns"] and int(flow["bytes"]) <= SMALL_BYTES:
            fct_us = float(flow["fct_ns"]) / 1e3
            small.setdefault(run.classes[int(flow["class"])], []).append(fct_us)
            small.setdefault("all", []).append(fct_us)
    return [
        {
            "name": name,
            "flows": named[name]["flows"],
            "mean_us": named[name]["mean_us"],
            "p99_us": named[name]["p99_us"],
            "small_mean_us": statistics.fmean(small[name]) if name in small else None,
        }
        for name in [*run.classes, "all"]
        if name in named
    ]


def workload_of(run: Run) -> JsonObject:
    """What both runs must share: the seed and the traffic description."""
    return {"seed": run.config["seed"], "traffic": run.config["traffic"]}


def _pct(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before == 0:
        return None
    return (after - before) / before * 100.0


def compare_rows(static: list[JsonObject], tuned: list[JsonObject]) -> list[JsonObject]:
    old = {row["name"]: row for row in static}
    return [
        {
            "name": row["name"],
            **{
                f"{key}_pct": _pct(old[row["name"]][key], row[key])
                for key in ("mean_us", "p99_us", "small_mean_us")
            },
        }
        for row in tuned
        if row["name"] in old
    ]


def one_seed(
    static: Intent,
    request: Request,
    rounds: int,
    binary: Path,
    timeout_s: float,
    *,
    demand: bool = True,
) -> JsonObject:
    tuned, passes, static_run = tune_in_twin(
        static, request, rounds, binary, timeout_s, demand=demand
    )
    tuned_run = run_twin(tuned, request, binary, timeout_s)
    before, after = fct_rows(static_run), fct_rows(tuned_run)
    return {
        "seed": request.seed,
        "workload": {"static": workload_of(static_run), "tuned": workload_of(tuned_run)},
        "diff": intent_diff(dump_intent(static), dump_intent(tuned)),
        "rounds": [
            {
                "applied": [_change(c) for c in p.applied],
                "held": [_change(c) for c in p.changes if not c.applies],
                # Verdicts that asked for a change apply_changes did not make (a class's one
                # lambda is the largest any of its ECN groups asks for, apply.py).
                "not_applied": [
                    _change(c)
                    for c in p.changes
                    if c.applies and c.parameter not in {a.parameter for a in p.applied}
                ],
            }
            for p in passes
        ],
        "static": before,
        "tuned": after,
        "change": compare_rows(before, after),
    }


def _change(change: Change) -> JsonObject:
    return {
        "parameter": change.parameter,
        "current": change.current,
        "proposed": change.proposed,
        "held": change.held,
        "rule": change.evidence.rule,
        "inputs": change.evidence.inputs,
        "outputs": change.evidence.outputs,
    }


def _num(value: float | None, fmt: str) -> str:
    return format(value, fmt) if value is not None else "-"


def print_seed(doc: JsonObject) -> None:
    print(f"seed {doc['seed']}")
    for number, tuning in enumerate(doc["rounds"], start=1):
        for c in tuning["applied"]:
            if c["parameter"].startswith("ecn_lambda/"):
                ecn = c["inputs"]
                print(
                    f"  round {number} evidence {c['parameter']}: utilisation "
                    f"{ecn.get('utilisation_marking_mean')}, offered "
                    f"{ecn.get('offered_utilisation_marking_mean')}, occupancy p50 "
                    f"{ecn.get('occupancy_p50_marking_mean_bytes')} B (K "
                    f"{ecn.get('standard_threshold_bytes')} B), mark fraction "
                    f"{ecn.get('mark_fraction_mean')}, target {ecn.get('utilisation_target')}"
                )
        weights = [c for c in tuning["applied"] if c["parameter"].startswith("weight/")]
        if weights:
            inputs = weights[0]["inputs"]
            line = float(inputs.get("speed_gbps") or 0) * 1e9 / 8
            sent = {
                k.removesuffix(".tx_bytes_per_s"): f"{float(v) / line:.1%}"
                for k, v in inputs.items()
                if k.endswith(".tx_bytes_per_s") and v is not None and line
            }
            print(
                f"  round {number} evidence: {inputs.get('port')}, share of line rate sent "
                f"{sent}, backlogged {inputs.get('backlogged')}"
            )
        for c in tuning["applied"]:
            print(f"  round {number}: {c['parameter']} {c['current']} -> {c['proposed']}")
        for c in tuning["held"]:
            print(f"  round {number}: {c['parameter']} held: {c['held']}")
        for c in tuning["not_applied"]:
            print(
                f"  round {number}: {c['parameter']} asked {c['current']} -> {c['proposed']}, "
                "not applied (apply.py: e.g. a class's lambda is the largest its groups ask)"
            )
    for entry in doc["diff"]:
        print(f"  intent: {entry['path']}: {entry['before']} -> {entry['after']}")
    header = f"  {'class':<12}{'flows':>6}{'mean µs':>26}{'p99 µs':>28}{'small mean µs':>24}"
    print(header)
    changes = {row["name"]: row for row in doc["change"]}
    tuned = {row["name"]: row for row in doc["tuned"]}
    for row in doc["static"]:
        t, d = tuned[row["name"]], changes[row["name"]]
        cells = [
            f"{_num(row[k], '.0f')}->{_num(t[k], '.0f')} ({_num(d[k + '_pct'], '+.1f')}%)"
            for k in ("mean_us", "p99_us", "small_mean_us")
        ]
        print(f"  {row['name']:<12}{row['flows']:>6}{cells[0]:>26}{cells[1]:>28}{cells[2]:>24}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workload", default="websearch", choices=WORKLOADS)
    parser.add_argument("--flows", type=int, default=2000)
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, choices=range(1, 11), default=3)
    parser.add_argument("--netsim", type=Path, default=NETSIM)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--switch-view",
        action="store_true",
        help="leave offered demand out of the summary, as a switch's counters do",
    )
    args = parser.parse_args(argv)
    static = static_intent()
    docs = []
    for seed in args.seeds:
        request = Request(args.workload, args.load, args.flows, seed, MIX)
        docs.append(
            one_seed(
                static,
                request,
                args.rounds,
                args.netsim,
                args.timeout_s,
                demand=not args.switch_view,
            )
        )
    if args.json:
        print(json.dumps(docs, indent=2, default=str))
        return 0
    mix = ", ".join(f"{n} {s:.0%}" for n, s in MIX)
    view = "; switch view (no offered demand)" if args.switch_view else ""
    print(
        f"{args.workload}, load {args.load}, {args.flows} flows, {args.rounds} tuning rounds; "
        f"{mix}{view}"
    )
    for doc in docs:
        print_seed(doc)
    if len(docs) > 1:
        print(f"mean relative change over seeds {args.seeds} (tuned vs static)")
        print(f"  {'class':<12}{'mean':>11}{'p99':>11}{'small mean':>11}")
        for name, cells in mean_changes(docs).items():
            print(f"  {name:<12}" + "".join(f"{_num(cells[k], '+.1f'):>10}%" for k in cells))
    return 0


def mean_changes(docs: list[JsonObject]) -> dict[str, dict[str, float | None]]:
    """Per class, each figure's relative change averaged over the seeds (mean, p99, small)."""
    out: dict[str, dict[str, float | None]] = {}
    for name in [row["name"] for row in docs[0]["change"]]:
        out[name] = {}
        for key in ("mean_us_pct", "p99_us_pct", "small_mean_us_pct"):
            values = [
                row[key]
                for doc in docs
                for row in doc["change"]
                if row["name"] == name and row[key] is not None
            ]
            out[name][key] = statistics.fmean(values) if values else None
    return out


if __name__ == "__main__":
    sys.exit(main())
