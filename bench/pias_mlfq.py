"""PIAS's optimisation with an M/G/1 model of the multi-level feedback queue in place of the
paper's M/M/1 stages: the model's mean FCT, and the thresholds that minimise it.

PIAS (NSDI'15 §4, ToN'17 §IV) picks the demotion thresholds that minimise the mean FCT of
flows arriving as a Poisson process at load rho with sizes from the workload's CDF F, on one
link whose K strict-priority queues hold a flow in queue i while the bytes it has sent lie in
(alpha_{i-1}, alpha_i]; flows in one queue share it (TCP's fair share). The paper models
each queue as an M/M/1 stage (controller/qos/pias_chain.py). This model keeps the general
size distribution (M/G/1) and charges a flow of size x in level i

    T(x) = lambda E[min(S, a)^2] / (2 (1 - rho_a) (1 - rho_b)) + x / (1 - rho_b),

with a = alpha_{i-1}, b = alpha_i, rho_y = lambda E[min(S, y)] the load of the flows'
first y bytes and lambda the flow arrival rate: the mean wait for the levels above to empty
(the M/G/1 backlog of their bytes, stretched by what keeps arriving), then the flow's bytes
at the share of the link its level leaves (processor sharing). It is exact for the top level
(M/G/1-PS of the truncated sizes) and for one level (x / (1 - rho)); below the top level it
is an approximation. Flows enter a lower level in batches (after each busy period of the
levels above), which makes that level a batch processor-sharing queue with no closed form
(Kleinrock, Queueing Systems vol. II, 1976, §4.7). Against the fluid simulation of
bench/pias_fluid.py, which is exact for this system, it gives each level's mean FCT within
10 %, most within 5 %, in the cases checked (tests/unit/test_bench_pias_fluid.py;
docs/reproductions.md). Within the last level it
gets the shape wrong: too slow just below a threshold and too fast for the largest flows
(web search, load 0.8, published thresholds: 0.57x to 1.26x of the simulation). So the
bench uses it to choose thresholds and the fluid simulation to judge them.

The mean over flows, sum_i of E[T(S); S in level i], has one term per level that depends on
that level's two edges only, so dynamic programming over a grid of sizes (log-spaced, plus
the CDF's own points) finds the grid's optimum exactly. Sizes in bytes, time in byte-times
of the link (C = 1).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

from controller.qos.pias import FlowSizeCdf

GRID_POINTS = 200


def truncated_second_moment(cdf: FlowSizeCdf, size: float) -> float:
    """E[min(S, size)^2] = integral_0^size 2t (1 - F(t)) dt, exact for the linear pieces."""
    if size <= cdf.min_bytes:
        return size * size
    total = cdf.min_bytes**2
    for (x0, p0), (x1, p1) in itertools.pairwise(cdf.points):
        if x1 == x0:
            continue  # a step: mass at one size, nothing to integrate
        x = min(size, x1)
        slope = (p1 - p0) / (x1 - x0)
        # 1 - F(t) = (1 - p0 + slope x0) - slope t on [x0, x1]
        total += (1 - p0 + slope * x0) * (x * x - x0 * x0) - 2 * slope / 3 * (x**3 - x0**3)
        if size <= x1:
            break
    return total


def _edge(cdf: FlowSizeCdf, size: float) -> tuple[float, float, float, float]:
    """At a level edge: (F, E[S; S <= size], E[min(S, size)], E[min(S, size)^2]); size = inf
    means every flow (the last level's lower moments are never needed)."""
    if math.isinf(size):
        return 1.0, cdf.mean_bytes(), cdf.mean_bytes(), math.nan
    if size <= 0:
        return 0.0, 0.0, 0.0, 0.0
    upto = cdf.truncated_mean(size)
    below = cdf.cdf(size)
    # E[S; S <= y] = y F(y) - integral_0^y F = y F(y) - (y - E[min(S, y)])
    return below, size * below - (size - upto), upto, truncated_second_moment(cdf, size)


def _level_cost(
    rate: float, low: tuple[float, float, float, float], high: tuple[float, float, float, float]
) -> float:
    """E[T(S); low < S <= high], this level's share of the mean FCT (byte-times), from its
    edges; ``rate`` is the flow arrival rate per byte-time."""
    f_low, mass_low, upto_low, square_low = low
    f_high, mass_high, upto_high, _ = high
    rho_low, rho_high = rate * upto_low, rate * upto_high
    if rho_high >= 1.0:
        return math.inf
    wait = rate * square_low / (2 * (1 - rho_low) * (1 - rho_high))
    return wait * (f_high - f_low) + (mass_high - mass_low) / (1 - rho_high)


def mlfq_mean_fct(cdf: FlowSizeCdf, load: float, thresholds: Sequence[float]) -> float:
    """The model's mean FCT (byte-times of the link) of the MLFQ with ``thresholds`` (bytes,
    rising; none is processor sharing, E[S] / (1 - load), exact)."""
    rate = load / cdf.mean_bytes()
    edges = [_edge(cdf, size) for size in (0.0, *thresholds, math.inf)]
    return sum(_level_cost(rate, lo, hi) for lo, hi in itertools.pairwise(edges))


def mlfq_fct_of_size(
    cdf: FlowSizeCdf, load: float, thresholds: Sequence[float], size: float
) -> float:
    """T(x): the model's mean FCT (byte-times) of a flow of ``size`` bytes."""
    rate = load / cdf.mean_bytes()
    edges = [0.0, *thresholds, math.inf]
    level = bisect.bisect_left(edges, size)  # edges[level - 1] < size <= edges[level]
    low, high = _edge(cdf, edges[level - 1]), _edge(cdf, edges[level])
    rho_low, rho_high = rate * low[2], rate * high[2]
    wait = rate * low[3] / (2 * (1 - rho_low) * (1 - rho_high))
    return wait + size / (1 - rho_high)


def mlfq_optimum(cdf: FlowSizeCdf, load: float, n_queues: int) -> list[int]:
    """The n_queues - 1 thresholds (bytes) of least model mean FCT over the grid."""
    low, high = cdf.min_bytes, cdf.max_bytes
    ratio = high / low
    grid = sorted(
        {low * ratio ** (i / (GRID_POINTS - 1)) for i in range(GRID_POINTS - 1)}
        | {size for size, _ in cdf.points if size < high}
    )
    sizes = [0.0, *grid, math.inf]
    edges = [_edge(cdf, size) for size in sizes]
    rate = load / cdf.mean_bytes()
    last = len(edges) - 1
    # best[i]: least cost of the levels so far with the latest threshold at sizes[i]
    best = {i: _level_cost(rate, edges[0], edges[i]) for i in range(1, last)}
    back: list[dict[int, int]] = []
    for _ in range(n_queues - 2):
        step, choice = {}, {}
        for i in range(1, last):
            candidates = [
                (best[j] + _level_cost(rate, edges[j], edges[i]), j) for j in best if j < i
            ]
            if candidates:
                step[i], choice[i] = min(candidates)
        back.append(choice)
        best = step
    _, index = min((cost + _level_cost(rate, edges[j], edges[last]), j) for j, cost in best.items())
    picked = [index]
    for choice in reversed(back):
        picked.append(choice[picked[-1]])
    return [round(sizes[i]) for i in reversed(picked)]
