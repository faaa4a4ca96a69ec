"""PIAS demotion thresholds from the paper's own formulation: the M/M/1 chain over theta.

PIAS (NSDI 2015 §4.2 "Determining demotion thresholds"; ToN 2017 §IV-B) models each of the K
strict-priority queues as an M/M/1 stage and picks thresholds alpha_1 < ... < alpha_{K-1} that
minimise the mean flow completion time:

* theta_l = F(alpha_l) - F(alpha_{l-1}) is the fraction of flows that finish in queue l
  (alpha_0 = 0, alpha_K = infinity), F the flow-size CDF;
* lambda_j is the packet arrival rate queue j serves: every flow sends its bytes between
  alpha_{j-1} and alpha_j there, so lambda_j = (flow arrival rate) x (E[min(S, alpha_j)] -
  E[min(S, alpha_{j-1})]) / (packet size), E[min(S, x)] taken exactly from the CDF;
* under strict priority queue m is served at what the queues above leave, mu_m = mu x
  prod_{j<m} (1 - lambda_j / mu_j) = mu - sum_{j<m} lambda_j, so its M/M/1 sojourn is
  T_m = 1 / (mu_m - lambda_m) = 1 / (mu (1 - sigma_m)), sigma_m = sum_{j<=m} lambda_j / mu;
* a flow that finishes in queue l passed through queues 1..l:
  T = sum_l theta_l sum_{m<=l} T_m.

The objective is a chain: regrouped by stage, T = sum_m (1 - F(alpha_{m-1})) T_m(alpha_m), and
T_m depends on alpha_m alone (sigma_m = rho E[min(S, alpha_m)] / E[S]). So dynamic programming
over a grid of candidate sizes finds the grid's exact minimum in O(K G^2), deterministic, no
random search; a multiplicative pattern search then refines each threshold off the grid.

This is the formulation the public re-implementations of the authors' search share (the
genetic-algorithm fitness and the gradient-descent threshold script); `controller.qos.pias`
keeps sluice's byte-weighted variant, the default. docs/algorithms.md §6 compares both with
the thresholds the PIAS authors published and explains where and why they differ.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from controller.qos.checks import invalid, require_fraction, require_int_at_least
from controller.qos.pias import MAX_QUEUES, FlowSizeCdf

GRID_POINTS = 320  # log-spaced candidate sizes between the smallest and largest flow
REFINE_FACTOR = 1.25  # first multiplicative step of the off-grid refinement
REFINE_STOP = 1.0001  # stop once steps are below 0.01 %


def stage_sojourn(cdf: FlowSizeCdf, load: float, edge: float) -> float:
    """T_m for a queue whose upper threshold is ``edge``: 1 / (1 - sigma_m), in units of one
    packet's service time (mu = 1); infinite when the queues up to ``edge`` are overloaded."""
    sigma = load * cdf.truncated_mean(edge) / cdf.mean_bytes()
    return math.inf if sigma >= 1.0 else 1.0 / (1.0 - sigma)


def chain_fct(cdf: FlowSizeCdf, load: float, thresholds: Sequence[float]) -> float:
    """The paper's mean FCT, T = sum_l theta_l sum_{m<=l} T_m, for thresholds in bytes.

    Written as the double sum of §4.2 (not the regrouped chain) so the tests check one
    against the other. In packet service times; one queue gives the M/M/1 value 1 / (1 - rho).
    """
    require_fraction("load", load)
    for index, threshold in enumerate(thresholds):
        if not threshold > (thresholds[index - 1] if index else 0):
            raise invalid(f"thresholds[{index}]", "thresholds must be > 0 and strictly increasing")
    edges = [0.0, *thresholds, math.inf]
    total, passed = 0.0, 0.0
    for low, high in itertools.pairwise(edges):
        theta = (1.0 if math.isinf(high) else cdf.cdf(high)) - cdf.cdf(low)
        passed += stage_sojourn(cdf, load, high)
        total += theta * passed
    return total


