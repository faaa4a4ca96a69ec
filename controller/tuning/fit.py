"""Does the twin reproduce the fabric? The fit check the counterfactual search stands on
(issue 24, "Counterfactual tuning": no proposal when the twin cannot reproduce the fabric).

The twin runs the *current* intent on the traffic the summary describes
(``controller.tuning.search.traffic_from_summary``); each queue the summary measured is set
against the twin's figures for the same class on a port of the same kind (host-facing leaf
port, leaf uplink, spine port: netsim runs every port of a kind alike). A candidate predicted
by a twin that does not reproduce what the fabric did now is a guess, so a misfit stops the
search. Pure: the summary, the twin's figures and the port kinds are passed in.

Tolerances (``Tolerance``, defaults):

* utilisation of the port, and the class's own share of it (its tx bytes over the line
  rate): within 0.1 absolute. The traffic's load is the summary's own, so a twin that
  misses by more has the wrong traffic (a class carrying load the hosts' flows do not
  explain, a load the twin cannot carry);
* mark fraction: within 0.1 absolute **or** a factor of 2. A fraction near 0 differs by
  large factors for a handful of marks, a fraction near 0.5 by small ones, so either bound
  passes;
* occupancy p50 and p95: within a factor of 2 **or** 4 MTU (the floor: a queue of a few
  packets is one burst more or less, which neither a switch's sampled counter nor the twin's
  delay percentile resolves). The twin's occupancy is its queueing delay x the line rate
  (``controller.twin.results.queue_figures``), the fabric's sampled bytes, so a factor is
  the tolerance, not a fraction.

Drops and tx rate in bytes/s are not compared on their own: the class's utilisation is its
tx rate over the line rate, and drops are rare events a window of a few thousand flows
reproduces only by chance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.tuning.summary import QueueSummary, TelemetrySummary

PortKinds = Mapping[tuple[str, str], str]  # (switch, port) -> leaf_down | leaf_up | spine
Severity = Callable[[float, float], float]  # (measured, twin) -> times over the tolerance
WORST = 3  # misfits named in the verdict's reason


@dataclass(frozen=True, slots=True)
class TwinQueue:
    """The twin's figures for one class on one port of a kind, averaged over the kind's
    ports (``controller.twin.results.queue_figures``)."""

    service_class: str
    kind: str
    utilisation: float
    class_utilisation: float
    mark_fraction: float
    occupancy_p50_bytes: float
    occupancy_p95_bytes: float


@dataclass(frozen=True, slots=True)
class Tolerance:
    utilisation: float = 0.1
    mark_fraction: float = 0.1
    mark_ratio: float = 2.0
    occupancy_ratio: float = 2.0
    occupancy_floor_mtus: float = 4.0

    def describe(self, mtu_bytes: int) -> str:
        return (
            f"utilisation ±{self.utilisation:g}, mark fraction ±{self.mark_fraction:g} or "
            f"{self.mark_ratio:g}x, occupancy {self.occupancy_ratio:g}x or "
            f"{self.occupancy_floor_mtus * mtu_bytes:.0f} B"
        )


@dataclass(frozen=True, slots=True)
class Misfit:
    """One figure of one queue outside its tolerance; ``severity`` is how many times over it
    (above 1 is a misfit), which orders the worst first."""

    switch: str
    port: str
    service_class: str
    metric: str
    measured: float
    twin: float
    allowed: str
    severity: float

    def describe(self) -> str:
        return (
            f"{self.switch} {self.port} {self.service_class} {self.metric}: measured "
            f"{_num(self.measured)}, twin {_num(self.twin)} (allowed {self.allowed})"
        )


@dataclass(frozen=True, slots=True)
class FitVerdict:
    """``fits`` when at least one queue was compared and none misfits. ``misfits`` worst
    first; ``not_compared`` names the measured queues the twin has no figures for (a port
    kind it does not model, a class it carried nothing of on that kind)."""

    fits: bool
    compared: int
    misfits: tuple[Misfit, ...]
    not_compared: tuple[str, ...]
    tolerance: str

    def reason(self) -> str:
        if self.fits:
            return f"the twin reproduces the fabric's {self.compared} queues ({self.tolerance})"
        if self.compared == 0:
            return "the twin's fit could not be checked: no measured queue has a twin figure"
        queues = len({(m.switch, m.port, m.service_class) for m in self.misfits})
        worst = "; ".join(m.describe() for m in self.misfits[:WORST])
        return (
            f"the twin does not reproduce the fabric: {queues} of {self.compared} queues "
            f"outside {self.tolerance}; worst: {worst}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "compared": self.compared,
            "tolerance": self.tolerance,
            "misfits": [m.describe() for m in self.misfits],
            "not_compared": list(self.not_compared),
        }


def check_fit(
    summary: TelemetrySummary,
    twin: Sequence[TwinQueue],
    kinds: PortKinds,
    *,
    mtu_bytes: int,
    tolerance: Tolerance | None = None,
) -> FitVerdict:
    """Every measured queue against the twin's figures for its class and port kind."""
    tol = tolerance or Tolerance()
    by_key = {(q.service_class, q.kind): q for q in twin}
    misfits: list[Misfit] = []
    compared, not_compared = 0, []
    for queue in summary.queues:
        kind = kinds.get((queue.switch, queue.port))
        figures = by_key.get((queue.service_class, kind)) if kind is not None else None
        if figures is None:
            not_compared.append(f"{queue.switch} {queue.port} {queue.service_class}")
            continue
        compared += 1
        misfits += _queue_misfits(queue, figures, tol, mtu_bytes)
    misfits.sort(key=lambda m: -m.severity)
    return FitVerdict(
        fits=compared > 0 and not misfits,
        compared=compared,
        misfits=tuple(misfits),
        not_compared=tuple(not_compared),
        tolerance=tol.describe(mtu_bytes),
    )


