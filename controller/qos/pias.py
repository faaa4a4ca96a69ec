"""PIAS demotion thresholds from a flow-size distribution and a load.

PIAS (NSDI 2015, "Design") tags each packet by how many bytes its flow
has sent: a flow starts in the highest-priority queue and is demoted one queue each time it
passes a threshold alpha_1 < ... < alpha_{K-1}, so short flows finish before long ones start
to compete, approximating shortest-job-first without knowing flow sizes. The thresholds come
from the whole fabric's traffic, "by solving the FCT minimization problem" over the
flow-size CDF and the load (slides, "Design Challenge").

The model: the M/M/1 chain of PIAS, ToN 2017, with units made consistent.

* The link serves strict-priority queues 1..K at C bytes/s under byte load rho.
* theta_l = F(alpha_l) - F(alpha_{l-1}) is the fraction of flows that finish in queue l; a
  flow that finishes in queue l passes through queues 1..l.
* Queue j carries the bytes every flow sends between alpha_{j-1} and alpha_j, so its byte
  arrival rate is lambda_j = (flow arrival rate) x b_j with b_j = E[min(S, alpha_j)] -
  E[min(S, alpha_{j-1})] and E[min(S, x)] = integral_0^x (1 - F(t)) dt, taken exactly from
  the CDF. Its share of the load is rho_j = rho x b_j / E[S]; sigma_m = sum_{j<=m} rho_j.
* Queue m is an M/M/1 stage that shares the link with everything of equal or higher
  priority: a flow's part there takes (its bytes in band m) / (C (1 - sigma_m)), the
  M/M/1 sojourn 1 / (mu - sum_{j<=m} lambda_j) scaled by the size of the job.
* Mean FCT T = sum_l theta_l sum_{m<=l} t_{m,l}; summing over flows, the bytes of band m
  are sent by every flow that reaches it, so T = sum_m b_m / (C (1 - sigma_m)).

The anchor's formula charges every stage the same 1 / (mu - sum lambda) whatever a flow
sends there. Minimised literally, that parks the spare thresholds at the largest flow sizes
(no flow reaches them, so they cost nothing): the queues go unused. Weighting each stage by
the bytes sent there fixes the units and keeps every queue in use.

Solving it: with u_m = 1 - sigma_m, T = E[S] / (C rho) x (sum_m u_{m-1} / u_m - K), with
u_0 = 1 and u_K = 1 - rho fixed. The product of the K ratios u_{m-1} / u_m is fixed at
1 / (1 - rho), so by the AM-GM inequality their sum is smallest when they are all equal:
sigma_m = 1 - (1 - rho)^(m / K), and then T_min = K ((1 - rho)^(-1/K) - 1) x E[S] / (C rho).
Each threshold is the size at which the truncated mean reaches sigma_m / rho of E[S],
found by bisection (the truncated mean is continuous and strictly increasing below the
largest flow size). Closed form, deterministic, microseconds, no randomness.
"""

from __future__ import annotations

import bisect
import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from controller.qos.checks import (
    invalid,
    require_fraction,
    require_int_at_least,
)

WORKLOADS = ("websearch", "datamining", "cache", "hadoop")
WORKLOAD_DIR = Path(__file__).with_name("workloads")
# The shipped CDFs count packets of 1460 B of payload (workloads/README.md).
WORKLOAD_PACKET_BYTES = 1460
MAX_QUEUES = 8  # SONiC ports have 8 queues
BISECTION_STEPS = 100  # halves a < 1e12-byte bracket far below one byte


