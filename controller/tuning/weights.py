"""DWRR weights that follow measured demand inside the operator's ranges.

DWRR gives each backlogged queue w_i / sum(w) of the port (MQ-ECN NSDI'16 §2: the normalised
weight is the queue's minimum guaranteed rate). A class that sends less than that share does
not need it: the rule lends the unused part to the classes that are backlogged, and takes it
back when demand returns. Measured throughput understates the demand of a backlogged class
(it sends what the scheduler gives it), so "backlogged" is read from the queue itself: it
marks or drops, or it sends at least its share.

On the bottleneck port (the DWRR port with the highest utilisation, where the scheduler
arbitrates):

1. A lender (not backlogged, sending r_i < its share s_i of the line rate) is offered
   r_i x (1 + ``HEADROOM``): room to grow before the next decision.
2. The borrowers (everyone else) share what is left in proportion to their current weights.
3. Shares become weights on the current total scale, clamped to each class's
   [weight_min, weight_max] (unset: the weight itself, so a class without a range never
   moves), then the stability guards (controller/tuning/stability.py), then the range again:
   no class ever goes below its minimum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.tuning.evidence import Change, Evidence
from controller.tuning.stability import ChangeTimes, StabilityPolicy, guard
from controller.tuning.summary import QueueSummary

SOURCE = "DWRR guaranteed share w_i / sum(w) (MQ-ECN NSDI'16 §2); lending of unused share"
HEADROOM = 0.2  # a lender keeps 20 % above what it sent
MARKING = 0.01
DROPPING = 0.0  # any drop means the queue overflowed: backlogged


@dataclass(frozen=True, slots=True)
class WeightRange:
    service_class: str
    weight: int
    weight_min: int
    weight_max: int


def parameter_key(service_class: str) -> str:
    return f"weight/{service_class}"


def tune_weights(
    ranges: Sequence[WeightRange],
    queues: Sequence[QueueSummary],
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> list[Change]:
    """One Change per class whose range lets it move (held ones included, with the reason);
    nothing when no class has a range or the bottleneck port has no measurement."""
    movable = [r for r in ranges if r.weight_min < r.weight_max]
    if not movable:
        return []
    by_class = {r.service_class: r for r in ranges}
    port_queues = _bottleneck(queues, set(by_class))
    if port_queues is None:
        return []
    total = sum(r.weight for r in ranges)
    shares, backlogged = _target_shares(ranges, port_queues, total)
    inputs = _inputs(ranges, port_queues, backlogged)
    changes: list[Change] = []
    for item in movable:
        wanted = shares[item.service_class] * total
        ranged = min(max(wanted, item.weight_min), item.weight_max)
        bounds = () if ranged == wanted else (_range_note(item, wanted, ranged),)
        key = parameter_key(item.service_class)
        guarded = guard(
            key,
            item.weight,
            round(ranged),
            now_s=now_s,
            last_changed=last_changed,
            policy=policy,
            integer=True,
        )
        final = int(min(max(guarded.value, item.weight_min), item.weight_max))
        outputs = {
            "share_wanted": round(shares[item.service_class], 6),
            "weight_wanted": round(wanted, 3),
            "weight": final,
        }
        changes.append(
            Change(
                parameter=key,
                current=item.weight,
                proposed=final,
                evidence=Evidence("dwrr.weight", SOURCE, inputs, outputs, bounds + guarded.bounds),
                held=(guarded.held or "no change") if final == item.weight else None,
            )
        )
    return changes


def _bottleneck(
    queues: Sequence[QueueSummary], classes: set[str]
) -> dict[str, QueueSummary] | None:
    """The queues of the busiest port that carries the DWRR classes, by class."""
    ports: dict[tuple[str, str], dict[str, QueueSummary]] = {}
    for queue in queues:
        if queue.service_class in classes and queue.tx_bytes_per_s is not None:
            ports.setdefault((queue.switch, queue.port), {})[queue.service_class] = queue
    if not ports:
        return None

    def utilisation(item: dict[str, QueueSummary]) -> float:
        return max((q.utilisation or 0.0) for q in item.values())

    return max(ports.values(), key=utilisation)


def _is_backlogged(queue: QueueSummary | None, share: float) -> bool:
    if queue is None:
        return False
    if (queue.mark_fraction or 0.0) >= MARKING or (queue.dropped_packets_per_s or 0.0) > DROPPING:
        return True
    return _rate_fraction(queue) >= share


def _rate_fraction(queue: QueueSummary) -> float:
    line_bytes = queue.speed_gbps * 1e9 / 8
    return (queue.tx_bytes_per_s or 0.0) / line_bytes


def _target_shares(
    ranges: Sequence[WeightRange], queues: Mapping[str, QueueSummary], total: int
) -> tuple[dict[str, float], list[str]]:
    shares: dict[str, float] = {}
    borrowers: list[WeightRange] = []
    for item in ranges:
        share = item.weight / total
        queue = queues.get(item.service_class)
        if _is_backlogged(queue, share):
            borrowers.append(item)
        else:
            used = _rate_fraction(queue) if queue is not None else 0.0
            shares[item.service_class] = min(share, used * (1 + HEADROOM))
    left = max(0.0, 1.0 - math.fsum(shares.values()))
    borrowed_weight = sum(b.weight for b in borrowers)
    for item in borrowers:
        shares[item.service_class] = left * item.weight / borrowed_weight
    if not borrowers:
        # Nobody is backlogged: nothing to lend to; every class keeps its share.
        shares = {item.service_class: item.weight / total for item in ranges}
    return shares, [b.service_class for b in borrowers]


def _range_note(item: WeightRange, wanted: float, ranged: float) -> str:
    side = "weight_min" if ranged > wanted else "weight_max"
    return f"{side} {ranged:g}: wanted {wanted:.2f}"


def _inputs(
    ranges: Sequence[WeightRange], queues: Mapping[str, QueueSummary], backlogged: list[str]
) -> dict[str, float | int | str | tuple[str, ...] | None]:
    first = next(iter(queues.values()))
    values: dict[str, float | int | str | tuple[str, ...] | None] = {
        "port": f"{first.switch} {first.port}",
        "speed_gbps": first.speed_gbps,
        "backlogged": tuple(backlogged),
    }
    for item in ranges:
        queue = queues.get(item.service_class)
        values[f"{item.service_class}.weight"] = item.weight
        values[f"{item.service_class}.range"] = f"{item.weight_min}..{item.weight_max}"
        values[f"{item.service_class}.tx_bytes_per_s"] = (
            queue.tx_bytes_per_s if queue is not None else None
        )
        values[f"{item.service_class}.mark_fraction"] = (
            queue.mark_fraction if queue is not None else None
        )
    return values