def _grid(cdf: FlowSizeCdf) -> list[float]:
    low, high = cdf.min_bytes, cdf.max_bytes
    ratio = high / low
    points = {low * ratio ** (i / (GRID_POINTS - 1)) for i in range(GRID_POINTS - 1)}
    points |= {size for size, _ in cdf.points if size < high}  # the CDF's own breakpoints
    return sorted(points)


def _grid_optimum(cdf: FlowSizeCdf, load: float, n_thresholds: int) -> list[float]:
    """The grid's exact minimiser of the regrouped chain, by dynamic programming."""
    grid = _grid(cdf)
    if len(grid) < n_thresholds:
        raise invalid("n_queues", f"the flow sizes leave room for only {len(grid)} thresholds")
    sojourn = [stage_sojourn(cdf, load, size) for size in grid]
    reach = [1.0 - cdf.cdf(size) for size in grid]  # flows that go past each size
    # best[i]: least cost of stages 1..m with alpha_m = grid[i]; back[m][i]: alpha_{m-1}.
    best = sojourn[:]  # stage 1: every flow reaches it
    back: list[list[int]] = []
    for _ in range(1, n_thresholds):
        nxt = [math.inf] * len(grid)
        choice = [-1] * len(grid)
        for i in range(len(grid)):
            # alpha_{m-1} = grid[j] below alpha_m = grid[i]; reach[j] flows pay stage m
            candidates = (
                (best[j] + reach[j] * sojourn[i], j) for j in range(i) if best[j] < math.inf
            )
            running, arg = min(candidates, default=(math.inf, -1))
            nxt[i], choice[i] = running, arg
        back.append(choice)
        best = nxt
    last_sojourn = stage_sojourn(cdf, load, math.inf)
    total, index = min(
        ((best[i] + reach[i] * last_sojourn, i) for i in range(len(grid))), default=(math.inf, -1)
    )
    if not math.isfinite(total):
        raise invalid("load", f"load {load} overloads every threshold choice")
    picked = [index]
    for choice in reversed(back):
        picked.append(choice[picked[-1]])
    return [grid[i] for i in reversed(picked)]


def _refine(cdf: FlowSizeCdf, load: float, thresholds: list[float]) -> list[float]:
    """Multiplicative pattern search: move one threshold at a time while T falls."""
    current = thresholds[:]
    value = chain_fct(cdf, load, current)
    step = REFINE_FACTOR
    while step > REFINE_STOP:
        moved = False
        for index in range(len(current)):
            for factor in (step, 1.0 / step):
                trial = current[:]
                trial[index] *= factor
                low = trial[index - 1] if index else 0.0
                high = trial[index + 1] if index + 1 < len(trial) else cdf.max_bytes
                if not low < trial[index] < high:
                    continue
                candidate = chain_fct(cdf, load, trial)
                if candidate < value:
                    current, value, moved = trial, candidate, True
        if not moved:
            step = math.sqrt(step)
    return current


def chain_thresholds(cdf: FlowSizeCdf, load: float, n_queues: int) -> list[int]:
    """Demotion thresholds in bytes (n_queues - 1, strictly increasing) minimising the
    paper's M/M/1-chain mean FCT; deterministic (grid DP, then refinement)."""
    require_fraction("load", load)
    require_int_at_least("n_queues", n_queues, 1)
    if n_queues > MAX_QUEUES:
        raise invalid("n_queues", f"at most {MAX_QUEUES} priority queues, got {n_queues}")
    if n_queues == 1:
        return []
    refined = _refine(cdf, load, _grid_optimum(cdf, load, n_queues - 1))
    thresholds: list[int] = []
    for value in refined:
        rounded = max(round(value), 1)
        if thresholds and rounded <= thresholds[-1]:
            rounded = thresholds[-1] + 1
        thresholds.append(rounded)
    return thresholds