@dataclass(frozen=True)
class FlowSizeCdf:
    """An empirical flow-size CDF: (bytes, cumulative probability) points, linear between.

    Sizes and probabilities never decrease; the last probability is 1. A repeated size is a
    step (a probability mass at that size), as in the ns-2 CDF files.
    """

    points: tuple[tuple[float, float], ...]
    _sizes: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _probs: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _area: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_points(self.points)
        sizes = tuple(size for size, _ in self.points)
        probs = tuple(prob for _, prob in self.points)
        # _area[i] = E[min(S, sizes[i])] = integral_0^{sizes[i]} (1 - F); F = 0 below the
        # first point, and linear F makes each segment a trapezoid.
        area = [sizes[0]]
        for i in range(1, len(sizes)):
            width = sizes[i] - sizes[i - 1]
            area.append(area[-1] + width * (1.0 - (probs[i - 1] + probs[i]) / 2.0))
        object.__setattr__(self, "_sizes", sizes)
        object.__setattr__(self, "_probs", probs)
        object.__setattr__(self, "_area", tuple(area))

    @property
    def max_bytes(self) -> float:
        return self._sizes[-1]

    @property
    def min_bytes(self) -> float:
        return self._sizes[0]

    def cdf(self, size: float) -> float:
        """F(size) = P(S <= size); at a step the upper value counts."""
        i = bisect.bisect_right(self._sizes, size)
        if i == 0:
            return 0.0
        if i == len(self._sizes):
            return 1.0
        x0, x1 = self._sizes[i - 1], self._sizes[i]
        p0, p1 = self._probs[i - 1], self._probs[i]
        return p0 + (p1 - p0) * (size - x0) / (x1 - x0)

    def truncated_mean(self, size: float) -> float:
        """E[min(S, size)]: the bytes an average flow sends before reaching ``size``."""
        if size <= 0:
            return 0.0
        i = bisect.bisect_right(self._sizes, size)
        if i == 0:
            return size
        if i == len(self._sizes):
            return self._area[-1]
        x0 = self._sizes[i - 1]
        return self._area[i - 1] + (size - x0) * (1.0 - (self._probs[i - 1] + self.cdf(size)) / 2)

    def mean_bytes(self) -> float:
        """E[S]."""
        return self._area[-1]


def _check_points(points: tuple[tuple[float, float], ...]) -> None:
    if len(points) < 2:
        raise invalid("points", "a CDF needs at least two points")
    previous = (0.0, 0.0)
    for index, (size, prob) in enumerate(points):
        path = f"points[{index}]"
        if not (math.isfinite(size) and math.isfinite(prob)) or size <= 0 or not 0 <= prob <= 1:
            raise invalid(path, f"need size > 0 and 0 <= cdf <= 1, got ({size}, {prob})")
        if size < previous[0] or prob < previous[1]:
            raise invalid(path, "sizes and cumulative probabilities must not decrease")
        previous = (size, prob)
    if points[-1][1] != 1.0:
        raise invalid(f"points[{len(points) - 1}]", "the last cumulative probability must be 1")


def load_workload(name: str) -> FlowSizeCdf:
    """One of the shipped CDFs (websearch, datamining, cache, hadoop), sizes in bytes."""
    if name not in WORKLOADS:
        raise invalid("workload", f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    with (WORKLOAD_DIR / f"{name}.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return FlowSizeCdf(
        points=tuple(
            (float(row["size_packets"]) * WORKLOAD_PACKET_BYTES, float(row["cdf"])) for row in rows
        )
    )


def optimal_load_split(load: float, n_queues: int) -> list[float]:
    """sigma_1..sigma_{K-1}: the load carried by queues 1..m at the optimum, 1 - (1-rho)^(m/K)."""
    require_fraction("load", load)
    require_int_at_least("n_queues", n_queues, 1)
    return [1.0 - (1.0 - load) ** (m / n_queues) for m in range(1, n_queues)]


def size_at_truncated_mean(cdf: FlowSizeCdf, target_bytes: float) -> float:
    """The x with E[min(S, x)] = target_bytes, for 0 < target_bytes < E[S] (bisection)."""
    if not 0 < target_bytes < cdf.mean_bytes():
        raise invalid("target_bytes", f"must lie in (0, E[S] = {cdf.mean_bytes():.0f})")
    low, high = 0.0, cdf.max_bytes
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2.0
        if cdf.truncated_mean(middle) < target_bytes:
            low = middle
        else:
            high = middle
    return high


def demotion_thresholds(cdf: FlowSizeCdf, load: float, n_queues: int) -> list[int]:
    """PIAS demotion thresholds in bytes: n_queues - 1 of them, strictly increasing.

    A flow is in queue 1 (highest priority) until it has sent thresholds[0] bytes, in queue
    2 until thresholds[1], and so on; the last queue takes the rest. ``load`` is the
    fabric's average load in (0, 1); ``n_queues`` is 1..8. Rounded to whole bytes (nearest),
    nudged up by a byte where rounding would make two equal.
    """
    require_fraction("load", load)
    require_int_at_least("n_queues", n_queues, 1)
    if n_queues > MAX_QUEUES:
        raise invalid("n_queues", f"at most {MAX_QUEUES} priority queues, got {n_queues}")
    mean = cdf.mean_bytes()
    thresholds: list[int] = []
    for sigma in optimal_load_split(load, n_queues):
        value = max(round(size_at_truncated_mean(cdf, sigma / load * mean)), 1)
        if thresholds and value <= thresholds[-1]:
            value = thresholds[-1] + 1
        thresholds.append(value)
    return thresholds
