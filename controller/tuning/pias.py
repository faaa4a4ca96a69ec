"""PIAS: demotion thresholds re-derived when the measured flow sizes drift from the CDF in use.

PIAS (Bai et al., NSDI'15) derives one set of thresholds for the whole fabric from the
flow-size distribution and the load, and relies on ECN to absorb a moderate mismatch, so the
thresholds need not change often; ``controller.qos.pias.demotion_thresholds`` derives them.
The intent names a shipped workload (and, once tuned, the thresholds in force,
``pias.thresholds_bytes``); hosts report the sizes of the flows that finished
(docs/tuning.md, "How hosts report") as a cumulative histogram.

* Distance: the Kolmogorov-Smirnov statistic D = max |F_measured(x) - F_workload(x)|, taken at
  the histogram's bucket edges (the only sizes where the measured CDF is known, so D is a
  lower bound of the exact statistic; with edges a factor 2 apart it is close).
* Drift: D above ``ks_threshold`` (default 0.1) with at least ``min_flows`` finished flows.
  For n flows the two-sided KS test rejects "same distribution" at 5 % when D > 1.36 /
  sqrt(n) (Massey, JASA 1951, Table 1), 0.043 at n = 1000: the default 0.1 asks for a drift
  that matters, not only one that is detectable.
* New thresholds: ``demotion_thresholds`` on the measured CDF (flows above the largest finite
  bucket are counted at that bucket's edge) and the measured load (the intent's when none).
  The band (D) is the hysteresis; the minimum interval applies; a maximum step does not (a
  partial step toward another distribution's thresholds is optimal for neither). Drift is
  judged against the named workload, so once the measured thresholds are in force the same
  sizes propose the same thresholds, which are held ("already in force").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.qos.pias import WORKLOADS, FlowSizeCdf, demotion_thresholds, load_workload
from controller.tuning.evidence import Change, Evidence, Value
from controller.tuning.stability import ChangeTimes, StabilityPolicy
from controller.tuning.summary import FlowSizeSample

SOURCE = "PIAS NSDI'15 (thresholds from the flow-size CDF and load); KS distance"
LOAD_LIMITS = (0.05, 0.95)  # a measured load outside is clamped: the model needs 0 < rho < 1


@dataclass(frozen=True, slots=True)
class PiasInUse:
    service_class: str
    workload: str
    load: float
    n_queues: int
    # The thresholds the hosts run when the intent gives them (``pias.thresholds_bytes``,
    # written by an earlier change); None: derived from the workload and load.
    thresholds: tuple[int, ...] | None = None


def parameter_key(service_class: str) -> str:
    return f"pias/{service_class}"


def measured_cdf(sample: FlowSizeSample) -> FlowSizeCdf:
    """The histogram as a CDF: (edge, count / total) at each finite edge, then 1 at the last
    finite edge (the +Inf bucket's flows counted there)."""
    total = sample.flows
    finite = [(edge, count) for edge, count in sample.buckets if math.isfinite(edge) and edge > 0]
    points = [(edge, min(count / total, 1.0)) for edge, count in finite]
    if points[-1][1] < 1.0 or len(points) == 1:
        # Flows above the last edge counted at it; one bucket alone is all mass at its edge.
        points.append((points[-1][0], 1.0))
    return FlowSizeCdf(points=tuple(points))


def ks_distance(measured: FlowSizeSample, in_use: FlowSizeCdf) -> float:
    """max over the finite bucket edges of |measured F - in-use F|."""
    total = measured.flows
    return max(
        abs(count / total - in_use.cdf(edge))
        for edge, count in measured.buckets
        if math.isfinite(edge) and edge > 0
    )


def tune_pias(
    current: PiasInUse,
    sample: FlowSizeSample | None,
    *,
    ks_threshold: float,
    min_flows: int,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> Change | None:
    """A Change of the class's thresholds (held with the reason when there is no drift)."""
    finite = (
        [edge for edge, _ in sample.buckets if math.isfinite(edge) and edge > 0] if sample else []
    )
    if sample is None or not finite or sample.flows <= 0:
        return None  # no sizes measured (only +Inf, or no flows): no evidence at all
    key = parameter_key(current.service_class)
    in_use = load_workload(current.workload)
    old = current.thresholds or tuple(demotion_thresholds(in_use, current.load, current.n_queues))
    inputs: dict[str, Value] = {
        "class": current.service_class,
        "workload": current.workload,
        "load": current.load,
        "queues": current.n_queues,
        "flows": sample.flows,
        "measured_load": sample.load,
        "ks_threshold": ks_threshold,
    }

    def held(reason: str, outputs: dict[str, Value]) -> Change:
        evidence = Evidence("pias.thresholds", SOURCE, inputs, outputs)
        return Change(key, old, old, evidence, held=reason)

    if sample.flows < min_flows:
        return held(f"{sample.flows:g} finished flows, fewer than {min_flows}", {})
    distance = ks_distance(sample, in_use)
    outputs: dict[str, Value] = {
        "ks_distance": round(distance, 6),
        "nearest_workload": nearest_workload(sample),
    }
    if distance <= ks_threshold:
        return held(f"KS distance {distance:.3f} <= {ks_threshold:g}: no drift", outputs)
    since = last_changed.get(key)
    if since is not None and now_s - since < policy.min_interval_s:
        return held(
            f"changed {now_s - since:.0f} s ago, minimum interval {policy.min_interval_s:g} s",
            outputs,
        )
    load, bounds = _load(sample, current.load)
    new = tuple(demotion_thresholds(measured_cdf(sample), load, current.n_queues))
    outputs |= {"load_used": load, "thresholds_bytes": new}
    if new == old:
        # Drift from the named workload, but the measured sizes' thresholds already run.
        return held("the measured sizes' thresholds are already in force", outputs)
    evidence = Evidence("pias.thresholds", SOURCE, inputs, outputs, bounds)
    return Change(key, old, new, evidence)


def _load(sample: FlowSizeSample, intent_load: float) -> tuple[float, tuple[str, ...]]:
    if sample.load is None:
        return intent_load, ("no measured load: the intent's load",)
    low, high = LOAD_LIMITS
    clamped = min(max(sample.load, low), high)
    if clamped != sample.load:
        return clamped, (f"measured load {sample.load:g} clamped to {clamped:g}",)
    return clamped, ()


def nearest_workload(sample: FlowSizeSample) -> str:
    """The shipped workload whose CDF is nearest the sample's (least KS distance)."""
    distances: Sequence[tuple[float, str]] = [
        (ks_distance(sample, load_workload(name)), name) for name in WORKLOADS
    ]
    return min(distances)[1]
