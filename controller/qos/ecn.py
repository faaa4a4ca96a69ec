"""ECN marking thresholds for multi-queue ports (MQ-ECN, NSDI 2016).

Three ways to set a queue's marking threshold, all in bytes:

* standard: every queue gets K = C x RTT x lambda (§2, Eq. 1), the single-queue DCTCP rule;
* per-queue minimum: K_i = w_i / sum(w) x K (§2, Eq. 2), a static split of K by weight;
* MQ-ECN: K_i = min(quantum_i / T_round, C) / C x K (§3.2, Eq. 5), which moves with the
  queue's current weighted fair-share rate. The on-switch agent evaluates it
  (``agents/qos-core/src/mqecn.rs``, over the water-filled fair share; the per-packet rule
  with the T_round estimate is ``sim/vasic/src/ideal.rs``); the controller computes only the
  bounds it may move between (``mqecn_bounds``).

Rounding is stated per function: a threshold the controller writes is a whole number of
bytes, and the direction of rounding is chosen so the rule's guarantee survives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.qos.checks import (
    invalid,
    require_int_at_least,
    require_positive,
    snap,
)
from controller.qos.units import gbps_to_bytes_per_s, us_to_s


def standard_threshold_bytes(speed_gbps: float, rtt_us: float, ecn_lambda: float) -> int:
    """K = C x RTT x lambda in bytes, C in bytes/s (MQ-ECN, NSDI 2016 §2, Eq. 1).

    Rounded UP to a whole byte: Eq. 1 is the threshold needed "to fully utilize the link
    bandwidth", a lower bound, so rounding down could cost throughput while rounding up costs
    less than one byte of queue. Examples: 10 Gb/s x 85.2 us x 1 = 106 500 B; 1 Gb/s x 250 us
    x 1 = 31 250 B (the MQ-ECN testbed's "32 KB").
    """
    capacity = gbps_to_bytes_per_s(speed_gbps)
    require_positive("rtt_us", rtt_us)
    require_positive("ecn_lambda", ecn_lambda)
    return math.ceil(snap(capacity * us_to_s(rtt_us) * ecn_lambda))


def per_queue_minimum_bytes(
    k_bytes: int, weight: int, total_weight: int, *, floor_bytes: int = 0
) -> int:
    """K_i = w_i / sum(w) x K (MQ-ECN, NSDI 2016 §2, Eq. 2), never below ``floor_bytes``.

    Rounded DOWN: Eq. 2's point is that sum(K_i) = K, so the port's total marking point
    stays at the standard threshold however many queues are busy; rounding down keeps the sum
    at or below K. ``floor_bytes`` (e.g. one MTU) keeps a queue able to hold a packet before
    marking, because a threshold below one packet marks every packet of that queue.
    Example (MQ-ECN §2): K = 16 packets, 8 equal queues -> 2 packets each.
    """
    require_int_at_least("k_bytes", k_bytes, 1)
    require_int_at_least("weight", weight, 1)
    require_int_at_least("total_weight", total_weight, 1)
    require_int_at_least("floor_bytes", floor_bytes, 0)
    if weight > total_weight:
        raise invalid("weight", f"{weight} exceeds the port's total weight {total_weight}")
    # Integer arithmetic: exact floor of k * w / sum(w), no float rounding to reason about.
    return max(k_bytes * weight // total_weight, floor_bytes)


@dataclass(frozen=True, slots=True)
class ThresholdBounds:
    """Where the agent may move one queue's threshold, and what it falls back to.

    ``floor_bytes <= static_bytes <= ceiling_bytes`` always holds.
    """

    floor_bytes: int
    ceiling_bytes: int
    static_bytes: int


def mqecn_bounds(k_bytes: int, weight: int, total_weight: int, mtu_bytes: int) -> ThresholdBounds:
    """The floor and ceiling an MQ-ECN threshold lives between, and the static fallback.

    Why these values (MQ-ECN, NSDI 2016 §3.2):

    * ceiling = K. Eq. 5 caps the fair-share rate at C, so min(quantum_i / T_round, C) / C is
      at most 1 and K_i never exceeds K: a queue alone on the port may use the standard
      threshold, which is what keeps MQ-ECN work-conserving.
    * floor = the per-queue minimum (Eq. 2), but at least one MTU. When every queue is
      backlogged a round serves each quantum once, T_round = sum(quantum) / C, and Eq. 5
      gives exactly w_i / sum(w) x K; a longer round is impossible in steady state, so a
      lower value can only come from a noisy T_round estimate and is clamped away. One MTU
      because a threshold under one packet marks every packet of the queue.
    * static fallback = the floor: if the agent stops (stale config, crash) the queue keeps the
      per-queue minimum, which never over-fills the buffer whatever the load (§2: the sum of
      the K_i is K), at the price of throughput when few queues are active.

    If K itself is under one MTU the ceiling is raised to the floor so floor <= ceiling.
    """
    require_int_at_least("mtu_bytes", mtu_bytes, 1)
    floor = per_queue_minimum_bytes(k_bytes, weight, total_weight, floor_bytes=mtu_bytes)
    return ThresholdBounds(floor_bytes=floor, ceiling_bytes=max(k_bytes, floor), static_bytes=floor)
