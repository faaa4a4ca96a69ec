"""Unit conversions used by every QoS algorithm.

Intent carries line rates in Gb/s (10^9 bit/s, the SI unit Ethernet speeds are named in) and
times in microseconds; the algorithms work in bytes and seconds.
"""

from __future__ import annotations

from controller.qos.checks import require_non_negative, require_positive

BITS_PER_BYTE = 8


def gbps_to_bytes_per_s(speed_gbps: float) -> float:
    """Line rate in Gb/s to bytes per second: 10 Gb/s -> 1.25e9 B/s."""
    require_positive("speed_gbps", speed_gbps)
    return speed_gbps * 1e9 / BITS_PER_BYTE


def us_to_s(value_us: float) -> float:
    """Microseconds to seconds."""
    require_non_negative("value_us", value_us)
    return value_us * 1e-6


def transmission_time_s(size_bytes: float, rate_bps: float) -> float:
    """Time to serialise ``size_bytes`` onto a link of ``rate_bps`` bits per second."""
    require_non_negative("size_bytes", size_bytes)
    require_positive("rate_bps", rate_bps)
    return size_bytes * BITS_PER_BYTE / rate_bps
