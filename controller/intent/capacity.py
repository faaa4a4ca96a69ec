"""Intent rules about numbers that must fit the hardware: QJUMP levels, thresholds, weights,
lossless headroom.

Part of the cross-object validation (``controller/intent/validate.py`` runs ``CAPACITY_RULES``);
kept apart because these rules call the pure algorithms in ``controller/qos/``, so the limits
the validator enforces are computed by the same code that later fills CONFIG_DB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from controller.errors import FieldProblem, IntentInvalid, KmaxAboveXoff
from controller.intent.models import (
    EcnMode,
    Intent,
    Lossless,
    LosslessPlatform,
    Qjump,
    SchedulingType,
    ServiceClass,
)
from controller.qos.ecn import standard_threshold_bytes
from controller.qos.lossless import LosslessQueue, headroom, port_lossless
from controller.qos.qjump import (
    QjumpLevel,
    QjumpWindow,
    budget_bytes,
    epoch_seconds,
    host_limiter,
    level_rate_bps,
)
from controller.qos.scheduling import SONIC_WEIGHT_MAX, normalise_weights

Rule = Callable[[Intent], list[FieldProblem]]


def _qjump_classes(intent: Intent) -> Iterator[tuple[str, ServiceClass, int]]:
    for i, service_class in enumerate(intent.service_classes):
        if service_class.qjump_level is not None:
            yield f"service_classes[{i}]", service_class, service_class.qjump_level


def qjump_levels_declared(intent: Intent) -> list[FieldProblem]:
    """A QJUMP level needs the fabric's QJUMP parameters, a factor, hosts to enforce it on,
    and a level of its own (each level is one 802.1p priority and one host rate limiter)."""
    problems: list[FieldProblem] = []
    first_use: dict[int, str] = {}
    qjump = intent.fabric.qjump
    for path, _, level in _qjump_classes(intent):
        field = f"{path}.qjump_level"
        if level in first_use:
            reason = f"QJUMP level {level} is already used at {first_use[level]}"
            problems.append(FieldProblem(field, reason))
        first_use.setdefault(level, field)
        if qjump is None:
            reason = "needs fabric.qjump (hosts, packet_bytes, epsilon_us, factors)"
            problems.append(FieldProblem(field, reason))
        elif level not in qjump.factors:
            reason = f"level {level} has no throughput factor in fabric.qjump.factors"
            problems.append(FieldProblem(field, reason))
        if not intent.hosts:
            reason = "needs at least one host: QJUMP is enforced on hosts, R is the slowest NIC"
            problems.append(FieldProblem(field, reason))
    return problems


def qjump_fabric(intent: Intent) -> list[FieldProblem]:
    """The epoch 2nP/R + eps holds only if n covers every host that may send and P is a packet
    the fabric carries (QJUMP, NSDI 2015 §3)."""
    qjump = intent.fabric.qjump
    if qjump is None:
        return []
    problems = []
    if qjump.packet_bytes > intent.fabric.mtu_bytes:
        reason = (
            f"P = {qjump.packet_bytes} B is larger than the fabric MTU "
            f"({intent.fabric.mtu_bytes} B)"
        )
        problems.append(FieldProblem("fabric.qjump.packet_bytes", reason))
    if qjump.hosts < len(intent.hosts):
        reason = (
            f"n = {qjump.hosts} is less than the {len(intent.hosts)} hosts declared: "
            "the epoch would be too short for their worst-case fan-in"
        )
        problems.append(FieldProblem("fabric.qjump.hosts", reason))
    return problems


# The smallest TCP packet Linux sends: Ethernet 14 B + IPv6 40 B + TCP 20 B + the minimum MSS
# it uses whatever the peer advertises (net.ipv4.tcp_min_snd_mss, 48 B by default).
QJUMP_MIN_TCP_PACKET_BYTES = 14 + 40 + 20 + 48


def qjump_packets_fit_p(intent: Intent) -> list[FieldProblem]:
    """QjumpPacketTooSmall: hosts hold a level's TCP packets to P by clamping the MSS
    (QJUMP NSDI 2015 §3.1: P is the largest packet a level issues), which cannot go
    below the kernel's minimum segment; a P under that is refused, not silently exceeded."""
    qjump = intent.fabric.qjump
    if qjump is None or qjump.packet_bytes >= QJUMP_MIN_TCP_PACKET_BYTES:
        return []
    problems = []
    for path, service_class, level in _qjump_classes(intent):
        match = service_class.hosts_match
        if match is None or match.protocol not in (None, "tcp"):
            continue
        reason = (
            f"QjumpPacketTooSmall: level {level} carries TCP, whose smallest packet is "
            f"{QJUMP_MIN_TCP_PACKET_BYTES} B (14 B Ethernet + 40 B IPv6 + 20 B TCP + Linux's "
            f"minimum MSS 48 B); P = {qjump.packet_bytes} B cannot bound it (used by {path})"
        )
        problems.append(FieldProblem("fabric.qjump.packet_bytes", reason))
    return problems


