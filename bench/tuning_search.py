"""What one tuning pass with ``fabric.tuning.search: twin`` costs: the twin on the current
intent, its fit check, then the coordinate search, as ``TuningService`` runs it
(``controller.tuning.counterfactual.search_in_twin`` over ``netsim_search``).

One command: ``nice -n 10 uv run --frozen python -m bench.tuning_search`` (``--flows`` per
run, 1000; ``--load``, 0.7; ``--seeds`` each candidate runs on and ``--parallel`` runs at once,
the settings' ``twin.search_seeds`` and ``twin.parallel`` by default; needs ``cargo build -p
netsim``, the binary the product runs).

The intent is ``bench.tuning_value``'s (the example with DWRR weight ranges and each loaded
class's small-flow objective); the summary is one the twin reproduces (``fabric_like_the_twin``:
each intent port's queues as the twin's own figures for its kind, on web search flows of
``bench.tuning_value.MIX`` at the load), so the pass goes through to the search. Printed: the
runs, the wall time and the CPU netsim used (this process's children), the moves and their
predicted change. Figures: docs/tuning.md, "The search in the tuning pass".
"""

from __future__ import annotations

import argparse
import logging
import math
import resource
import threading
import time
from typing import Any

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import validate_intent
from controller.qos.pias import load_workload
from controller.services.tuning import fan_out, netsim_search, search_seeds
from controller.settings import TwinSettings
from controller.tuning.counterfactual import Simulate, Timing, TwinReading, search_in_twin
from controller.tuning.search import Traffic, traffic_from_summary
from controller.tuning.summary import FlowSizeSample, QueueSummary, TelemetrySummary
from controller.twin.translate import port_kinds

# The host exporter's flow-size buckets (sluice_host_exporter.py FLOW_BUCKETS).
EDGES = tuple(1000.0 * 2**k for k in range(21))


def flow_sizes(workload: str, loads: dict[str, float]) -> dict[str, FlowSizeSample]:
    """The hosts' finished flows as ``workload``'s CDF at the exporter's edges (100 a class)
    with each class's load."""
    cdf = load_workload(workload)
    sizes = (*((edge, 100.0 * cdf.cdf(edge)) for edge in EDGES), (math.inf, 100.0))
    return {name: FlowSizeSample(name, sizes, load=load) for name, load in loads.items()}


def fabric_like_the_twin(
    intent: Intent, simulate: Simulate, flows: dict[str, FlowSizeSample]
) -> TelemetrySummary:
    """What a fabric the twin reproduces would report: every intent port's queues of the
    loaded classes as the twin's figures for its kind, on the traffic ``flows`` describe."""
    traffic = traffic_from_summary(TelemetrySummary(0.0, 600.0, flow_sizes=flows))
    by_key = {(q.service_class, q.kind): q for q in simulate(intent, traffic).queues}
    speeds = {(s.name, p.name): p.speed_gbps for s in intent.switches for p in s.ports}
    queues = []
    for (switch, port), kind in port_kinds(intent).items():
        for name in flows:
            twin = by_key.get((name, kind))
            if twin is None:
                continue
            gbps = speeds[switch, port]
            queues.append(
                QueueSummary(
                    switch,
                    port,
                    name,
                    gbps,
                    utilisation=twin.utilisation,
                    occupancy_p50_bytes=twin.occupancy_p50_bytes,
                    occupancy_p95_bytes=twin.occupancy_p95_bytes,
                    mark_fraction=twin.mark_fraction,
                    tx_bytes_per_s=twin.class_utilisation * gbps * 1e9 / 8,
                )
            )
    return TelemetrySummary(0.0, 600.0, queues=tuple(queues), flow_sizes=flows)


class Counted:
    """A twin whose runs are counted (from the search's threads too)."""

    def __init__(self, simulate: Simulate) -> None:
        self.simulate, self.runs = simulate, 0
        self._lock = threading.Lock()

    def __call__(self, intent: Intent, traffic: Traffic) -> TwinReading:
        with self._lock:
            self.runs += 1
        return self.simulate(intent, traffic)


def main(argv: list[str] | None = None) -> int:
    from bench.tuning_value import MIX, bench_intent  # the bench's intent and shares

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--seeds", type=int, default=TwinSettings().search_seeds)
    parser.add_argument("--parallel", type=int, default=TwinSettings().parallel)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)8.0f ms %(message)s")
    data: dict[str, Any] = dump_intent(bench_intent())
    data["fabric"]["tuning"].update({"search": "twin", "search_flows": args.flows})
    intent = validate_intent(parse_intent(data))
    settings = TwinSettings()
    twin = Counted(netsim_search(settings.netsim, settings.timeout_s))
    flows = flow_sizes("websearch", {name: args.load * share for name, share in MIX})
    summary = fabric_like_the_twin(intent, twin, flows)
    twin.runs = 0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    started = time.monotonic()
    found = search_in_twin(
        intent,
        summary,
        twin,
        kinds=port_kinds(intent),
        timing=Timing(1e9, {}, 0.0),
        seeds=search_seeds(args.seeds),
        run_many=fan_out(args.parallel),
    )
    wall = time.monotonic() - started
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - cpu
    candidates = twin.runs / args.seeds
    print(
        f"one pass: {candidates:g} candidates on {args.seeds} seeds ({args.parallel} at once): "
        f"{twin.runs} twin runs of {args.flows} flows, {wall:.1f} s wall "
        f"({candidates / wall:.3f} candidates/s), {cpu:.1f} s of netsim CPU "
        f"({cpu / max(twin.runs, 1):.2f} s a run)"
    )
    print(f"fit: {found.fit.reason() if found.fit else '-'}")
    if found.refused:
        print(f"no proposal: {found.refused}")
    for change in found.changes:
        print(f"proposes {change.parameter}: {change.current} -> {change.proposed}")
    outputs = found.changes[0].evidence.outputs if found.changes else {}
    predicted = outputs.get("predicted_p99_small_us")
    for name, before, after, pct in predicted if isinstance(predicted, tuple) else ():
        print(f"  predicted small-flow p99 {name}: {before} -> {after} us ({pct:+} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
