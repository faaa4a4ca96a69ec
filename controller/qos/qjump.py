"""QJUMP network epoch and per-level rate limits (QJUMP, NSDI 2015).

A packet of P bytes from each of n hosts can meet at one output port; serialising them takes
n x P / R, plus the switches' processing delay eps (§3.1, Eq. 1). Hosts are only
mesochronous (same epoch length, unaligned phase), so a port may see two packets from a host
inside one epoch: network epoch = 2n x P / R + eps (§3.1, Eq. 2). A host that sends at most
P bytes per epoch at the top level can never queue behind more than one epoch's worth.

Level i relaxes that by a throughput factor f_i (§3.2, Eq. 4: assume only n / f_i hosts send
at once): it may send f_i x P bytes per epoch. Higher 802.1Q priority levels get smaller
factors, so a high priority is not free: it costs rate (§3.2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from controller.qos.checks import (
    invalid,
    require_int_at_least,
    require_non_negative,
    require_positive,
    snap,
)
from controller.qos.units import BITS_PER_BYTE, transmission_time_s

PRIORITY_LEVELS = range(8)  # IEEE 802.1Q priorities 0..7; 7 is served first


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


def factor_for_rate(target_bps: float, packet_bytes: int, epoch_s: float) -> float:
    """The throughput factor that gives a level ``target_bps``: f = T x epoch / (8P).

    This is §6.5's f_i = n T_i / R with the epoch written out, so it stays right when eps is
    not negligible. Example (§6.5): n = 12 at 10 Gb/s, memcached at 5 Gb/s -> f = 6 with the
    single-switch epoch nP/R.
    """
    require_positive("target_bps", target_bps)
    require_int_at_least("packet_bytes", packet_bytes, 1)
    require_positive("epoch_s", epoch_s)
    return target_bps * epoch_s / (packet_bytes * BITS_PER_BYTE)


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
        budget = math.floor(snap(factor * packet_bytes))
        if budget < 1:
            raise invalid(path, f"factor {factor} leaves less than one byte per epoch")
        planned.append(QjumpLevel(level, factor, rate, budget))
    return planned
