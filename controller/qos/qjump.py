"""QJUMP network epoch and per-level rate limits (QJUMP, NSDI 2015).

A packet of P bytes from each of n hosts can meet at one output port; serialising them takes
n x P / R, plus the switches' processing delay eps (§3.1, Eq. 1). Hosts are only
mesochronous (same epoch length, unaligned phase), so a port may see two packets from a host
inside one epoch: network epoch = 2n x P / R + eps (§3.1, Eq. 2). A host that sends at most
P bytes per epoch at the top level can never queue behind more than one epoch's worth.

Level i relaxes that by a throughput factor f_i (§3.2, Eq. 4: assume only n / f_i hosts send
at once): it may send f_i x P bytes per epoch. Higher 802.1Q priority levels get smaller
factors, so a high priority is not free: it costs rate (§3.2).

How a host limiter holds f_i x P "per epoch" is a per-fabric choice (``QjumpWindow``): per
host epoch as the paper's limiter does, or in every sliding epoch-long window at a rate cost
(docs/algorithms.md §5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from controller.qos.checks import (
    invalid,
    require_int_at_least,
    require_non_negative,
    require_positive,
    snap,
)
from controller.qos.units import BITS_PER_BYTE, transmission_time_s

PRIORITY_LEVELS = range(8)  # IEEE 802.1Q priorities 0..7; 7 is served first
# tc holds a tbf bucket as whole microseconds of sending at the rate (iproute2
# tc_calc_xmittime), then whole 64 ns ticks: one microsecond step is 15 or 16 ticks, at most
# 1.024 us. A bucket asked so that the kernel holds at least P may hold up to one step more.
TC_BURST_STEP_S = 1.024e-6
# tc keeps a rate in bytes/s and is given it in the few digits it prints back, at most 0.1 %
# below the rate asked (iproute2 print_rate; the host module applies that form).
TC_RATE_ROUNDING = 1e-3


class QjumpWindow(StrEnum):
    """Which epoch-long windows a host's level limiter keeps to f x P bytes.

    ``aligned``: the paper's limiter (§4: a token bucket refilled with f x P at each of the
    host's epochs); a window straddling a refill may carry up to 2 f x P, which is what the
    mesochronous epoch of Eq. 2 provisions for. ``sliding``: every window of one epoch, at
    any phase, carries at most floor(f) packets (each charged as P), so at most f x P bytes.
    """

    ALIGNED = "aligned"
    SLIDING = "sliding"


def epoch_seconds(
    n_hosts: int,
    packet_bytes: int,
    rate_bps: float,
    epsilon_s: float,
    *,
    mesochronous: bool = True,
) -> float:
    """Network epoch in seconds: 2nP/R + eps (Eq. 2), or nP/R + eps (Eq. 1) if not mesochronous.

    ``packet_bytes`` is P, ``rate_bps`` is R (the slowest edge link, bit/s), ``epsilon_s`` the
    cumulative switch processing delay. Eq. 1 holds when all hosts share one clock (or for a
    single switch, as in the paper's Fig. 11 bound); Eq. 2 is the general, safe default.
    Example (§5): n = 1000, P = 256 B, R = 10 Gb/s -> 2 x 1000 x 0.2048 us = 409.6 us + eps.
    """
    require_int_at_least("n_hosts", n_hosts, 1)
    require_int_at_least("packet_bytes", packet_bytes, 1)
    require_positive("rate_bps", rate_bps)
    require_non_negative("epsilon_s", epsilon_s)
    packets_in_flight = 2 * n_hosts if mesochronous else n_hosts
    return packets_in_flight * transmission_time_s(packet_bytes, rate_bps) + epsilon_s


def level_rate_bps(factor: float, packet_bytes: int, epoch_s: float) -> float:
    """Rate limit of a level with throughput factor f: f x P bytes per epoch, in bit/s.

    Example (ns-2 runs, camsas/qjump-ns2): f = 6, P = 1500 B, epoch
    1.05 ms -> 72 000 bit per epoch -> 68.57 Mb/s.
    """
    require_positive("factor", factor)
    require_int_at_least("packet_bytes", packet_bytes, 1)
    require_positive("epoch_s", epoch_s)
    return factor * packet_bytes * BITS_PER_BYTE / epoch_s


def budget_bytes(factor: float, packet_bytes: int) -> int:
    """floor(f x P): rounded down so a host never admits more than its share of the bound."""
    return math.floor(snap(factor * packet_bytes))


@dataclass(frozen=True, slots=True)
class QjumpLevel:
    """One QJUMP level: its 802.1Q priority, throughput factor, rate limit and byte budget.

    ``bytes_per_epoch`` is floor(f x P): the token bucket a host refills every epoch. It is
    rounded down so a host never admits more than the level's share of the bound.
    """

    level: int
    factor: float
    rate_bps: float
    bytes_per_epoch: int


def plan_levels(
    n_hosts: int,
    packet_bytes: int,
    rate_bps: float,
    epsilon_s: float,
    factors: Mapping[int, float],
    *,
    mesochronous: bool = True,
) -> list[QjumpLevel]:
    """Rate limits for every configured level, ordered by level (0 first).

    Refused, naming ``factors[<level>]``: a level outside 0..7; a factor <= 0 or so small that
    f x P is under one byte; a level whose
    rate would exceed the line rate R; a higher level with a larger factor than a lower one
    (§3.2: "higher priorities receiving smaller values", otherwise priority is free again).
    """
    epoch = epoch_seconds(n_hosts, packet_bytes, rate_bps, epsilon_s, mesochronous=mesochronous)
    planned: list[QjumpLevel] = []
    for level in sorted(factors):
        path = f"factors[{level}]"
        if level not in PRIORITY_LEVELS:
            raise invalid(path, "QJUMP levels are 802.1Q priorities 0..7")
        factor = factors[level]
        if not math.isfinite(factor) or factor <= 0:
            raise invalid(path, f"throughput factor must be > 0, got {factor!r}")
        rate = level_rate_bps(factor, packet_bytes, epoch)
        if rate > rate_bps * (1 + 1e-9):
            raise invalid(path, f"factor {factor} gives {rate:.0f} bit/s, above the line rate")
        if planned and factor > planned[-1].factor:
            below = planned[-1]
            raise invalid(
                path,
                f"factor {factor} at level {level} exceeds {below.factor} at lower level "
                f"{below.level}; a higher priority must have a smaller (or equal) factor",
            )
        budget = budget_bytes(factor, packet_bytes)
        if budget < 1:
            raise invalid(path, f"factor {factor} leaves less than one byte per epoch")
        planned.append(QjumpLevel(level, factor, rate, budget))
    return planned


@dataclass(frozen=True, slots=True)
class HostLimiter:
    """One level's token bucket on a host: rate (bit/s), bucket depth and queue (bytes).

    ``queue_bytes`` is None when the host's default (the bucket, at least P) applies.
    ``charge_bytes`` is the least a packet costs in tokens (tbf's ``mpu``, tc-tbf(8)); None
    charges every packet its own length. ``queue_packets`` counts the queue in packets (a
    pfifo under the tbf) instead of bytes: where every packet costs P, a byte limit would let
    small packets queue up many epochs' worth of tokens.
    """

    rate_bps: int
    bucket_bytes: int
    queue_bytes: int | None = None
    charge_bytes: int | None = None
    queue_packets: int | None = None


def host_limiter(
    level: QjumpLevel,
    packet_bytes: int,
    epoch_s: float,
    window: QjumpWindow,
    release_jitter_s: float = 0.0,
) -> HostLimiter:
    """The token bucket that keeps ``level`` to its budget B = floor(f x P) per epoch E.

    A token bucket of depth b and rate r admits up to b + r x tau bytes in any window tau.
    ``aligned``: b = B, r = B / E (the paper's refill per host epoch; 2B in a sliding window).
    ``sliding``: every packet is charged as P (tbf ``mpu`` = P; no packet is larger, tbf
    ``mtu`` = P), b = P and r x E = k x P - margin with k = floor(f) packets. N packets
    leaving inside a half-open window [t, t + E) cost N x P < b + r x E < (k + 1) x P
    tokens, so N <= k and the window carries at most k x P <= f x P bytes whatever the
    packets' sizes; f = 1 is one packet per epoch. A non-integer f buys floor(f) packets: a
    (k + 1)-th would need (k + 1) x P tokens, above f x P. The margin is one step of the
    kernel's burst rounding (``TC_BURST_STEP_S`` of sending, plus a byte), which the host
    may add to hold P. The queue holds max(1, floor(r x E / P)) P-byte packets, so one
    waits at most max(E, P / r); refused with ``QjumpWindowTooSmall`` below one packet
    (f < 1) or when the epoch is too short for the rounding margin.

    ``release_jitter_s`` (J, ``sliding`` only): the host may put a packet on the wire up to J
    later than the limiter let it out, so two releases t apart may leave t - J apart. The
    refill then spans E + J (r = (k x P - margin) / (E + J)): k + 1 packets take more than
    E + J to release, so every window of one epoch holds k packets at the wire as well.
    """
    require_int_at_least("packet_bytes", packet_bytes, 1)
    require_positive("epoch_s", epoch_s)
    require_non_negative("release_jitter_s", release_jitter_s)
    if window is QjumpWindow.ALIGNED:
        return HostLimiter(math.floor(level.rate_bps), level.bytes_per_epoch)
    packets = level.bytes_per_epoch // packet_bytes
    window_bytes = packets * packet_bytes
    margin = math.ceil(window_bytes * TC_BURST_STEP_S / epoch_s) + 1
    refill_bytes = window_bytes - margin  # r x E
    rate_bps = math.floor(refill_bytes * BITS_PER_BYTE / (epoch_s + release_jitter_s))
    if packets < 1 or rate_bps < 1:
        raise invalid(
            f"factors[{level.level}]",
            f"QjumpWindowTooSmall: a sliding epoch window allows f x P = "
            f"{level.bytes_per_epoch} B, and the limiter charges every packet as P = "
            f"{packet_bytes} B: it needs f >= 1 and an epoch above the kernel's burst "
            f"rounding ({TC_BURST_STEP_S * 1e6:.3f} us); got f = {level.factor:g}, "
            f"E = {epoch_s * 1e6:.3f} us",
        )
    # The host applies the rate as tc prints it, up to TC_RATE_ROUNDING lower: the queue is
    # sized in whole packets for that rate, so those ahead drain within one epoch.
    drained = rate_bps * (1 - TC_RATE_ROUNDING) * epoch_s / BITS_PER_BYTE
    queue_packets = max(1, math.floor(drained / packet_bytes))
    return HostLimiter(
        rate_bps, packet_bytes, charge_bytes=packet_bytes, queue_packets=queue_packets
    )