def qjump_rates_fit_line_rate(intent: Intent) -> list[FieldProblem]:
    """Each level's rate f_i x P / epoch must not exceed the slowest host NIC R, the rate the
    epoch 2nP/R + eps is computed for (QJUMP, NSDI 2015 §3.1-3.2)."""
    qjump = intent.fabric.qjump
    if qjump is None or not intent.hosts:
        return []
    nic_gbps = min(host.nic_gbps for host in intent.hosts)
    epoch_s = _epoch_s(qjump, nic_gbps)
    problems = []
    for level, factor in sorted(qjump.factors.items()):
        rate_bps = level_rate_bps(factor, qjump.packet_bytes, epoch_s)
        if rate_bps > nic_gbps * 1e9:
            reason = (
                f"level {level} would send f x P per epoch = {factor:g} x {qjump.packet_bytes} B "
                f"per {epoch_s * 1e6:.2f} us = {rate_bps / 1e9:.2f} Gb/s, above the slowest "
                f"host NIC ({nic_gbps} Gb/s)"
            )
            problems.append(FieldProblem(f"fabric.qjump.factors.{level}", reason))
    return problems


def qjump_factors_shrink_with_priority(intent: Intent) -> list[FieldProblem]:
    """A higher level must have a smaller (or equal) throughput factor than every lower one:
    the latency bound of a level holds only because its hosts send little (QJUMP, NSDI 2015
    §3.2, "higher priorities receiving smaller values"); a larger factor makes priority free."""
    qjump = intent.fabric.qjump
    if qjump is None:
        return []
    problems = []
    lower: tuple[int, float] | None = None
    for level, factor in sorted(qjump.factors.items()):
        if lower is not None and factor > lower[1]:
            reason = (
                f"factor {factor:g} at level {level} exceeds {lower[1]:g} at lower level "
                f"{lower[0]}; a higher priority must have a smaller (or equal) factor"
            )
            problems.append(FieldProblem(f"fabric.qjump.factors.{level}", reason))
        else:
            lower = (level, factor)
    return problems


def qjump_window_holds(intent: Intent) -> list[FieldProblem]:
    """QjumpWindowTooSmall: with ``window: sliding`` every level must buy at least one whole
    packet per epoch (f >= 1) after the kernel's burst rounding (``host_limiter``)."""
    qjump = intent.fabric.qjump
    if qjump is None or qjump.window is not QjumpWindow.SLIDING or not intent.hosts:
        return []
    epoch_s = _epoch_s(qjump, min(host.nic_gbps for host in intent.hosts))
    problems = []
    for level, factor in sorted(qjump.factors.items()):
        budget = QjumpLevel(level, factor, 0.0, budget_bytes(factor, qjump.packet_bytes))
        try:
            jitter_s = qjump.release_jitter_us * 1e-6
            host_limiter(budget, qjump.packet_bytes, epoch_s, qjump.window, jitter_s)
        except IntentInvalid as refused:
            reasons = (problem.reason for problem in refused.problems)
            problems += [FieldProblem(f"fabric.qjump.factors.{level}", r) for r in reasons]
    return problems