def _queue_misfits(
    queue: QueueSummary, twin: TwinQueue, tol: Tolerance, mtu_bytes: int
) -> list[Misfit]:
    floor = tol.occupancy_floor_mtus * mtu_bytes
    class_utilisation = (
        None
        if queue.tx_bytes_per_s is None or queue.speed_gbps <= 0
        else queue.tx_bytes_per_s * 8 / (queue.speed_gbps * 1e9)
    )
    checks = (
        (
            "utilisation",
            queue.utilisation,
            twin.utilisation,
            _absolute(tol.utilisation),
            f"±{tol.utilisation:g}",
        ),
        (
            "class utilisation",
            class_utilisation,
            twin.class_utilisation,
            _absolute(tol.utilisation),
            f"±{tol.utilisation:g}",
        ),
        (
            "mark fraction",
            queue.mark_fraction,
            twin.mark_fraction,
            _either(tol.mark_fraction, tol.mark_ratio),
            f"±{tol.mark_fraction:g} or {tol.mark_ratio:g}x",
        ),
        (
            "occupancy p50 B",
            queue.occupancy_p50_bytes,
            twin.occupancy_p50_bytes,
            _either(floor, tol.occupancy_ratio),
            f"{tol.occupancy_ratio:g}x or {floor:.0f} B",
        ),
        (
            "occupancy p95 B",
            queue.occupancy_p95_bytes,
            twin.occupancy_p95_bytes,
            _either(floor, tol.occupancy_ratio),
            f"{tol.occupancy_ratio:g}x or {floor:.0f} B",
        ),
    )
    out: list[Misfit] = []
    for metric, measured, predicted, severity_of, allowed in checks:
        if measured is None:
            continue  # not measured: no evidence either way
        severity = severity_of(measured, predicted)
        if severity > 1.0:
            out.append(
                Misfit(
                    queue.switch,
                    queue.port,
                    queue.service_class,
                    metric,
                    measured,
                    predicted,
                    allowed,
                    severity,
                )
            )
    return out


def _absolute(bound: float) -> Severity:
    return lambda a, b: abs(a - b) / bound


def _either(bound: float, ratio: float) -> Severity:
    """Over only when both the absolute difference and the ratio are over theirs."""
    return lambda a, b: min(abs(a - b) / bound, _ratio(a, b) / ratio)


def _ratio(a: float, b: float) -> float:
    low, high = sorted((abs(a), abs(b)))
    if high == 0:
        return 1.0
    return math.inf if low == 0 else high / low


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
