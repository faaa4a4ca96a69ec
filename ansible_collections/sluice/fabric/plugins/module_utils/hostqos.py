# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure validation and rendering of sluice's host QoS variables (schema: docs/hosts.md).

Shared by the host modules of this collection: Ansible ships this file to each host next to
the module that imports it. Nothing here touches the system; every function takes plain data
and either returns plain data or raises ``SchemaError`` naming the offending field, so a bad
variable fails the task with a clear message before anything changes.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

QJUMP_LEVELS = range(8)  # 802.1p priorities 0..7 (QJUMP, NSDI 2015 §4: eight levels)
HTB_MAJOR = 0x1
HTB_PARENT_MINOR = 0x1
# Level L lives in class 1:(0x10 + L), so SO_PRIORITY = 0x10010 + L selects it directly: HTB
# looks a packet's skb->priority up as a class id before any filter runs.
HTB_LEVEL_MINOR_BASE = 0x10
DEVICE_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
SYSCTL_RE = re.compile(r"^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$")
CGROUP_RE = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")
ECN_KEYS = {"tcp_ecn", "congestion_control", "route_rto_min"}
PROTOCOLS = ("tcp", "udp", "sctp", "dccp")
# Chain priorities: DSCP marking at mangle (-150); PIAS after it (-140) so a PIAS stage
# rewrites the class mark for the flows it covers.
DSCP_CHAIN_PRIORITY = -150
PIAS_CHAIN_PRIORITY = -140


class SchemaError(ValueError):
    """A host variable breaks the schema; the message starts with the field path."""


def _fail(path: str, reason: str) -> SchemaError:
    return SchemaError(f"{path}: {reason}")