def _epoch_s(qjump: Qjump, nic_gbps: int) -> float:
    # epsilon is stated in microseconds in the intent, R in Gb/s.
    return epoch_seconds(qjump.hosts, qjump.packet_bytes, nic_gbps * 1e9, qjump.epsilon_us * 1e-6)


def weights_representable(intent: Intent) -> list[FieldProblem]:
    """SONiC weights are 1..100, so a weight under 1/100 of the largest cannot keep its ratio:
    normalisation would raise it to 1 and give that queue more than it was declared."""
    weights = {
        f"service_classes[{i}]": c.scheduling.weight
        for i, c in enumerate(intent.service_classes)
        if c.scheduling.type is SchedulingType.DWRR and c.scheduling.weight is not None
    }
    if not weights:
        return []
    largest_path, largest = max(weights.items(), key=lambda item: item[1])
    normalised = normalise_weights(weights)
    problems = []
    for path, weight in weights.items():
        if largest > weight * SONIC_WEIGHT_MAX:
            reason = (
                f"weight {weight} is 1/{largest / weight:g} of the largest ({largest} at "
                f"{largest_path}.scheduling.weight); SONiC weights are 1..{SONIC_WEIGHT_MAX}, so "
                f"it would become {normalised[path]}:{normalised[largest_path]}. Keep the ratio "
                f"within 1:{SONIC_WEIGHT_MAX}"
            )
            problems.append(FieldProblem(f"{path}.scheduling.weight", reason))
    return problems


def thresholds_fit_buffer(intent: Intent) -> list[FieldProblem]:
    """The standard threshold K = C x RTT x lambda (MQ-ECN, NSDI 2016 §2, Eq. 1) must be
    below the port's buffer (else the queue drops before it marks) and at least one MTU (else
    every packet is marked). Ports on the fabric default buffer are reported once per speed."""
    if all(c.ecn is EcnMode.OFF for c in intent.service_classes):
        return []
    fabric = intent.fabric
    problems: list[FieldProblem] = []
    on_default: dict[int, list[str]] = {}
    for i, switch in enumerate(intent.switches):
        for j, port in enumerate(switch.ports):
            where = f"{switch.name} {port.name}"
            if port.buffer_bytes is None:
                on_default.setdefault(port.speed_gbps, []).append(where)
                continue
            k_bytes = _k_bytes(intent, port.speed_gbps)
            if k_bytes >= port.buffer_bytes:
                reason = _over_buffer(k_bytes, port.speed_gbps, intent, port.buffer_bytes, where)
                problems.append(FieldProblem(f"switches[{i}].ports[{j}].buffer_bytes", reason))
    for speed_gbps, ports in sorted(on_default.items()):
        k_bytes = _k_bytes(intent, speed_gbps)
        if k_bytes >= fabric.port_buffer_bytes:
            reason = _over_buffer(
                k_bytes, speed_gbps, intent, fabric.port_buffer_bytes, _few(ports)
            )
            problems.append(FieldProblem("fabric.port_buffer_bytes", reason))
    problems += _thresholds_below_mtu(intent)
    problems += _class_thresholds(intent)
    return problems


def _class_thresholds(intent: Intent) -> list[FieldProblem]:
    """The same two bounds for each class with its own ``ecn_lambda`` (its K is its own):
    below every port buffer it meets, at least one MTU. DynaQ queues do not mark at K."""
    fabric = intent.fabric
    ports = {
        (port.speed_gbps, port.buffer_bytes or fabric.port_buffer_bytes)
        for switch in intent.switches
        for port in switch.ports
    }
    problems = []
    for i, service_class in enumerate(intent.service_classes):
        own = service_class.ecn_lambda
        if own is None or service_class.ecn in (EcnMode.OFF, EcnMode.DYNAQ):
            continue
        for speed_gbps, buffer_bytes in sorted(ports):
            k_bytes = standard_threshold_bytes(speed_gbps, fabric.base_rtt_us, own)
            text = f"K = {speed_gbps} Gb/s x {fabric.base_rtt_us:g} us x {own:g} = {k_bytes} B"
            if k_bytes >= buffer_bytes:
                reason = f"{text} is not below a {buffer_bytes} B port buffer: it would drop first"
            elif k_bytes < fabric.mtu_bytes:
                reason = f"{text} is below one MTU ({fabric.mtu_bytes} B): every packet marked"
            else:
                continue
            problems.append(FieldProblem(f"service_classes[{i}].ecn_lambda", reason))
            break
    return problems


