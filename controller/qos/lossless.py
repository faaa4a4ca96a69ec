"""Lossless (PFC) priorities: headroom per port and priority, DCQCN's ECN thresholds, and the
invariants that keep them safe. Pure; nothing here reads a switch.

Headroom: SONiC's dynamic buffer model, "the well-known formula" of the HLD
(sonic-net/SONiC: doc/qos/dynamically-headroom-calculation.md, section "The well-known
formula"), which the vendor plugin evaluates (sonic-net/sonic-swss:
cfgmgr/buffer_headroom_mellanox.lua). After a priority group sends XOFF, until its peer stops,
the port still receives:

* what the peer sends while XOFF travels and what was on the cable: 2 x cable / v x C, with
  v = 198 000 000 m/s, the speed of light in the medium both sources use;
* what a gearbox on the path holds, twice (there and back);
* what the ASIC's MAC/PHY holds (``mac_phy_delay``);
* what the peer sends before it reacts: IEEE 802.3 Annex 31B.3.7's pause quanta for the speed,
  512 bit times each (or the platform's own ``peer_response_time``);
* one port MTU: a frame the peer had begun when it decided to stop.

That "propagation delay" in bytes is scaled by the cell occupancy (small packets fill whole
cells), and one lossless MTU is added: xoff = lossless_mtu + propagation x occupancy. xon is
the ASIC's pipeline latency. Each is rounded up to 1 KiB; size = xoff + xon (independent
headroom), or xon alone when a shared headroom pool holds the xoff part.

Where this differs from the plugin, on purpose: the cable and gearbox bytes here are the
physical ones (bit/s x s / 8). The plugin's first versions divided the cable bytes by 8 x 1024
with the speed in Mb/s x 10^9, which is 1000/1024 of that; it divides by 8 x 1000 since
sonic-swss#3235 (commit 3943093). The HLD's gearbox term has the same 1000/1024. The plugin's
later, vendor-only terms (byte-weighted small-packet share and its ceiling on the worst-case
factor since #3235, the 8-lane pipeline doubling, the Spectrum-6 compensation) are not here.

DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015): the
switch marks a lossless queue with RED-like ECN, probability rising from 0 at Kmin to Pmax at
Kmax and 1 beyond; the paper's parameters are Kmin = 5 KB, Kmax = 200 KB, Pmax = 1 %. The
paper's buffer guidance is that ECN must act before PFC does: Kmax below the point at which
the queue's ingress priority group sends XOFF.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.errors import HeadroomDoesNotFit, KmaxAboveXoff
from controller.qos.buffers import alpha_of, steady_share
from controller.qos.checks import (
    invalid,
    require_int_at_least,
    require_non_negative,
    require_positive,
    snap,
)
from controller.qos.units import BITS_PER_BYTE

# The speed of light in the cable both the HLD and the plugin use, m/s.
SPEED_OF_LIGHT_IN_MEDIA_M_PER_S = 198_000_000
# The smallest Ethernet frame, which the worst-case cell occupancy is computed for (HLD).
MINIMAL_PACKET_BYTES = 64
# xon, xoff and size are rounded up to this (the plugin's 1024-byte step).
HEADROOM_STEP_BYTES = 1024
# A pause quantum is the time to send 512 bits (IEEE 802.3 Annex 31B).
PAUSE_QUANTUM_BITS = 512
# How many pause quanta a MAC may take to stop after XOFF, per speed in Gb/s: IEEE 802.3
# 31B.3.7 as the HLD tabulates it (100 Mb/s .. 400 Gb/s); 800 Gb/s as the plugin takes it
# (sonic-swss#2860: the 400 Gb/s figure).
PAUSE_QUANTA_BY_GBPS: dict[float, int] = {
    0.1: 1,
    1: 2,
    10: 67,
    25: 80,
    40: 118,
    50: 147,
    100: 394,
    200: 453,
    400: 905,
    800: 905,
}


@dataclass(frozen=True, slots=True)
class HeadroomPlatform:
    """What the headroom formula needs to know of a switch, in bytes and nanoseconds.

    SONiC keeps these in STATE_DB ``ASIC_TABLE`` (cell size; pipeline latency, MAC/PHY delay
    and peer response time in KB there), ``PERIPHERAL_TABLE`` (gearbox delay, ns) and CONFIG_DB
    ``LOSSLESS_TRAFFIC_PATTERN`` (lossless MTU, small-packet percentage), per the HLD's
    "Data schema design". ``peer_response_bytes`` None takes IEEE 802.3's pause quanta for
    the port's speed, as the HLD and the plugin (since sonic-swss#1930) do.
    """

    cell_bytes: int
    pipeline_latency_bytes: float
    mac_phy_delay_bytes: float
    peer_response_bytes: float | None = None
    small_packet_pct: float = 100.0
    lossless_mtu_bytes: int = 1024
    gearbox_delay_ns: float = 0.0

    def __post_init__(self) -> None:
        require_int_at_least("cell_bytes", self.cell_bytes, 1)
        require_non_negative("pipeline_latency_bytes", self.pipeline_latency_bytes)
        require_non_negative("mac_phy_delay_bytes", self.mac_phy_delay_bytes)
        if self.peer_response_bytes is not None:
            require_non_negative("peer_response_bytes", self.peer_response_bytes)
        if not math.isfinite(self.small_packet_pct) or not 0 <= self.small_packet_pct <= 100:
            raise invalid("small_packet_pct", f"must be in 0..100, got {self.small_packet_pct!r}")
        require_int_at_least("lossless_mtu_bytes", self.lossless_mtu_bytes, 1)
        require_non_negative("gearbox_delay_ns", self.gearbox_delay_ns)


@dataclass(frozen=True, slots=True)
class Headroom:
    """One lossless priority group's profile: SONiC ``BUFFER_PROFILE`` xon, xoff and size."""

    xon_bytes: int
    xoff_bytes: int
    size_bytes: int


