"""ECN marking thresholds for multi-queue ports (MQ-ECN, NSDI 2016).

Three ways to set a queue's marking threshold, all in bytes:

* standard: every queue gets K = C x RTT x lambda (§2, Eq. 1), the single-queue DCTCP rule;
* per-queue minimum: K_i = w_i / sum(w) x K (§2, Eq. 2), a static split of K by weight;
* MQ-ECN: K_i = min(quantum_i / T_round, C) / C x K (§3.2, Eq. 5), which moves with the
  queue's current weighted fair-share rate. The on-switch agent evaluates it; the controller
  computes the bounds it may move between (``mqecn_bounds``) and the EWMA constants.

Rounding is stated per function: a threshold the controller writes is a whole number of
bytes, and the direction of rounding is chosen so the rule's guarantee survives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.qos.checks import (
    invalid,
    require_fraction,
    require_int_at_least,
    require_non_negative,
    require_positive,
    snap,
)
from controller.qos.units import gbps_to_bytes_per_s, us_to_s

# MQ-ECN's EWMA gain for the round time: estimate_round_alpha_ = 0.75 in the reference ns-2
# code and "beta in (0, 1)" in §3.3 Eq. 6 (MQ-ECN-NS2 queue/dwrr.cc).
DEFAULT_BETA = 0.75


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


def mqecn_threshold_bytes(
    quantum_bytes: float, t_round_s: float, capacity_bytes_per_s: float, k_bytes: int
) -> int:
    """K_i = min(quantum_i / T_round, C) / C x K (MQ-ECN, NSDI 2016 §3.2, Eq. 5).

    quantum_i / T_round is queue i's output rate over the last round: its weighted fair share
    when it is backlogged, a safe cap on its rate otherwise. With no round-time estimate yet
    (T_round ~ 0) the queue gets K, as the reference ns-2 code does. Rounded DOWN, the same
    direction as the per-queue minimum it equals when all queues are busy.
    """
    require_positive("quantum_bytes", quantum_bytes)
    require_non_negative("t_round_s", t_round_s)
    require_positive("capacity_bytes_per_s", capacity_bytes_per_s)
    require_int_at_least("k_bytes", k_bytes, 1)
    # A round shorter than a nanosecond is no estimate at all (at 800 Gb/s a single byte
    # takes 10 ps, a minimum packet ~0.6 ns), so it is treated as "no estimate yet".
    if t_round_s < 1e-9:
        return k_bytes
    share = min(quantum_bytes / t_round_s, capacity_bytes_per_s) / capacity_bytes_per_s
    return math.floor(snap(share * k_bytes))


def ewma_round_time(previous_s: float, sample_s: float, beta: float = DEFAULT_BETA) -> float:
    """T_round <- beta x T_round + (1 - beta) x T_sample (MQ-ECN, NSDI 2016 §3.3, Eq. 6)."""
    require_non_negative("previous_s", previous_s)
    require_non_negative("sample_s", sample_s)
    require_fraction("beta", beta)
    return beta * previous_s + (1.0 - beta) * sample_s


def idle_decay(
    t_round_s: float, idle_s: float, t_idle_s: float, beta: float = DEFAULT_BETA
) -> float:
    """Decay T_round while the port idles (MQ-ECN, NSDI 2016 §3.3).

    The paper sets T_round <- beta x T_round, "as if we get a T_sample of 0", once the port
    has been idle for T_idle. Like the reference code, every whole T_idle slot of the idle
    period counts as one such sample: T_round x beta^floor(idle / T_idle). Without this a
    port that goes quiet keeps the long round of its last busy period, and the first queue
    to wake would be throttled to a share it no longer has to give up.
    """
    require_non_negative("t_round_s", t_round_s)
    require_non_negative("idle_s", idle_s)
    require_positive("t_idle_s", t_idle_s)
    require_fraction("beta", beta)
    slots = math.floor(round(idle_s / t_idle_s, 9))
    return t_round_s * beta**slots


def idle_slot_seconds(idle_bytes: int, capacity_bytes_per_s: float) -> float:
    """T_idle as the time to send ``idle_bytes`` at line rate.

    The reference code uses one MTU: 1500 B -> 1.2 us at 10 Gb/s (ns-2) and 12 us at 1 Gb/s
    (the Linux qdisc's idle_interval_ns = 12000) (MQ-ECN-NS2 queue/dwrr.cc).
    """
    require_int_at_least("idle_bytes", idle_bytes, 1)
    require_positive("capacity_bytes_per_s", capacity_bytes_per_s)
    return idle_bytes / capacity_bytes_per_s