def _thresholds_below_mtu(intent: Intent) -> list[FieldProblem]:
    fabric = intent.fabric
    by_speed: dict[int, list[str]] = {}
    for switch in intent.switches:
        for port in switch.ports:
            by_speed.setdefault(port.speed_gbps, []).append(f"{switch.name} {port.name}")
    problems = []
    for speed_gbps, ports in sorted(by_speed.items()):
        k_bytes = _k_bytes(intent, speed_gbps)
        if k_bytes < fabric.mtu_bytes:
            reason = (
                f"{_k_text(k_bytes, speed_gbps, intent)} is below one MTU ({fabric.mtu_bytes} B) "
                f"on {_few(ports)}: every packet would be marked; raise base_rtt_us or ecn_lambda"
            )
            problems.append(FieldProblem("fabric.base_rtt_us", reason))
    return problems


def _k_bytes(intent: Intent, speed_gbps: int) -> int:
    return standard_threshold_bytes(speed_gbps, intent.fabric.base_rtt_us, intent.fabric.ecn_lambda)


def _k_text(k_bytes: int, speed_gbps: int, intent: Intent) -> str:
    fabric = intent.fabric
    return (
        f"K = {speed_gbps} Gb/s x {fabric.base_rtt_us:g} us x {fabric.ecn_lambda:g} = {k_bytes} B"
    )


def _over_buffer(k_bytes: int, speed_gbps: int, intent: Intent, buffer: int, where: str) -> str:
    return (
        f"{_k_text(k_bytes, speed_gbps, intent)} is not below the port buffer ({buffer} B) on "
        f"{where}: the queue would drop before it marks"
    )


def _few(ports: list[str]) -> str:
    shown = ", ".join(ports[:3])
    return shown if len(ports) <= 3 else f"{shown} and {len(ports) - 3} more"


# ---------------------------------------------------------------------------------------------
# lossless classes (docs/lossless.md)

# ECN modes a lossless class may have: DCQCN's fixed Kmin/Kmax/Pmax ("standard"), or none.
LOSSLESS_ECN_MODES = (EcnMode.STANDARD, EcnMode.OFF)


def _lossless_classes(intent: Intent) -> Iterator[tuple[str, ServiceClass, Lossless]]:
    for i, service_class in enumerate(intent.service_classes):
        if service_class.lossless is not None:
            yield f"service_classes[{i}]", service_class, service_class.lossless


def lossless_declared(intent: Intent) -> list[FieldProblem]:
    """A lossless class needs the platform's headroom parameters and marks with DCQCN's
    thresholds or not at all: the dynamic modes move or drop by rules made for lossy queues,
    and per-queue-minimum would replace Kmin/Kmax. (One class per PFC priority:
    ``validate.pfc_priorities_once``.)"""
    problems: list[FieldProblem] = []
    for path, service_class, _ in _lossless_classes(intent):
        if intent.fabric.lossless is None:
            reason = "a lossless class needs fabric.lossless (the ASIC's headroom parameters)"
            problems.append(FieldProblem(f"{path}.lossless", reason))
        if service_class.ecn not in LOSSLESS_ECN_MODES:
            reason = (
                f"a lossless class marks with DCQCN's Kmin/Kmax/Pmax (ecn: standard) or not at "
                f"all (off), not {service_class.ecn.value}"
            )
            problems.append(FieldProblem(f"{path}.ecn", reason))
    return problems


