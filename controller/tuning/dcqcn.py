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

**Feedback**: the rule judges its own last step on the class (``LastStep``, the change the
history last applied, with the pause rate the pass that proposed it read) before it marks
earlier again. Only a step taken against pauses, whose ramp still runs (the operator has not
moved it since), is judged, and only while pauses are still seen: the pause rate now against
the step's, with ``FEEDBACK_MARGIN``. Cut by the margin: the step helped, the climb goes on.
Within it, after a Pmax raise: the raise did not help, the ramp holds (no further raise: in
the twin, from 8 senders on Pmax climbed a percent a round, 1 -> 12 %, for 2 % less pause
time, docs/lossless.md); after a Kmax cut, Kmax goes on to its floor (a few bounded steps
towards DCQCN's own guidance, marking well below XOFF). Risen by the margin: the step made
it worse, the ramp steps back to the value before it. After a step back the ramp holds while
pauses persist (the step it undid is not tried again).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from controller.errors import IntentInvalid
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
# A pause rate within 10 % of the last step's is no change (the guards' default hysteresis):
# the step neither helped nor hurt.
FEEDBACK_MARGIN = 0.10
Direction = Literal["earlier", "later", "back"]
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
class LastStep:
    """The class's last applied change, as the pass that proposed it recorded it: the ramp
    before and after it, the pause frames per second the class's ports sent in that pass's
    window (what the step set out to cut; None when no port reported them) and which way it
    stepped (``earlier``, ``later``, ``back``; None when the record does not say)."""

    before: DcqcnEcn
    after: DcqcnEcn
    pauses_sent_per_s: float | None
    step: str | None


def last_step(record: Mapping[str, Any] | None) -> LastStep | None:
    """The class's last applied change as the tuning history stores it (``Change.as_dict``):
    None when there is none, or when it does not hold what the feedback reads."""
    if record is None:
        return None
    try:
        before = DcqcnEcn(*(int(v) for v in record["current"]))
        after = DcqcnEcn(*(int(v) for v in record["proposed"]))
        evidence = record["evidence"]
        pauses = evidence["inputs"]["pfc_pauses_sent_per_s"]
        step = evidence["outputs"].get("step")
        return LastStep(
            before,
            after,
            None if pauses is None else float(pauses),
            None if step is None else str(step),
        )
    except (KeyError, TypeError, ValueError, AttributeError, IntentInvalid):
        return None  # a record written before the feedback, or not this rule's


@dataclass(frozen=True, slots=True)
class Verdict:
    """Which way the ramp moves (``earlier``/``later``, or ``back`` to ``to``) and why, or
    ``None``: held."""

    direction: Direction | None
    reason: str
    to: DcqcnEcn | None = None


def parameter_key(service_class: str) -> str:
    return f"dcqcn/{service_class}"


def tune_dcqcn(
    group: DcqcnGroup,
    queues: Sequence[QueueSummary],
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
    last: LastStep | None = None,
) -> Change | None:
    """The ramp the class's telemetry asks for, or None when none of its queues was measured.
    A returned Change may be ``held`` (reason given). ``current`` and ``proposed`` are
    (Kmin, Kmax, Pmax). ``last`` is the class's last applied step (``last_step``), judged
    before the ramp moves earlier again."""
    measured = [q for q in queues if q.mark_fraction is not None]
    if not measured:
        return None
    key = parameter_key(group.service_class)
    reading = read(measured)
    floor = group.kmax_floor_bytes(measured)
    inputs = _inputs(group, floor, measured, reading)
    verdict = decide(group, reading)
    if verdict.direction == "earlier":
        verdict = _with_feedback(verdict, group, last, reading, inputs)
    inputs["verdict"] = verdict.reason
    if verdict.direction is None:
        return _change(key, group, group.current, inputs, (), held=verdict.reason)
    step = _Step(group, key, now_s, last_changed, policy)
    if verdict.direction == "back" and verdict.to is not None:
        ramp, guarded, applied = step.back(verdict.to)
    else:
        ramp, guarded, applied = _move(group, floor, verdict.direction, step)
    held = guarded.held
    if held is None and ramp == group.current:
        held = "; ".join(applied) or "no change"
    return _change(
        key, group, ramp, inputs, guarded.bounds + applied, held=held, step=verdict.direction
    )


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


def judge_last_step(
    group: DcqcnGroup, last: LastStep | None, pauses_per_s: float
) -> Verdict | None:
    """The class's last step judged on the pause rate now, while pauses are still seen:
    ``earlier`` (it cut them by ``FEEDBACK_MARGIN``: step again; or it lowered Kmax, which
    goes on to its floor), ``None`` (held: a Pmax raise after which they did not fall, or the
    last step was a step back) or ``back`` to the ramp before it (they rose by the margin).
    Returns None, nothing to judge, when there is no last step, the ramp running is not the
    one it left (moved since by someone else), or it was not taken against pauses.

    Kmax's cuts are not held for a small effect: they are bounded by the floor (a few steps)
    and marking below the XOFF point is DCQCN's own guidance (§5); Pmax's raises past the
    paper's 1 % have no bound but 100 %, and in the twin did little at 8+ senders.

    Worked example: the step Pmax 4 -> 5 % was taken at 100 frames/s. Now 85/s: cut 15 %,
    step again. 95/s: not cut by 10 %, hold at 5 %. 120/s: risen 20 %, back to 4 %."""
    if last is None or last.after != group.current or not last.pauses_sent_per_s:
        return None
    then = last.pauses_sent_per_s
    rate = f"{then:.3g} -> {pauses_per_s:.3g} pause frames/s"
    stepped = f"{_triple(last.before)} -> {_triple(last.after)}"
    if last.step == "back":
        return Verdict(
            None,
            f"the last step ({stepped}) stepped back from a step after which the pauses rose, "
            f"and pauses are still seen ({rate}): the ramp holds rather than try that step again",
        )
    if pauses_per_s <= then * (1 - FEEDBACK_MARGIN):
        return Verdict(
            "earlier",
            f"the last step ({stepped}) cut the pauses {rate} (by at least "
            f"{FEEDBACK_MARGIN:.0%}): step again",
        )
    if pauses_per_s >= then * (1 + FEEDBACK_MARGIN):
        return Verdict(
            "back",
            f"the pauses rose {rate} (by at least {FEEDBACK_MARGIN:.0%}) after the last step "
            f"({stepped}): step back to {_triple(last.before)}",
            last.before,
        )
    not_cut = (
        f"the pauses did not fall by {FEEDBACK_MARGIN:.0%} after the last step ({stepped}: {rate})"
    )
    if last.after.pmax_pct <= last.before.pmax_pct:
        return Verdict("earlier", f"{not_cut}, a cut of Kmax: Kmax goes on to its floor")
    return Verdict(
        None,
        f"{not_cut}: raising Pmax did not help, no further raise (Pmax stays "
        f"{group.current.pmax_pct} %)",
    )


def _with_feedback(
    verdict: Verdict,
    group: DcqcnGroup,
    last: LastStep | None,
    reading: Reading,
    inputs: dict[str, Value],
) -> Verdict:
    """``decide``'s "earlier" as the last step's outcome allows (``judge_last_step``); a step
    judged is named in the inputs."""
    judged = judge_last_step(group, last, reading.pauses_sent_per_s or 0.0)
    if judged is None or last is None:
        return verdict
    inputs["last_step"] = f"{_triple(last.before)} -> {_triple(last.after)}"
    inputs["last_step_pauses_sent_per_s"] = _rounded(last.pauses_sent_per_s)
    if judged.direction == "earlier":
        return Verdict("earlier", f"{verdict.reason}; {judged.reason}")
    return judged


def _triple(ramp: DcqcnEcn) -> str:
    return f"({ramp.kmin_bytes}, {ramp.kmax_bytes}, {ramp.pmax_pct})"


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

    def back(self, to: DcqcnEcn) -> tuple[DcqcnEcn, Guarded, tuple[str, ...]]:
        """The whole ramp back to ``to``, a value that already ran: the minimum interval and
        the hysteresis guard it (on Kmax, or on Pmax when Kmax is the same), not the maximum
        step (which would leave it between two ramps, neither of them measured)."""
        now = self.group.current
        if to.kmax_bytes > self.group.kmax_ceiling_bytes:
            where = f"Kmax {to.kmax_bytes} B is above the ceiling {self.group.kmax_ceiling_bytes} B"
            return now, Guarded(float(now.kmax_bytes), f"no step back: {where}", ()), ()
        moved = to.kmax_bytes != now.kmax_bytes
        guarded = guard(
            self.key,
            float(now.kmax_bytes if moved else now.pmax_pct),
            float(to.kmax_bytes if moved else to.pmax_pct),
            now_s=self.now_s,
            last_changed=self.last_changed,
            policy=replace(self.policy, max_step_pct=math.inf),
            integer=True,
        )
        return (now if guarded.held else to), guarded, ()

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
    step: Direction | None = None,
) -> Change:
    related: dict[str, Value] = {
        "kmin_bytes": ramp.kmin_bytes,
        "kmax_bytes": ramp.kmax_bytes,
        "pmax_pct": ramp.pmax_pct,
    }
    # ``step`` is read back as the last step's direction (``last_step``).
    outputs: dict[str, Value] = {**related, "step": step}
    now = group.current
    return Change(
        parameter=key,
        current=(now.kmin_bytes, now.kmax_bytes, now.pmax_pct),
        proposed=(ramp.kmin_bytes, ramp.kmax_bytes, ramp.pmax_pct),
        evidence=Evidence("dcqcn.ramp", SOURCE, inputs, outputs, bounds),
        held=held,
        related=related,
    )
