"""DCQCN's marking on a lossless class's queues: Kmin, Kmax and Pmax from PFC pauses and marks.

A lossless class (docs/lossless.md) is never dropped: its queue marks ECN on a RED-like ramp
(no mark below Kmin, rising to Pmax at Kmax, every packet above) and the NICs' DCQCN slows on
the marks; when that is too late the ingress priority group reaches its XOFF point and PFC
pauses the upstream port, which stops every flow of the priority there, not only the ones
that congest (head-of-line blocking, pause spreading: Guo et al., "RDMA over Commodity
Ethernet at Scale", SIGCOMM 2016, §4). DCQCN (Zhu et al., "Congestion Control for
Large-Scale RDMA Deployments", SIGCOMM 2015, §5) sets the marking so ECN acts before PFC; the
compiler holds Kmax below the XOFF point (``KmaxAboveXoff``), which bounds the steady state.
Paraleon (ICNP 2024) tunes DCQCN's switch and NIC parameters from the fabric's telemetry;
sluice states one explainable rule on the counters a switch has:

* **Pauses seen** (the class's ports sent PFC pause frames in the window): marking came too
  late, so it starts earlier: Kmax halves (Kmin with it, keeping the ramp's shape) down to
  its floor; at the floor, Pmax doubles (more marks on the same ramp, earlier CNPs).
* **No pause, the ports underused and the queue marking a lot within the ramp** (the marking
  ports' mean mark fraction at least ``MARKS_HIGH``, their utilisation below the tuning
  target, their occupancy p95 below Kmax): DCQCN cuts rates a queue that never pauses did not
  need cut, so marking starts later: Pmax halves first (back towards the paper's 1 %), then
  Kmax doubles up to its ceiling. A queue whose p95 already passes Kmax is held: it overruns
  the ramp, and marking later lets it grow towards XOFF (in the twin, walking Kmax up on such
  a queue reached the pause boundary and lengthened the incast, docs/lossless.md).
* Anything else holds, with its reason: no pause counters (no evidence that marking is
  late), marks under ``MARKS_HIGH``, or a port busy enough that later marks would only queue
  more.

The class has one ramp (``service_classes[].lossless``), so the rule reads all of its ports,
whatever their speed: the pauses show at the ingress port whose group filled (for an incast
across the spine, a fabric uplink) while the marks show at the congested egress queue (a
host port), often ports of another speed. Its key is ``dcqcn/<class>``.

Bounds: Kmax below the lowest XOFF point of the intent's ports (the compiler's invariant) and
not below ``C x RTT x ecn_lambda_min`` of the fastest port that marks (the tuner's floor for K:
above Kmax every packet is marked, as above DCTCP's K, Alizadeh et al., SIGMETRICS 2011);
Kmin at least 1 B and below Kmax; Pmax 1..100 %. The stability guards
(controller/tuning/stability.py) move Kmax or Pmax, whichever the rule moves, under the one
key: hysteresis, minimum interval and maximum step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from controller.qos.ecn import standard_threshold_bytes
from controller.qos.lossless import DcqcnEcn
from controller.tuning.evidence import Change, Evidence, Value
from controller.tuning.stability import ChangeTimes, Guarded, StabilityPolicy, guard
from controller.tuning.summary import QueueSummary

SOURCE = (
    "DCQCN (Zhu et al., SIGCOMM'15) §5: ECN marks (Kmin, Kmax, Pmax) before PFC pauses; "
    "pauses stop a whole priority upstream (Guo et al., SIGCOMM'16 §4); tuned from telemetry "
    "as Paraleon (ICNP'24) does"
)
MARKING = 0.01  # a mark fraction below 1 % is no marking (as controller/tuning/ecn.py)
MARKS_HIGH = 0.05  # a queue marking at least 5 % of its packets marks a lot
UTILISATION_BAND = 0.05  # below target - band: underused (as controller/tuning/ecn.py)
Direction = Literal["earlier", "later"]
EARLIER = 0.5  # pauses: Kmax x this (the maximum step limits one change)
LATER = 2.0  # no pause, underused, marking a lot: Kmax x this
PMAX_MAX_PCT = 100


@dataclass(frozen=True, slots=True)
class DcqcnGroup:
    """One lossless class with its ramp now, and what bounds its Kmax: the floor's RTT and
    lambda (``C x RTT x lambda_min`` at the fastest marking port) and the ceiling (one byte
    below the lowest XOFF point of its ports)."""

    service_class: str
    current: DcqcnEcn
    rtt_us: float
    lambda_min: float
    kmax_ceiling_bytes: int
    utilisation_target: float

    def kmax_floor_bytes(self, queues: Sequence[QueueSummary]) -> int:
        """K's safe floor at the fastest port that marks (every measured port when none
        does): above Kmax every packet is marked, as above DCTCP's K, and the queue that
        drains at C needs C x RTT x lambda_min not to run dry (Alizadeh et al., SIGMETRICS
        2011). Never above the ceiling."""
        marking = [q for q in queues if (q.mark_fraction or 0.0) >= MARKING] or queues
        speed = max(q.speed_gbps for q in marking)
        floor = standard_threshold_bytes(speed, self.rtt_us, self.lambda_min)
        return min(floor, self.kmax_ceiling_bytes)


@dataclass(frozen=True, slots=True)
class Reading:
    """The class's ports over the window: pause frames sent and received (summed, None when
    no port reports them), the marking ports' (mark fraction at least ``MARKING``) mean
    utilisation and mean mark fraction, and the largest of their occupancy p95s (None when
    any lacks it)."""

    pauses_sent_per_s: float | None
    pauses_received_per_s: float | None
    ports_pausing: int
    utilisation_marking: float | None
    mark_fraction: float
    occupancy_p95_marking_bytes: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Which way the ramp moves (``earlier``/``later``) and why, or ``None``: held."""

    direction: Direction | None
    reason: str