def _step_up(value: float) -> int:
    return math.ceil(snap(value) / HEADROOM_STEP_BYTES) * HEADROOM_STEP_BYTES


def worst_case_factor(cell_bytes: int) -> float:
    """How many bytes of buffer a byte of minimal-size packets takes (HLD): cell / 64 when a
    cell holds more than two minimal packets, else 2 x cell / (1 + cell)."""
    require_int_at_least("cell_bytes", cell_bytes, 1)
    if cell_bytes > 2 * MINIMAL_PACKET_BYTES:
        return cell_bytes / MINIMAL_PACKET_BYTES
    return 2 * cell_bytes / (1 + cell_bytes)


def cell_occupancy(cell_bytes: int, small_packet_pct: float) -> float:
    """(100 - p + p x worst-case factor) / 100, p the small-packet percentage (HLD)."""
    factor = worst_case_factor(cell_bytes)
    return (100 - small_packet_pct + small_packet_pct * factor) / 100


def bytes_in_flight(speed_gbps: float, seconds: float) -> float:
    """What a link of ``speed_gbps`` carries in ``seconds``, in bytes (not rounded)."""
    require_positive("speed_gbps", speed_gbps)
    require_non_negative("seconds", seconds)
    return speed_gbps * 1e9 * seconds / BITS_PER_BYTE


def cable_bytes(speed_gbps: float, cable_length_m: float) -> float:
    """One way's bytes on a cable: length / v x C (HLD "kb on cable")."""
    require_non_negative("cable_length_m", cable_length_m)
    return bytes_in_flight(speed_gbps, cable_length_m / SPEED_OF_LIGHT_IN_MEDIA_M_PER_S)


def pause_quanta(speed_gbps: float) -> int:
    """IEEE 802.3 31B.3.7's pause quanta for a speed; refused for a speed it does not list."""
    quanta = PAUSE_QUANTA_BY_GBPS.get(speed_gbps)
    if quanta is None:
        known = ", ".join(f"{speed:g}" for speed in PAUSE_QUANTA_BY_GBPS)
        raise invalid(
            "speed_gbps",
            f"{speed_gbps:g} Gb/s has no pause-quanta figure (known: {known}); declare the "
            "platform's peer_response_bytes",
        )
    return quanta


def peer_response_bytes(speed_gbps: float, platform: HeadroomPlatform) -> float:
    """What the peer still sends after XOFF arrives: the platform's figure, or
    quanta x 512 bits for the speed."""
    if platform.peer_response_bytes is not None:
        return platform.peer_response_bytes
    return pause_quanta(speed_gbps) * PAUSE_QUANTUM_BITS / BITS_PER_BYTE


def headroom(
    speed_gbps: float,
    cable_length_m: float,
    port_mtu_bytes: int,
    platform: HeadroomPlatform,
    *,
    shared_headroom_pool: bool = False,
) -> Headroom:
    """xon, xoff and size of one lossless priority group (HLD "The well-known formula").

    Worked example (SONiC's ACS-MSN2700 pg_profile_lookup.ini, Spectrum-1): cell 96 B, MAC/PHY
    0.8 KB, peer response 3.8 KB, lossless MTU 1024 B, 100 % small packets, port MTU 9216 B,
    100 Gb/s over 300 m: xoff 104 448 B.
    """
    require_int_at_least("port_mtu_bytes", port_mtu_bytes, 1)
    gearbox = bytes_in_flight(speed_gbps, platform.gearbox_delay_ns * 1e-9)
    propagation = (
        port_mtu_bytes
        + 2 * (cable_bytes(speed_gbps, cable_length_m) + gearbox)
        + platform.mac_phy_delay_bytes
        + peer_response_bytes(speed_gbps, platform)
    )
    occupancy = cell_occupancy(platform.cell_bytes, platform.small_packet_pct)
    xoff = _step_up(platform.lossless_mtu_bytes + propagation * occupancy)
    xon = _step_up(platform.pipeline_latency_bytes)
    size = xon if shared_headroom_pool else _step_up(xoff + xon)
    return Headroom(xon_bytes=xon, xoff_bytes=xoff, size_bytes=size)


