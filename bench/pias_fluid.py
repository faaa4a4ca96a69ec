"""PIAS's multi-level feedback queue against fair sharing on one fluid link (M/G/1).

What scheduling alone does to each size of flow, with no TCP, ECN, buffers or timeouts: a
link of capacity C, flows arriving as a Poisson process at load rho with sizes from a
workload's CDF, served either

- by processor sharing (every active flow gets an equal share: what DCTCP's fair sharing
  approximates), or
- as PIAS's multi-level feedback queue (NSDI'15 §3): a flow is in level i while the bytes it
  has been served lie in [alpha_i, alpha_{i+1}); only the lowest non-empty level is served,
  its flows sharing equally (flows in one strict-priority queue under TCP share it).

The question it answers: how much slower are the largest flows under MLFQ than under fair
sharing when nothing but the scheduling differs (docs/reproductions.md, "PIAS against
DCTCP", the large flows). Sizes are drawn as netsim draws them (linear interpolation between
the CDF's points, rounded up to whole packets of 1460 B); the first tenth of the flows is
left out as warm-up. Deterministic for a seed.

Reproduce: ``uv run python -m bench.pias_fluid`` (``--loads``, ``--flows``, ``--seeds``).
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.netsim_repro import PIAS_THRESHOLDS_2015, pias_threshold_sets
from bench.pias_mlfq import mlfq_mean_fct
from controller.qos.pias import WORKLOAD_PACKET_BYTES, FlowSizeCdf, load_workload

TEN_G_BYTES = 10e9 / 8
# The size buckets of netsim's report (PIAS NSDI'15 §6.1): small up to 100 KB, medium up
# to 10 MB, large above.
BUCKETS = (("small", 100_000.0), ("medium", 10_000_000.0), ("large", math.inf))
WARM_UP = 0.1
EPSILON_BYTES = 1e-6  # served bytes this close to a threshold or a flow's end count as there


@dataclass(frozen=True)
class Flow:
    """A flow: when it arrives (s) and its size (bytes)."""

    arrival_s: float
    size_bytes: float


def fluid_fcts(
    flows: Sequence[Flow], thresholds: Sequence[float], capacity_bytes_per_s: float
) -> list[float]:
    """Each flow's completion time (s) on one fluid link under MLFQ with ``thresholds``
    (bytes, rising); no thresholds is processor sharing. ``flows`` in arrival order."""
    edges = [*thresholds, math.inf]
    served = [0.0] * len(flows)
    fct = [math.nan] * len(flows)
    active: list[int] = []
    now, arrived = 0.0, 0
    while arrived < len(flows) or active:
        next_arrival = flows[arrived].arrival_s if arrived < len(flows) else math.inf
        if not active:
            now = next_arrival
            active.append(arrived)
            arrived += 1
            continue
        level = {i: bisect.bisect_right(edges, served[i]) for i in active}
        lowest = min(level.values())
        sharing = [i for i in active if level[i] == lowest]
        rate = capacity_bytes_per_s / len(sharing)
        step = min(min(flows[i].size_bytes, edges[lowest]) - served[i] for i in sharing) / rate
        arrival_first = next_arrival - now <= step
        dt = next_arrival - now if arrival_first else step
        now += dt
        for i in sharing:
            served[i] += rate * dt
            # Land exactly on a threshold or the end so rounding cannot leave a sliver.
            for edge in (edges[lowest], flows[i].size_bytes):
                if abs(served[i] - edge) < EPSILON_BYTES:
                    served[i] = edge
        for i in [i for i in sharing if served[i] >= flows[i].size_bytes]:
            fct[i] = now - flows[i].arrival_s
            active.remove(i)
        if arrival_first:
            active.append(arrived)
            arrived += 1
    return fct


def draw_size(cdf: FlowSizeCdf, u: float) -> float:
    """The size at probability ``u``: linear between the CDF's points, rounded up to whole
    packets of 1460 B (netsim's and the ns-2 scripts' convention)."""
    for (s0, p0), (s1, p1) in zip(cdf.points, cdf.points[1:], strict=False):
        if u <= p1:
            size = s1 if p1 == p0 else s0 + (s1 - s0) * (u - p0) / (p1 - p0)
            return float(math.ceil(size / WORKLOAD_PACKET_BYTES) * WORKLOAD_PACKET_BYTES)
    return cdf.max_bytes


def poisson_flows(
    cdf: FlowSizeCdf, load: float, n: int, seed: int, capacity_bytes_per_s: float
) -> list[Flow]:
    rng = random.Random(seed)
    sizes = [draw_size(cdf, rng.random()) for _ in range(n)]
    rate = load * capacity_bytes_per_s / cdf.mean_bytes()
    now, flows = 0.0, []
    for size in sizes:
        now += rng.expovariate(rate)
        flows.append(Flow(now, size))
    return flows


def bucket_means(flows: Sequence[Flow], fcts: Sequence[float]) -> dict[str, float]:
    """Mean FCT (us) per size bucket and over all flows, warm-up left out."""
    skip = int(len(flows) * WARM_UP)
    kept = list(zip(flows, fcts, strict=True))[skip:]
    means = {"all": statistics.fmean(f for _, f in kept) * 1e6}
    lower = 0.0
    for name, upper in BUCKETS:
        inside = [f for flow, f in kept if lower < flow.size_bytes <= upper]
        if inside:
            means[name] = statistics.fmean(inside) * 1e6
        lower = upper
    return means


def threshold_sets(workload: str, load: float) -> dict[str, list[int]]:
    """The schemes compared: fair sharing, PIAS with the sets netsim compares, and two more
    (the scripts' first, load-independent set; PIAS-Software's shipped 2 queues at 100 KiB)."""
    return {
        "fair sharing (DCTCP)": [],
        **pias_threshold_sets(workload, load),
        "2015 scripts": [t * WORKLOAD_PACKET_BYTES for t in PIAS_THRESHOLDS_2015[workload]],
        "2 queues at 100 KiB": [102_400],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="websearch", choices=["websearch", "datamining"])
    parser.add_argument("--loads", type=float, nargs="+", default=[0.6, 0.8])
    parser.add_argument("--flows", type=int, default=60_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    cdf = load_workload(args.workload)
    print(
        f"{args.workload}, one 10 Gb/s fluid link, {args.flows} flows x seeds {args.seeds};"
        " FCT in us; model all: the M/G/1 model's mean over all flows (bench/pias_mlfq.py)"
    )
    print(f"{'load':>5} {'scheme':<24}{'small':>9}{'medium':>10}{'large':>10}{'all':>9}"
          f"{'large vs fair':>15}{'model all':>11}")  # fmt: skip
    for load in args.loads:
        runs = [poisson_flows(cdf, load, args.flows, s, TEN_G_BYTES) for s in args.seeds]
        fair_large = math.nan
        for scheme, thresholds in threshold_sets(args.workload, load).items():
            per_seed = [bucket_means(f, fluid_fcts(f, thresholds, TEN_G_BYTES)) for f in runs]
            mean = {k: statistics.fmean(m[k] for m in per_seed) for k in per_seed[0]}
            if not thresholds:
                fair_large = mean["large"]
            model_all = mlfq_mean_fct(cdf, load, thresholds) / TEN_G_BYTES * 1e6
            print(
                f"{load:>5.1f} {scheme:<24}{mean['small']:>9.0f}{mean['medium']:>10.0f}"
                f"{mean['large']:>10.0f}{mean['all']:>9.0f}"
                f"{(mean['large'] / fair_large - 1) * 100:>14.1f}%"
                f"{model_all:>11.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