def parameter_key(service_class: str) -> str:
    return f"dcqcn/{service_class}"


def tune_dcqcn(
    group: DcqcnGroup,
    queues: Sequence[QueueSummary],
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> Change | None:
    """The ramp the class's telemetry asks for, or None when none of its queues was measured.
    A returned Change may be ``held`` (reason given). ``current`` and ``proposed`` are
    (Kmin, Kmax, Pmax)."""
    measured = [q for q in queues if q.mark_fraction is not None]
    if not measured:
        return None
    key = parameter_key(group.service_class)
    reading = read(measured)
    floor = group.kmax_floor_bytes(measured)
    inputs = _inputs(group, floor, measured, reading)
    verdict = decide(group, reading)
    inputs["verdict"] = verdict.reason
    if verdict.direction is None:
        return _change(key, group, group.current, inputs, (), held=verdict.reason)
    ramp, guarded, applied = _move(
        group, floor, verdict.direction, _Step(group, key, now_s, last_changed, policy)
    )
    held = guarded.held
    if held is None and ramp == group.current:
        held = "; ".join(applied) or "no change"
    return _change(key, group, ramp, inputs, guarded.bounds + applied, held=held)


def read(queues: Sequence[QueueSummary]) -> Reading:
    sent = [q.pfc_tx_pause_per_s for q in queues if q.pfc_tx_pause_per_s is not None]
    received = [q.pfc_rx_pause_per_s for q in queues if q.pfc_rx_pause_per_s is not None]
    marking = [q for q in queues if (q.mark_fraction or 0.0) >= MARKING]
    used = [q.utilisation for q in marking if q.utilisation is not None]
    p95 = [q.occupancy_p95_bytes for q in marking if q.occupancy_p95_bytes is not None]
    return Reading(
        pauses_sent_per_s=sum(sent) if sent else None,
        pauses_received_per_s=sum(received) if received else None,
        ports_pausing=sum(1 for v in sent if v > 0),
        utilisation_marking=sum(used) / len(used) if used and len(used) == len(marking) else None,
        # A port that does not mark (an idle one among them) says nothing of how much the
        # congested queues mark: the marking ports' mean.
        mark_fraction=(
            sum(q.mark_fraction or 0.0 for q in marking) / len(marking) if marking else 0.0
        ),
        occupancy_p95_marking_bytes=max(p95) if p95 and len(p95) == len(marking) else None,
    )


def decide(group: DcqcnGroup, reading: Reading) -> Verdict:
    """Pauses: earlier. No pause, underused and marking a lot: later. Else hold."""
    sent = reading.pauses_sent_per_s
    if sent is None:
        return Verdict(None, "no PFC pause counters for the class: no evidence marking is late")
    if sent > 0:
        return Verdict(
            "earlier",
            f"{reading.ports_pausing} port(s) sent {sent:.3g} PFC pause frames/s: ECN marked "
            "too late to keep the priority groups below XOFF (DCQCN §5), mark earlier",
        )
    marks = reading.mark_fraction
    if marks < MARKS_HIGH:
        return Verdict(
            None,
            f"no pause and the marking ports mark {marks:.2%} (< {MARKS_HIGH:.0%}): the ramp holds",
        )
    u = reading.utilisation_marking
    target = group.utilisation_target
    if u is None:
        return Verdict(None, "no pause, but the marking ports' utilisation is not measured")
    if u >= target - UTILISATION_BAND:
        return Verdict(
            None,
            f"no pause, marks {marks:.2%}, utilisation {u:.3f} at the target {target:g}: "
            "later marks would only queue more",
        )
    p95, kmax = reading.occupancy_p95_marking_bytes, group.current.kmax_bytes
    if p95 is None:
        return Verdict(None, "no pause, but the marking queues' occupancy is not measured")
    if p95 >= kmax:
        return Verdict(
            None,
            f"no pause and utilisation {u:.3f} below the target, but the queue's p95 {p95:.0f} B "
            f"passes Kmax {kmax} B: it already overruns the ramp, later marks would let it grow "
            "towards XOFF",
        )
    return Verdict(
        "later",
        f"no pause, marks {marks:.2%} with the marking ports at {u:.3f} below the target "
        f"{target:g} and the queue's p95 {p95:.0f} B inside the ramp (Kmax {kmax} B): DCQCN "
        "cuts rates a queue that never pauses did not need cut, mark later",
    )


def _move(
    group: DcqcnGroup, floor: int, direction: Direction, step: _Step
) -> tuple[DcqcnEcn, Guarded, tuple[str, ...]]:
    """One step along the ladder Pmax .. Kmax: earlier lowers Kmax to its floor, then raises
    Pmax; later lowers Pmax to 1 %, then raises Kmax to its ceiling. Kmax counts as at a bound
    once the bound is inside the hysteresis band (no guard would let it move there)."""
    now = group.current
    ceiling = group.kmax_ceiling_bytes
    band = 1 + step.policy.hysteresis_pct / 100
    if direction == "earlier":
        if now.kmax_bytes > floor * band:
            wanted = now.kmax_bytes * EARLIER
            bound = f"floor: Kmax {wanted:.0f} B raised to {floor} B (C x RTT x lambda_min)"
            return step.kmax(max(wanted, floor), bound if wanted < floor else None)
        if now.pmax_pct < PMAX_MAX_PCT:
            return step.pmax(min(now.pmax_pct * 2, PMAX_MAX_PCT))
        return step.at_bounds(f"Kmax {now.kmax_bytes} B at its floor {floor} B, Pmax 100 %")
    if now.pmax_pct > 1:
        return step.pmax(max(now.pmax_pct / 2, 1))
    if now.kmax_bytes * band < ceiling:
        wanted = now.kmax_bytes * LATER
        bound = f"ceiling: Kmax {wanted:.0f} B lowered to {ceiling} B (below the XOFF point)"
        return step.kmax(min(wanted, ceiling), bound if wanted > ceiling else None)
    return step.at_bounds(f"Kmax {now.kmax_bytes} B at its ceiling {ceiling} B, Pmax 1 %")


@dataclass(frozen=True, slots=True)
class _Step:
    """Kmax or Pmax through the stability guards, under the class's one key."""

    group: DcqcnGroup
    key: str
    now_s: float
    last_changed: ChangeTimes
    policy: StabilityPolicy

    def kmax(self, wanted: float, bound: str | None) -> tuple[DcqcnEcn, Guarded, tuple[str, ...]]:
        """Kmin moves with Kmax (the ramp keeps its shape), at least 1 B and below Kmax."""
        now = self.group.current
        guarded = self._guard(now.kmax_bytes, wanted)
        kmax = int(guarded.value)
        kmin = min(max(round(now.kmin_bytes * kmax / now.kmax_bytes), 1), kmax - 1)
        ramp = now if guarded.held else DcqcnEcn(kmin, kmax, now.pmax_pct)
        return ramp, guarded, (bound,) if bound else ()

    def pmax(self, wanted: float) -> tuple[DcqcnEcn, Guarded, tuple[str, ...]]:
        now = self.group.current
        guarded = self._guard(now.pmax_pct, wanted)
        pmax = min(max(int(guarded.value), 1), PMAX_MAX_PCT)
        return DcqcnEcn(now.kmin_bytes, now.kmax_bytes, pmax), guarded, ()

    def at_bounds(self, where: str) -> tuple[DcqcnEcn, Guarded, tuple[str, ...]]:
        now = self.group.current
        return now, Guarded(float(now.kmax_bytes), f"at its bounds: {where}", ()), ()

    def _guard(self, current: int, wanted: float) -> Guarded:
        return guard(
            self.key,
            float(current),
            wanted,
            now_s=self.now_s,
            last_changed=self.last_changed,
            policy=self.policy,
            integer=True,
        )


def _inputs(
    group: DcqcnGroup, floor: int, queues: Sequence[QueueSummary], reading: Reading
) -> dict[str, Value]:
    p95 = [q.occupancy_p95_bytes for q in queues if q.occupancy_p95_bytes is not None]
    p50 = [q.occupancy_p50_bytes for q in queues if q.occupancy_p50_bytes is not None]
    return {
        "class": group.service_class,
        "kmin_bytes": group.current.kmin_bytes,
        "kmax_bytes": group.current.kmax_bytes,
        "pmax_pct": group.current.pmax_pct,
        "kmax_floor_bytes": floor,
        "rtt_us": group.rtt_us,
        "kmax_ceiling_bytes": group.kmax_ceiling_bytes,
        "utilisation_target": group.utilisation_target,
        "ports_measured": len(queues),
        "ports_pausing": reading.ports_pausing,
        "pfc_pauses_sent_per_s": _rounded(reading.pauses_sent_per_s),
        "pfc_pauses_received_per_s": _rounded(reading.pauses_received_per_s),
        "utilisation_marking_mean": _rounded(reading.utilisation_marking),
        "mark_fraction_marking_mean": _rounded(reading.mark_fraction),
        "occupancy_p50_max_bytes": max(p50, default=None),
        "occupancy_p95_max_bytes": max(p95, default=None),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


def _change(
    key: str,
    group: DcqcnGroup,
    ramp: DcqcnEcn,
    inputs: dict[str, Value],
    bounds: tuple[str, ...],
    *,
    held: str | None,
) -> Change:
    outputs: dict[str, Value] = {
        "kmin_bytes": ramp.kmin_bytes,
        "kmax_bytes": ramp.kmax_bytes,
        "pmax_pct": ramp.pmax_pct,
    }
    now = group.current
    return Change(
        parameter=key,
        current=(now.kmin_bytes, now.kmax_bytes, now.pmax_pct),
        proposed=(ramp.kmin_bytes, ramp.kmax_bytes, ramp.pmax_pct),
        evidence=Evidence("dcqcn.ramp", SOURCE, inputs, outputs, bounds),
        held=held,
        related=outputs,
    )