@dataclass(frozen=True, slots=True)
class DcqcnEcn:
    """A lossless queue's ECN marking: no mark below Kmin, probability rising to Pmax at Kmax,
    every packet above (DCQCN's RED-like marking; SONiC ``WRED_PROFILE`` green thresholds and
    ``green_drop_probability`` in percent)."""

    kmin_bytes: int
    kmax_bytes: int
    pmax_pct: int

    def __post_init__(self) -> None:
        require_int_at_least("kmin_bytes", self.kmin_bytes, 1)
        require_int_at_least("kmax_bytes", self.kmax_bytes, 1)
        require_int_at_least("pmax_pct", self.pmax_pct, 1)
        if self.pmax_pct > 100:
            raise invalid("pmax_pct", f"must be at most 100, got {self.pmax_pct}")
        if self.kmin_bytes >= self.kmax_bytes:
            raise invalid(
                "kmin_bytes", f"Kmin {self.kmin_bytes} B must be below Kmax {self.kmax_bytes} B"
            )


# The DCQCN paper's parameters (SIGCOMM 2015, its parameter table: Kmin 5 KB, Kmax 200 KB,
# Pmax 1 %), KB read as 1000 B.
DCQCN_PAPER = DcqcnEcn(kmin_bytes=5_000, kmax_bytes=200_000, pmax_pct=1)


def xoff_point_bytes(shared_pool_bytes: int, dynamic_th: int, lossless_groups: int) -> int:
    """Where a lossless priority group sends XOFF: its shared-buffer limit, alpha x the pool's
    free space (SAI's dynamic threshold, ``controller/qos/buffers.py``), taken when all
    ``lossless_groups`` of the port are congested together: alpha / (1 + N alpha) of the
    pool, the lowest it goes. Rounded down: the check it feeds must hold at the real point."""
    require_int_at_least("shared_pool_bytes", shared_pool_bytes, 1)
    share = steady_share(alpha_of(dynamic_th), lossless_groups)
    return math.floor(snap(shared_pool_bytes * share))


@dataclass(frozen=True, slots=True)
class LosslessQueue:
    """One lossless priority on a port: its PFC priority and its queue's ECN (None: the queue
    does not mark, so there is no Kmax to hold below XOFF)."""

    priority: int
    ecn: DcqcnEcn | None


@dataclass(frozen=True, slots=True)
class PortLossless:
    """What a port's lossless priorities take: each group's headroom, the shared pool left
    beside them, and the XOFF point in it."""

    headroom: Headroom
    headroom_total_bytes: int
    shared_pool_bytes: int
    xoff_point_bytes: int


def port_lossless(
    port: str,
    buffer_bytes: int,
    queues: Sequence[LosslessQueue],
    headroom_of_group: Headroom,
    *,
    dynamic_th: int = 0,
    path: str = "port",
) -> PortLossless:
    """Check one port's lossless priorities against its buffer, in the order given.

    * HeadroomDoesNotFit: the headroom of every lossless group (size each) must leave a shared
      pool, headroom + shared = the port's buffer with shared > 0;
    * KmaxAboveXoff: each queue's Kmax must be below the XOFF point in that pool.

    Every group of a port has one headroom (speed, cable and MTU are the port's).
    ``dynamic_th`` 0 is SONiC's default for the lossless groups (``DEFAULT_LOSSLESS_BUFFER_
    PARAMETER|AZURE`` ``default_dynamic_th`` "0" in sonic-buildimage's Configuration.md, and
    what sonic-utilities' db_migrator writes).
    """
    require_int_at_least("buffer_bytes", buffer_bytes, 1)
    if not queues:
        raise invalid("queues", f"{port} has no lossless priority to check")
    total = 0
    for queue in queues:
        total += headroom_of_group.size_bytes
        if total >= buffer_bytes:
            raise HeadroomDoesNotFit(path, port, queue.priority, total, buffer_bytes)
    shared = buffer_bytes - total
    point = xoff_point_bytes(shared, dynamic_th, len(queues))
    for queue in queues:
        if queue.ecn is not None and queue.ecn.kmax_bytes >= point:
            raise KmaxAboveXoff(path, port, queue.priority, queue.ecn.kmax_bytes, point)
    return PortLossless(headroom_of_group, total, shared, point)
