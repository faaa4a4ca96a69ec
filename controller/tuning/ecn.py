"""ECN: the standard threshold's lambda per class and port speed, and the agent's bounds.

The objective is ACC's (Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter
Networks", SIGCOMM 2021, §3: the reward weighs link utilisation against queue length): keep
the link at its target utilisation with the least queueing. ACC learns that trade-off with
reinforcement learning; sluice states it as one explainable rule on the same telemetry
(queue length, output rate, marked rate), plus the port's offered demand where known:

* The standard threshold is K = C x RTT x lambda (MQ-ECN, NSDI'16, §2 Eq. 1). C is fixed by
  the port, RTT by the fabric, so the tuner moves lambda, per class and port speed.
* Only queues that mark (mark fraction >= ``MARKING``) are evidence: a queue that never
  reaches K is not limited by it. u is their ports' mean utilisation.
* Below the target (u < target - ``UTILISATION_BAND``), K is raised only on evidence that K
  is what keeps the link idle. DCTCP (SIGCOMM'10, §3.3) shows how: with K smaller than the
  queue's oscillation, the queue underflows after each round of marks and the link idles
  while the senders still have data. All must hold: (1) where the port's offered demand is
  measured, it exceeds what the port carries (offered utilisation above u by more than the
  band; a port whose offered demand is simply below the target is held: no threshold
  raises it, and a higher K only lets its bursts queue longer); (2) the underflow
  signature: occupancy p50 at most ``UNDERFLOW_P50`` x K (the sawtooth reaches empty, so
  its median sits in the lower half); (3) no drops to speak of (drop fraction < ``DROPS``;
  drops say the buffer, not K, binds). Then lambda' = lambda x min(target, offered) / u
  (offered taken as the target where unmeasured): K scales with the bandwidth-delay product
  the link has to cover, and never asks for more than the demand can use. A switch cannot
  measure offered demand, so there (2) and (3) decide alone, and a bursty port whose demand
  is below the target can show the same signature: the verdict says which evidence it had.
* At or above the target (u >= target - band), the least queueing that keeps it is the
  goal: if the queue stands (occupancy p50 above K_safe, what full throughput needs),
  lambda' = lambda x K_safe / p50, the K that would bring the median queue to K_safe.
  Otherwise (the queue is already that short) it is held.
* Then the stability guards (hysteresis, minimum interval, maximum step,
  controller/tuning/stability.py).
* Safe floor: never below K_safe = C x RTT x lambda_min with lambda_min = 0.17 by default,
  from the DCTCP analysis (Alizadeh, Javanmard, Prabhakar, "Analysis of DCTCP",
  SIGMETRICS'11: K > 0.17 C x RTT keeps the queue from underflowing; DCTCP SIGCOMM'10 §3.3
  gives the looser C x RTT / 7).
* The agent's floor and ceiling follow the new K as MQ-ECN bounds them
  (``controller.qos.ecn.mqecn_bounds``: ceiling K, floor w_i / sum(w) x K, at least one MTU);
  a STRICT class keeps the standard K (MQ-ECN §4, strict queues).

A missing occupancy is no evidence: the rule holds and says so. Every verdict's inputs
carry the reading it was made on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.qos.ecn import mqecn_bounds, standard_threshold_bytes
from controller.tuning.evidence import Change, Evidence
from controller.tuning.stability import ChangeTimes, StabilityPolicy, guard
from controller.tuning.summary import QueueSummary

SOURCE = (
    "ACC (SIGCOMM'21 §3) objective; K = C x RTT x lambda (MQ-ECN NSDI'16 §2 Eq. 1); raise "
    "only on queue underflow with unmet demand (DCTCP SIGCOMM'10 §3.3); safe floor "
    "K > 0.17 C x RTT (DCTCP analysis, SIGMETRICS'11)"
)
MARKING = 0.01  # a mark fraction below 1 % is no standing queue
UTILISATION_BAND = 0.05  # |utilisation - target| inside this: at the target
UNDERFLOW_P50 = 0.5  # median queue at most K/2: the sawtooth reaches empty (DCTCP §3.3)
DROPS = 0.001  # drop fraction (dropped over transmitted packets) that counts as drops


@dataclass(frozen=True, slots=True)
class EcnGroup:
    """One class on the ports of one speed, with what the intent says about it now."""

    service_class: str
    speed_gbps: float
    current_lambda: float
    rtt_us: float
    mtu_bytes: int
    weight: int | None  # None: STRICT (or the class is not DWRR)
    total_weight: int | None


@dataclass(frozen=True, slots=True)
class EcnBounds:
    lambda_min: float = 0.17
    lambda_max: float = 2.0
    utilisation_target: float = 0.9


@dataclass(frozen=True, slots=True)
class Reading:
    """The marking ports' means; a field is None when any port lacks the measurement."""

    utilisation: float
    offered_utilisation: float | None
    occupancy_p50_bytes: float | None
    drop_fraction: float | None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the reading asks for: a lambda with the reason, or (``wanted`` None) a hold."""

    wanted: float | None
    reason: str


def parameter_key(service_class: str, speed_gbps: float) -> str:
    return f"ecn_lambda/{service_class}/{speed_gbps:g}gbps"


def tune_lambda(
    group: EcnGroup,
    queues: Sequence[QueueSummary],
    bounds: EcnBounds,
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> Change | None:
    """The lambda (and K, agent floor and ceiling) the group's telemetry asks for, or None
    when there is no measurement at all. A returned Change may be ``held`` (reason given)."""
    measured = [q for q in queues if q.utilisation is not None and q.mark_fraction is not None]
    if not measured:
        return None
    marking = [q for q in measured if (q.mark_fraction or 0.0) >= MARKING]
    key = parameter_key(group.service_class, group.speed_gbps)
    inputs = _inputs(group, bounds, measured, marking)
    if not marking:
        inputs["opinion"] = False  # no evidence either way: apply.py ignores this group
        return _hold(key, group, inputs, "no port marks: the threshold does not limit traffic")
    verdict = decide(group, bounds, read(marking, group.mtu_bytes))
    inputs["verdict"] = verdict.reason
    if verdict.wanted is None:
        return _hold(key, group, inputs, verdict.reason)
    wanted = verdict.wanted
    guarded = guard(
        key, group.current_lambda, wanted, now_s=now_s, last_changed=last_changed, policy=policy
    )
    proposed, applied = _clamp(guarded.value, bounds)
    outputs = _outputs(group, proposed) | {"lambda_wanted": round(wanted, 6)}
    return Change(
        parameter=key,
        current=group.current_lambda,
        proposed=round(proposed, 6),
        evidence=Evidence("ecn.lambda", SOURCE, inputs, outputs, guarded.bounds + applied),
        held=(guarded.held or "no change") if proposed == group.current_lambda else None,
        related=outputs,
    )


def read(marking: Sequence[QueueSummary], mtu_bytes: int) -> Reading:
    """The marking ports' mean utilisation, offered demand, median occupancy and drop
    fraction (drops over the packets the class sent, ``tx_bytes_per_s`` / MTU)."""

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known and len(known) == len(values) else None

    drop_fractions: list[float | None] = []
    for q in marking:
        if q.dropped_packets_per_s is None or not q.tx_bytes_per_s:
            drop_fractions.append(None)
        else:
            drop_fractions.append(q.dropped_packets_per_s / (q.tx_bytes_per_s / mtu_bytes))
    return Reading(
        utilisation=sum(q.utilisation or 0.0 for q in marking) / len(marking),
        offered_utilisation=mean([q.offered_utilisation for q in marking]),
        occupancy_p50_bytes=mean([q.occupancy_p50_bytes for q in marking]),
        drop_fraction=mean(drop_fractions),
    )


def decide(group: EcnGroup, bounds: EcnBounds, reading: Reading) -> Verdict:
    """Below the target: raise only where K keeps the link idle; at or above it: lower
    while the queue stands above what full throughput needs."""
    if reading.utilisation < bounds.utilisation_target - UTILISATION_BAND:
        return _below_target(group, bounds, reading)
    return _at_target(group, bounds, reading)


def _below_target(group: EcnGroup, bounds: EcnBounds, reading: Reading) -> Verdict:
    u, target = reading.utilisation, bounds.utilisation_target
    k = standard_threshold_bytes(group.speed_gbps, group.rtt_us, group.current_lambda)
    below = f"utilisation {u:.3f} below the target {target:g}"
    offered = reading.offered_utilisation
    if offered is not None and offered <= u + UTILISATION_BAND:
        return Verdict(
            None,
            f"demand-limited: offered {offered:.3f}, carried {u:.3f}: the port carries what it "
            "is offered, no threshold raises that (and a larger K lets bursts queue longer)",
        )
    p50 = reading.occupancy_p50_bytes
    if p50 is None:
        return Verdict(None, f"{below}, but no occupancy is measured: no underflow evidence")
    if p50 > UNDERFLOW_P50 * k:
        return Verdict(
            None,
            f"{below}, but the queue stands (p50 {p50:.0f} B > {UNDERFLOW_P50:g} x K = "
            f"{UNDERFLOW_P50 * k:.0f} B): it does not underflow, K is not what idles the link",
        )
    drops = reading.drop_fraction
    if drops is not None and drops >= DROPS:
        return Verdict(
            None,
            f"{below}, but the queue drops ({drops:.2%} of packets): the buffer binds, not K",
        )
    demand = (
        f"offered {offered:.3f} > carried {u:.3f}"
        if offered is not None
        else "offered demand not measured (the queue's signature alone)"
    )
    usable = target if offered is None else min(target, offered)
    wanted = group.current_lambda * usable / max(u, 1e-6)
    return Verdict(
        wanted,
        f"K limits the port: {below}, {demand}, the queue underflows (p50 {p50:.0f} B <= "
        f"{UNDERFLOW_P50:g} x K = {UNDERFLOW_P50 * k:.0f} B) and does not drop (DCTCP "
        "§3.3): lambda x min(target, offered) / utilisation",
    )


def _at_target(group: EcnGroup, bounds: EcnBounds, reading: Reading) -> Verdict:
    u = reading.utilisation
    needed = safe_floor_bytes(group, bounds)
    met = f"utilisation {u:.3f} at or above the target {bounds.utilisation_target:g}"
    p50 = reading.occupancy_p50_bytes
    if p50 is None:
        return Verdict(None, f"{met}, but no occupancy is measured: no standing-queue evidence")
    if p50 <= needed:
        return Verdict(
            None, f"{met} with the queue's p50 {p50:.0f} B <= K_safe {needed} B: least queueing"
        )
    return Verdict(
        group.current_lambda * needed / p50,
        f"{met} with a standing queue (p50 {p50:.0f} B > K_safe {needed} B): lambda x "
        "K_safe / p50, less queueing for the same utilisation (ACC's objective)",
    )


def safe_floor_bytes(group: EcnGroup, bounds: EcnBounds) -> int:
    """K_safe = C x RTT x lambda_min: the least standard threshold the tuner ever proposes."""
    return standard_threshold_bytes(group.speed_gbps, group.rtt_us, bounds.lambda_min)


def _clamp(value: float, bounds: EcnBounds) -> tuple[float, tuple[str, ...]]:
    if value < bounds.lambda_min:
        return bounds.lambda_min, (f"safe floor: lambda {value:g} raised to {bounds.lambda_min:g}",)
    if value > bounds.lambda_max:
        return bounds.lambda_max, (f"ceiling: lambda {value:g} lowered to {bounds.lambda_max:g}",)
    return value, ()


def _outputs(group: EcnGroup, ecn_lambda: float) -> dict[str, float | int | str | None]:
    k = standard_threshold_bytes(group.speed_gbps, group.rtt_us, ecn_lambda)
    if group.weight is None or group.total_weight is None:
        floor, ceiling = k, k
    else:
        agent = mqecn_bounds(k, group.weight, group.total_weight, group.mtu_bytes)
        floor, ceiling = agent.floor_bytes, agent.ceiling_bytes
    return {
        "lambda": round(ecn_lambda, 6),
        "standard_threshold_bytes": k,
        "agent_floor_bytes": floor,
        "agent_ceiling_bytes": ceiling,
    }


def _inputs(
    group: EcnGroup,
    bounds: EcnBounds,
    measured: Sequence[QueueSummary],
    marking: Sequence[QueueSummary],
) -> dict[str, float | int | str | None]:
    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 6) if values else None

    return {
        "class": group.service_class,
        "speed_gbps": group.speed_gbps,
        "rtt_us": group.rtt_us,
        "lambda": group.current_lambda,
        "utilisation_target": bounds.utilisation_target,
        "ports_measured": len(measured),
        "ports_marking": len(marking),
        "utilisation_marking_mean": mean([q.utilisation or 0.0 for q in marking]),
        "offered_utilisation_marking_mean": mean(
            [q.offered_utilisation for q in marking if q.offered_utilisation is not None]
        ),
        "occupancy_p50_marking_mean_bytes": mean(
            [q.occupancy_p50_bytes for q in marking if q.occupancy_p50_bytes is not None]
        ),
        "mark_fraction_mean": mean([q.mark_fraction or 0.0 for q in measured]),
        "occupancy_p95_max_bytes": max(
            (q.occupancy_p95_bytes for q in measured if q.occupancy_p95_bytes is not None),
            default=None,
        ),
        "standard_threshold_bytes": standard_threshold_bytes(
            group.speed_gbps, group.rtt_us, group.current_lambda
        ),
        "safe_floor_bytes": safe_floor_bytes(group, bounds),
    }


def _hold(
    key: str, group: EcnGroup, inputs: dict[str, float | int | str | None], reason: str
) -> Change:
    outputs = _outputs(group, group.current_lambda)
    return Change(
        parameter=key,
        current=group.current_lambda,
        proposed=group.current_lambda,
        evidence=Evidence("ecn.lambda", SOURCE, inputs, outputs),
        held=reason,
        related=outputs,
    )