def _require_mapping(
    value: Any, path: str, allowed: set[str], required: set[str]
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _fail(path, f"unknown keys {unknown}; allowed {sorted(allowed)}")
    missing = sorted(required - set(value))
    if missing:
        raise _fail(path, f"missing keys {missing}")
    return value


def _int(value: Any, path: str, low: int, high: int | None = None) -> int:
    # bool is an int in Python; a YAML 'yes' must not pass as 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise _fail(path, f"must be {bound}, got {value}")
    return value


# ---------------------------------------------------------------- sysctl / ECN


def route_rto_min(ecn: Any, path: str = "sluice_ecn") -> dict[str, int]:
    """``sluice_ecn.route_rto_min`` as {prefix: rto_min in ms}. A lower minimum RTO on the
    data-center routes lets TCP recover from a loss in a few RTTs instead of 200 ms."""
    spec = _require_mapping(ecn, path, ECN_KEYS, {"tcp_ecn"})
    routes = spec.get("route_rto_min", [])
    if not isinstance(routes, list):
        raise _fail(f"{path}.route_rto_min", "must be a list of {prefix, rto_min_ms}")
    wanted: dict[str, int] = {}
    for index, raw in enumerate(routes):
        where = f"{path}.route_rto_min[{index}]"
        item = _require_mapping(raw, where, {"prefix", "rto_min_ms"}, {"prefix", "rto_min_ms"})
        try:
            prefix = str(ipaddress.ip_network(str(item["prefix"]), strict=True))
        except ValueError as exc:
            raise _fail(f"{where}.prefix", str(exc)) from exc
        if prefix in wanted:
            raise _fail(f"{where}.prefix", f"{prefix} appears twice")
        wanted[prefix] = _int(item["rto_min_ms"], f"{where}.rto_min_ms", 1, 60_000)
    return wanted


def ecn_sysctls(ecn: Any, path: str = "sluice_ecn") -> dict[str, str]:
    """``sluice_ecn`` to the sysctls it sets. Whether the congestion control is offered by
    the kernel is checked on the host (``check_congestion_control``). The route part is
    validated here too, so a bad route entry fails before any sysctl changes."""
    spec = _require_mapping(ecn, path, ECN_KEYS, {"tcp_ecn"})
    route_rto_min(ecn, path)
    values = {"net.ipv4.tcp_ecn": str(_int(spec["tcp_ecn"], f"{path}.tcp_ecn", 0, 2))}
    if "congestion_control" in spec:
        name = spec["congestion_control"]
        if not isinstance(name, str) or not re.match(r"^[a-z0-9_]{1,16}$", name):
            raise _fail(f"{path}.congestion_control", f"not a congestion control name: {name!r}")
        values["net.ipv4.tcp_congestion_control"] = name
    return values


def check_congestion_control(values: dict[str, str], available: str, allowed: str | None) -> None:
    """Refuse a congestion control the kernel does not offer (e.g. dctcp on a kernel built
    without it) instead of letting the write fail half-way. Outside the initial network
    namespace the kernel only lets a namespace pick from ``tcp_allowed_congestion_control``
    (else EPERM), so ``allowed`` is given there."""
    wanted = values.get("net.ipv4.tcp_congestion_control")
    if wanted is None:
        return
    if wanted not in available.split():
        raise _fail(
            "sluice_ecn.congestion_control",
            f"{wanted!r} is not offered by this kernel (available: {available.strip()})",
        )
    if allowed is not None and wanted not in allowed.split():
        raise _fail(
            "sluice_ecn.congestion_control",
            f"{wanted!r} may not be chosen inside a network namespace on this host "
            f"(net.ipv4.tcp_allowed_congestion_control: {allowed.strip()})",
        )


def sysctl_path(name: str) -> str:
    if not SYSCTL_RE.match(name) or ".." in name:
        raise _fail("values", f"not a sysctl name: {name!r}")
    return "/proc/sys/" + name.replace(".", "/")


# ---------------------------------------------------------------- HTB / QJUMP


# tc converts a burst to a transmit time in whole microseconds before the kernel turns it into
# 64 ns ticks (iproute2 tc_calc_xmittime: the time is an unsigned int of microseconds), so the
# kernel holds a burst in steps of rate / 8 x 1 us bytes: 1.25 B at 10 Mbit/s, 1250 B at 10 Gbit/s.
MICROSECONDS_PER_SECOND = 1_000_000
NANOSECONDS_PER_TICK = 64  # the kernel's psched tick (PSCHED_SHIFT = 6)
TICKS_PER_MICROSECOND_X8 = 125  # 1000 / 64 = 15.625 ticks per microsecond, times 8


def kernel_burst_bytes(burst_bytes: int, rate_bps: int) -> int:
    """The burst the kernel actually holds when tc is asked for ``burst_bytes`` at ``rate_bps``:
    whole microseconds of sending (tc_calc_xmittime), then whole 64 ns scheduler ticks
    (PSCHED_SHIFT 6), rounded down each time. tc's own printout truncates once more."""
    whole_us = burst_bytes * 8 * MICROSECONDS_PER_SECOND // rate_bps
    ticks = whole_us * TICKS_PER_MICROSECOND_X8 // 8
    return ticks * NANOSECONDS_PER_TICK * rate_bps // (8 * 1_000_000_000)


def burst_holding(packet_bytes: int, rate_bps: int) -> int:
    """The smallest burst to ask tc for so the kernel holds at least ``packet_bytes``."""
    burst = packet_bytes
    while kernel_burst_bytes(burst, rate_bps) < packet_bytes:
        burst += 1
    return burst


@dataclass(frozen=True)
class TbfLeaf:
    """The exact limiter under a bounded level's HTB class (docs/hosts.md, QJUMP): tbf never
    lets a packet overdraw its bucket (HTB sends while its tokens are >= 0, so it overshoots by
    a packet, and it charges a GSO super-packet whole), it splits GSO packets larger than its
    ``mtu`` into segments, drops any other packet larger than P, and holds at most ``limit``
    bytes, so an admitted packet waits at most limit / rate = one epoch."""

    handle: str  # "17:"
    rate: str
    burst_bytes: int  # asked of tc
    kernel_burst_bytes: int  # what the kernel will hold (reported when they differ)
    packet_bytes: int  # P: tbf mtu, the largest packet the level sends
    peakrate: str  # line rate: the peak bucket only caps the packet size
    limit_bytes: int
    # tbf mpu: the least a packet costs in tokens; P charges every packet as a full one, so
    # the bucket counts packets (fabric.qjump.window sliding). 0: charged its length.
    mpu_bytes: int = 0
    # A queue counted in packets: a pfifo of this many packets grafted under the tbf in place
    # of its default byte fifo (``queue_packets``). With every packet charged as P, a byte
    # limit would hold limit / (smallest packet) packets, each costing P to send, so small
    # packets could wait many epochs; a packet limit keeps the wait to limit x P / rate.
    queue_packets: int | None = None

    @property
    def child_parent(self) -> str:
        """tbf's one class, where its inner queue hangs (``17:`` -> ``17:1``)."""
        return f"{self.handle}1"

    @property
    def child_handle(self) -> str:
        """The pfifo under level L's tbf: ``1(10+L):`` (``117:`` under ``17:``)."""
        return f"1{self.handle}"


@dataclass(frozen=True)
class HtbClass:
    classid: str  # "1:13"
    parent: str  # "1:" or "1:1"
    rate: str  # in tc's own printed form, see tc_rate
    ceil: str
    burst_bytes: int | None  # None: let tc choose (the parent class)
    prio: int | None
    rate_bps: int  # the (rounded) rate, for burst tolerance
    cburst_bytes: int | None = None  # explicit: a level never borrows (ceil = rate)
    tbf: TbfLeaf | None = None


@dataclass(frozen=True)
class HtbPlan:
    device: str
    default_minor: int
    classes: tuple[HtbClass, ...]


def level_classid(level: int) -> str:
    return f"{HTB_MAJOR:x}:{HTB_LEVEL_MINOR_BASE + level:x}"


def level_priority(level: int) -> int:
    """The SO_PRIORITY / skb->priority value that selects a level's HTB class."""
    return (HTB_MAJOR << 16) | (HTB_LEVEL_MINOR_BASE + level)


def tc_rate(bps: int) -> str:
    """A rate as tc prints it back. tc keeps bytes/s and prints at most the significant digits
    below, so applying this exact text makes the read-back compare equal (the rounding is
    under 0.1 %). Mirrors iproute2's print_rate: divide by 1000 while the value is a whole
    multiple, or still at least a million."""
    rate = (bps // 8) * 8  # the kernel stores bytes per second
    units = ["", "K", "M", "G", "T"]
    index = 0
    while index < len(units) - 1:
        if rate < 1000 or (rate % 1000 != 0 and rate < 1000 * 1000):
            break
        rate //= 1000
        index += 1
    return f"{rate}{units[index]}bit"


def tc_rate_bps(text: str) -> int:
    match = re.match(r"^(\d+)([KMGT]?)bit$", text)
    if not match:
        raise _fail("rate", f"unrecognised tc rate {text!r}")
    scale = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[match.group(2)]
    return int(match.group(1)) * scale


def _tbf_leaf(
    level: int,
    rate: int,
    burst: int,
    packet_bytes: int,
    line_rate: int,
    queue: int | None,
    mpu: int = 0,
    queue_packets: int | None = None,
) -> TbfLeaf:
    asked = burst
    if kernel_burst_bytes(burst, rate) < packet_bytes:
        # f x P below one packet (f < 1), or tc's whole-microsecond steps round it below one:
        # tbf drops a packet larger than its bucket, so ask for the least burst that passes a
        # P-byte packet; the read-back reports it against f x P.
        asked = burst_holding(packet_bytes, rate)
    return TbfLeaf(
        handle=f"{HTB_LEVEL_MINOR_BASE + level:x}:",
        rate=tc_rate(rate),
        burst_bytes=asked,
        kernel_burst_bytes=kernel_burst_bytes(asked, rate),
        packet_bytes=packet_bytes,
        peakrate=tc_rate(line_rate),
        # The controller sizes the queue for a sliding window (rate x epoch, in whole
        # packets); otherwise the bucket, so a full queue drains within one epoch either way.
        limit_bytes=_limit_bytes(burst, packet_bytes, queue, queue_packets),
        mpu_bytes=mpu,
        queue_packets=queue_packets,
    )


def _limit_bytes(burst: int, packet_bytes: int, queue: int | None, packets: int | None) -> int:
    """tbf's byte limit: the asked queue; for a packet-counted queue the most its packets can
    hold (tc requires a limit; the pfifo under the tbf is what counts); else the bucket."""
    if queue is not None:
        return queue
    if packets is not None:
        return packets * packet_bytes
    return max(burst, packet_bytes)


def _level_class(
    raw: Any, path: str, line_rate: int, packet_bytes: int | None
) -> tuple[int, HtbClass]:
    spec = _require_mapping(
        raw,
        path,
        {
            "level",
            "rate_bps",
            "ceil_bps",
            "burst_bytes",
            "queue_bytes",
            "queue_packets",
            "mpu_bytes",
        },
        {"level", "rate_bps", "burst_bytes"},
    )
    level = _int(spec["level"], f"{path}.level", 0, 7)
    rate = _int(spec["rate_bps"], f"{path}.rate_bps", 8)
    if rate > line_rate:
        raise _fail(f"{path}.rate_bps", f"{rate} is above the line rate {line_rate}")
    ceil = _int(spec.get("ceil_bps", rate), f"{path}.ceil_bps", rate, line_rate)
    burst = _int(spec["burst_bytes"], f"{path}.burst_bytes", 1, 1 << 30)
    queue = None
    if "queue_bytes" in spec:
        if packet_bytes is None or rate >= line_rate:
            raise _fail(f"{path}.queue_bytes", "only for a level below the line rate, with P")
        queue = _int(spec["queue_bytes"], f"{path}.queue_bytes", packet_bytes, 1 << 30)
    queue_packets = None
    if "queue_packets" in spec:
        if packet_bytes is None or rate >= line_rate:
            raise _fail(f"{path}.queue_packets", "only for a level below the line rate, with P")
        if queue is not None:
            raise _fail(f"{path}.queue_packets", "give queue_bytes or queue_packets, not both")
        queue_packets = _int(spec["queue_packets"], f"{path}.queue_packets", 1, 65535)
    mpu = 0
    if "mpu_bytes" in spec:
        if packet_bytes is None or rate >= line_rate:
            raise _fail(f"{path}.mpu_bytes", "only for a level below the line rate, with P")
        mpu = _int(spec["mpu_bytes"], f"{path}.mpu_bytes", 1, packet_bytes)
    # A level below the line rate is a QJUMP bound: exact tbf limiter under it when P is known.
    tbf = None
    if packet_bytes is not None and rate < line_rate:
        tbf = _tbf_leaf(level, rate, burst, packet_bytes, line_rate, queue, mpu, queue_packets)
    return level, HtbClass(
        classid=level_classid(level),
        parent=f"{HTB_MAJOR:x}:{HTB_PARENT_MINOR:x}",
        rate=tc_rate(rate),
        ceil=tc_rate(ceil),
        burst_bytes=burst,
        # HTB serves prio 0 first; QJUMP's higher level is the more urgent one.
        prio=7 - level,
        rate_bps=tc_rate_bps(tc_rate(rate)),
        cburst_bytes=burst,
        tbf=tbf,
    )


def qjump_plan(qjump: Any, path: str = "sluice_qjump") -> HtbPlan:
    """``sluice_qjump`` to an HTB tree: root 1:, parent 1:1 at line rate, one leaf per level."""
    spec = _require_mapping(
        qjump,
        path,
        {"device", "line_rate_bps", "levels", "default_level", "packet_bytes"},
        {"device", "line_rate_bps", "levels"},
    )
    device = spec["device"]
    if not isinstance(device, str) or not DEVICE_RE.match(device):
        raise _fail(f"{path}.device", f"not an interface name: {device!r}")
    line_rate = _int(spec["line_rate_bps"], f"{path}.line_rate_bps", 8)
    packet_bytes = None
    if "packet_bytes" in spec:
        packet_bytes = _int(spec["packet_bytes"], f"{path}.packet_bytes", 64, 65535)
    levels = spec["levels"]
    if not isinstance(levels, list) or not levels:
        raise _fail(f"{path}.levels", "must be a non-empty list")
    by_level: dict[int, HtbClass] = {}
    for index, raw in enumerate(levels):
        level, htb_class = _level_class(raw, f"{path}.levels[{index}]", line_rate, packet_bytes)
        if level in by_level:
            raise _fail(f"{path}.levels[{index}].level", f"level {level} appears twice")
        by_level[level] = htb_class
    # Unmarked traffic goes to the lowest level (QJUMP, NSDI 2015 §5: hosts outside the
    # guarantee use only the lowest priority).
    default = spec.get("default_level", min(by_level))
    if default not in by_level:
        raise _fail(
            f"{path}.default_level", f"{default!r} is not one of the levels {sorted(by_level)}"
        )
    parent = HtbClass(
        classid=f"{HTB_MAJOR:x}:{HTB_PARENT_MINOR:x}",
        parent=f"{HTB_MAJOR:x}:",
        rate=tc_rate(line_rate),
        ceil=tc_rate(line_rate),
        burst_bytes=None,
        prio=None,
        rate_bps=tc_rate_bps(tc_rate(line_rate)),
    )
    leaves = tuple(by_level[level] for level in sorted(by_level))
    return HtbPlan(
        device=device, default_minor=HTB_LEVEL_MINOR_BASE + default, classes=(parent, *leaves)
    )
