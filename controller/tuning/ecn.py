"""ECN: the standard threshold's lambda per class and port speed, and the agent's bounds.

The objective is ACC's (Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter
Networks", SIGCOMM 2021, §2-3): keep the link at its target utilisation with the least
queueing. ACC learns that trade-off with reinforcement learning; sluice states it as one
explainable rule on the same telemetry (queue length, output rate, marked rate):

* The standard threshold is K = C x RTT x lambda (MQ-ECN, NSDI'16, §2 Eq. 1). C is fixed by
  the port, RTT by the fabric, so the tuner moves lambda, per class and port speed.
* A queue that marks (mark fraction >= ``MARKING``) has a standing backlog. If its port still
  runs below the utilisation target, the sawtooth drains the queue before the senders recover
  (DCTCP, SIGCOMM'10, §3.3: K must exceed the queue's oscillation or the link idles): K is too
  small, lambda rises. If the port runs above the target while marking, the queue holds more
  than the target needs: lambda falls, cutting queueing delay.
* Proportional step: lambda' = lambda x target / utilisation (the threshold scales with the
  bandwidth-delay product the link needs); then the stability guards (hysteresis, minimum
  interval, maximum step, controller/tuning/stability.py).
* Safe floor: never below K = C x RTT x lambda_min with lambda_min = 0.17 by default, from the
  DCTCP analysis (Alizadeh, Javanmard, Prabhakar, "Analysis of DCTCP", SIGMETRICS'11: K > 0.17
  C x RTT keeps the queue from underflowing; DCTCP SIGCOMM'10 §3.3 gives the looser C x RTT / 7).
* The agent's floor and ceiling follow the new K as MQ-ECN bounds them
  (``controller.qos.ecn.mqecn_bounds``: ceiling K, floor w_i / sum(w) x K, at least one MTU);
  a STRICT class keeps the standard K (MQ-ECN §4, strict queues).

A group with no marking gives no evidence (the threshold is not what limits its traffic), and
a utilisation within ``UTILISATION_BAND`` of the target is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.qos.ecn import mqecn_bounds, standard_threshold_bytes
from controller.tuning.evidence import Change, Evidence
from controller.tuning.stability import ChangeTimes, StabilityPolicy, guard
from controller.tuning.summary import QueueSummary

SOURCE = (
    "ACC (SIGCOMM'21) objective; K = C x RTT x lambda (MQ-ECN NSDI'16 §2 Eq. 1); safe floor "
    "K > 0.17 C x RTT (DCTCP analysis, SIGMETRICS'11)"
)
MARKING = 0.01  # a mark fraction below 1 % is no standing queue
UTILISATION_BAND = 0.05  # |utilisation - target| inside this: no evidence to move


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
    utilisation = sum(q.utilisation or 0.0 for q in marking) / len(marking)
    if abs(utilisation - bounds.utilisation_target) <= UTILISATION_BAND:
        return _hold(
            key,
            group,
            inputs,
            f"utilisation {utilisation:.3f} within {UTILISATION_BAND} of the target "
            f"{bounds.utilisation_target}",
        )
    wanted = group.current_lambda * bounds.utilisation_target / max(utilisation, 1e-6)
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
        "mark_fraction_mean": mean([q.mark_fraction or 0.0 for q in measured]),
        "occupancy_p95_max_bytes": max(
            (q.occupancy_p95_bytes for q in measured if q.occupancy_p95_bytes is not None),
            default=None,
        ),
        "safe_floor_bytes": standard_threshold_bytes(
            group.speed_gbps, group.rtt_us, bounds.lambda_min
        ),
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