def lossless_buffers_fit(intent: Intent) -> list[FieldProblem]:
    """On every port, the headroom of the lossless priorities (SONiC's dynamic buffer formula
    from the port's speed, cable length and MTU) must leave a shared pool in the port's buffer
    (HeadroomDoesNotFit), and each lossless queue's Kmax must sit below the XOFF point in that
    pool (KmaxAboveXoff): ECN before PFC (DCQCN, SIGCOMM 2015)."""
    platform = intent.fabric.lossless
    classes = list(_lossless_classes(intent))
    if platform is None or not classes:
        return []
    queues = [LosslessQueue(lossless.pfc_priority, c.dcqcn) for _, c, lossless in classes]
    kmax_path = {
        lossless.pfc_priority: f"{path}.lossless.kmax_bytes" for path, _, lossless in classes
    }
    problems: list[FieldProblem] = []
    for (speed_gbps, cable_m, mtu_bytes, buffer_bytes), ports in _lossless_port_kinds(
        intent, platform
    ).items():
        path = ports[0][0]
        try:
            room = headroom(speed_gbps, cable_m, mtu_bytes, platform.headroom_platform())
            port_lossless(
                _few([name for _, name in ports]),
                buffer_bytes,
                queues,
                room,
                dynamic_th=platform.dynamic_th,
                path=f"{path}.buffer_bytes",
            )
        except KmaxAboveXoff as refused:
            reason = refused.problems[0].reason
            problems.append(FieldProblem(kmax_path[refused.priority], reason))
        except IntentInvalid as refused:
            problems += [_at_port(path, problem) for problem in refused.problems]
    return problems


PortKind = tuple[int, float, int, int]  # speed Gb/s, cable m, MTU B, buffer B


def _lossless_port_kinds(
    intent: Intent, platform: LosslessPlatform
) -> dict[PortKind, list[tuple[str, str]]]:
    """Ports alike in speed, cable, MTU and buffer are alike in headroom: checked once, named
    together (the first one's path), as thresholds_fit_buffer does."""
    alike: dict[PortKind, list[tuple[str, str]]] = {}
    for i, switch in enumerate(intent.switches):
        for j, port in enumerate(switch.ports):
            key = (
                port.speed_gbps,
                port.cable_length_m or platform.cable_length_m,
                port.mtu_bytes or intent.fabric.mtu_bytes,
                port.buffer_bytes or intent.fabric.port_buffer_bytes,
            )
            alike.setdefault(key, []).append(
                (f"switches[{i}].ports[{j}]", f"{switch.name} {port.name}")
            )
    return alike


def lowest_xoff_point_bytes(intent: Intent) -> int | None:
    """The lowest XOFF point over the intent's ports, the bound every lossless class's Kmax
    must stay below (``lossless_buffers_fit``); None without a lossless class or where a
    port's headroom does not fit (the intent is refused then)."""
    platform = intent.fabric.lossless
    classes = list(_lossless_classes(intent))
    if platform is None or not classes:
        return None
    # Kmax does not move the XOFF point: the groups are sized without their ramps.
    queues = [LosslessQueue(lossless.pfc_priority, None) for _, _, lossless in classes]
    points = []
    for speed_gbps, cable_m, mtu_bytes, buffer_bytes in _lossless_port_kinds(intent, platform):
        room = headroom(speed_gbps, cable_m, mtu_bytes, platform.headroom_platform())
        try:
            port = port_lossless("port", buffer_bytes, queues, room, dynamic_th=platform.dynamic_th)
        except IntentInvalid:
            return None
        points.append(port.xoff_point_bytes)
    return min(points, default=None)


def _at_port(path: str, problem: FieldProblem) -> FieldProblem:
    # The qos core names its own arguments (speed_gbps); a refusal of a whole port is already
    # at the port's path.
    if problem.path.startswith(path):
        return problem
    return FieldProblem(f"{path}.{problem.path}", problem.reason)


CAPACITY_RULES: tuple[Rule, ...] = (
    qjump_levels_declared,
    qjump_fabric,
    qjump_packets_fit_p,
    qjump_rates_fit_line_rate,
    qjump_factors_shrink_with_priority,
    qjump_window_holds,
    weights_representable,
    thresholds_fit_buffer,
    lossless_declared,
    lossless_buffers_fit,
)
