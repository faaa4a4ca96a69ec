"""Intent -> netsim run description (``sim/netsim``'s JSON config). Pure: no I/O.

What the switches get comes from the switch compiler (``controller/sonic/compile.py``:
``fleet_qos`` for queues, normalised DWRR weights and the DSCP map, ``port_profile`` for K,
WRED thresholds and buffer profiles per port speed and buffer); what the hosts get from the
host compiler's rules (PIAS thresholds, ``controller/qos/pias.py``; tcp_ecn and the QJUMP
token buckets, ``controller/hosts/compile.py``). Whatever the intent asks for that netsim
cannot run is named in ``not_modelled``, never dropped silently.

The fabric: leaves and spines from the intent's switch roles; hosts fill the leaves in intent
order (the intent does not say which leaf port a host is cabled to), each leaf's host ports
being those not facing a spine. Link delays are set so that the propagation round trip across
the spine is the fabric's ``base_rtt_us`` (8 link crossings), the RTT the thresholds assume.
With a lossless class the links are as long as the cables its PFC headroom was sized for
(``link_delays``) and the hosts take the rest of ``base_rtt_us`` (netsim's ``host_delay_ns``),
so the twin runs the compiled headroom across the links it was sized for and the same round
trip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from controller.hosts.compile import ecn_vars, pias_thresholds, qjump_vars
from controller.intent.models import EcnMode, Intent, Port, Role, SchedulingType, ServiceClass
from controller.qos.lossless import SPEED_OF_LIGHT_IN_MEDIA_M_PER_S, PortLossless
from controller.sonic.compile import (
    fleet_lossless,
    fleet_qos,
    port_cable_and_mtu,
    port_lossless_figures,
    port_profile,
    switch_port_buffers,
)
from controller.sonic.context import FleetQos, PortProfile, dynamic_wred_name
from controller.sonic.tables import sluice_agent, sluice_agent_queue
from controller.sonic.tables.buffer_profile import egress_lossless_profile
from controller.sonic.tables.flex_counter_table import agent_refusal

JsonObject = dict[str, Any]

WORKLOADS = ("websearch", "datamining", "cache", "hadoop")
NETSIM_PACKET_BYTES = 1500  # netsim's wire packet (1460 B of payload)
LINKS_PER_RTT = 8  # host-leaf-spine-leaf-host and back


class TwinInputInvalid(ValueError):
    """The intent or the request cannot be run in the twin (no leaves, no hosts, bad load)."""


@dataclass(frozen=True, slots=True)
class Request:
    """What to run: a workload at a load of every host link, so many flows, a seed.

    ``mix``: each class's share of the load, by class name (default: equal shares).
    ``per_packet``: switch ports run MQ-ECN, DynaQ or HDCQ per packet, as the papers do
    (vasic's ideal modes), instead of what a switch runs: the deployed qos-agent's loop
    (qos-core) on the orders the controller compiles, stepped every
    ``fabric.agent.interval_ms`` of simulated time, the switches' queue counter interval."""

    workload: str = "websearch"
    load: float = 0.6
    flows: int = 2000
    seed: int = 1
    mix: tuple[tuple[str, float], ...] = ()
    per_packet: bool = False


@dataclass(frozen=True, slots=True)
class TwinConfig:
    """netsim's run description, the class names by netsim class index, and what is not
    modelled."""

    config: JsonObject
    classes: tuple[str, ...]
    not_modelled: tuple[str, ...]
    lossless: tuple[tuple[str, int], ...] = ()  # the lossless classes' names and queues


def check_request(request: Request) -> None:
    if request.workload not in WORKLOADS:
        raise TwinInputInvalid(f"workload must be one of {', '.join(WORKLOADS)}")
    if not 0.0 < request.load < 1.0:
        raise TwinInputInvalid("load must be in (0, 1)")
    if not 1 <= request.flows <= 1_000_000:
        raise TwinInputInvalid("flows must be 1..1000000")
    if any(share < 0 for _, share in request.mix) or (
        request.mix and sum(s for _, s in request.mix) <= 0
    ):
        raise TwinInputInvalid("mix shares must be >= 0 and not all 0")


# --------------------------------------------------------------------------------------------
# the fabric


def _single(values: list[int], what: str, notes: list[str]) -> int:
    """The one value netsim uses where the intent has several (the slowest), noted."""
    if len(set(values)) > 1:
        notes.append(f"{what} differ ({sorted(set(values))}); the twin uses {min(values)} for all")
    return min(values)


def topology(intent: Intent, notes: list[str]) -> JsonObject:
    leaves = [s for s in intent.switches if s.role is Role.LEAF]
    spines = [s for s in intent.switches if s.role is Role.SPINE]
    if not leaves or not intent.hosts:
        raise TwinInputInvalid("the twin needs at least one leaf switch and one host")
    hosts_per_leaf = math.ceil(len(intent.hosts) / len(leaves))
    room = min(len(leaf.ports) - len(spines) for leaf in leaves)
    if hosts_per_leaf > room:
        notes.append(
            f"{len(intent.hosts)} hosts over {len(leaves)} leaves need {hosts_per_leaf} host "
            f"ports per leaf, the intent's leaves have {max(room, 0)}; the twin adds them"
        )
    if hosts_per_leaf * len(leaves) != len(intent.hosts):
        notes.append(
            f"hosts do not fill the leaves evenly; the twin has {hosts_per_leaf} per leaf "
            f"({hosts_per_leaf * len(leaves) - len(intent.hosts)} extra hosts send and receive)"
        )
    host_gbps = _single([h.nic_gbps for h in intent.hosts], "host NIC speeds", notes)
    uplinks = [p.speed_gbps for s in spines for p in s.ports] or [host_gbps]
    fabric_gbps = _single(uplinks, "spine port speeds", notes)
    return {
        "leaves": len(leaves),
        "spines": max(len(spines), 1),
        "hosts_per_leaf": hosts_per_leaf,
        "host_link_bps": host_gbps * 1e9,
        "fabric_link_bps": fabric_gbps * 1e9,
        **link_delays(intent, len(spines)),
        "ecmp": "flow",
    }


def link_delays(intent: Intent, spines: int) -> JsonObject:
    """netsim's link and host delays, ns. Every link ``base_rtt_us / 8`` without a lossless
    class. With one, each link as long as the cable its ports' PFC headroom is sized for
    (``port_cable_and_mtu`` of the port the twin runs a kind's ports as: L / v, the headroom
    formula's v), and the hosts the rest of the round trip across the spine, half at each
    end: the headroom holds what a cable carries after PAUSE, so a link longer than the
    cable would overrun a headroom that is right, and a headroom sized for the twin's link
    would not be the one the switches run."""
    delay_ns = intent.fabric.base_rtt_us * 1000.0 / LINKS_PER_RTT
    if fleet_lossless(intent) is None:
        return {"host_link_delay_ns": delay_ns, "fabric_link_delay_ns": delay_ns}
    groups = _port_groups(intent, spines)
    cable_ns = {
        kind: port_cable_and_mtu(intent.fabric, port)[0] / SPEED_OF_LIGHT_IN_MEDIA_M_PER_S * 1e9
        for kind, ports in groups.items()
        if (port := _smallest(intent, ports)) is not None
    }
    host_ns = cable_ns.get("leaf_down", delay_ns)
    fabric_ns = max(cable_ns.get("leaf_up", 0.0), cable_ns.get("spine", 0.0)) or host_ns
    rest_ns = LINKS_PER_RTT * delay_ns - 4 * (host_ns + fabric_ns)
    return {
        "host_link_delay_ns": host_ns,
        "fabric_link_delay_ns": fabric_ns,
        "host_delay_ns": max(rest_ns, 0.0) / 2,
    }


def tcp(intent: Intent, notes: list[str]) -> JsonObject:
    """The hosts' TCP: DCTCP when the intent sets it, else NewReno with ECN as tcp_ecn says."""
    cc = intent.fabric.host_transport.congestion_control
    ecn = ecn_vars(intent)["tcp_ecn"] == 1
    if cc == "dctcp":
        return {"cc": "dctcp"}
    if cc not in (None, "reno"):
        notes.append(f"congestion control {cc!r} is run as NewReno (netsim has NewReno, DCTCP)")
    elif cc is None:
        notes.append("hosts keep their own congestion control (Linux: cubic); run as NewReno")
    return {"cc": "newreno", "ecn": ecn}


# --------------------------------------------------------------------------------------------
# the ports


def _port_groups(intent: Intent, spines: int) -> dict[str, list[Port]]:
    """Each netsim port kind's ports: leaf ports facing hosts (all but the ``spines``
    fastest), leaf uplinks, spine ports."""
    groups: dict[str, list[Port]] = {"leaf_down": [], "leaf_up": [], "spine": []}
    for _switch, port, kind in _kinded_ports(intent, spines):
        groups[kind].append(port)
    return groups


def _kinded_ports(intent: Intent, spines: int) -> list[tuple[str, Port, str]]:
    out: list[tuple[str, Port, str]] = []
    for switch in intent.switches:
        if switch.role is Role.SPINE:
            out += [(switch.name, port, "spine") for port in switch.ports]
            continue
        ranked = sorted(switch.ports, key=lambda p: p.speed_gbps)
        cut = max(len(ranked) - spines, 0)
        out += [(switch.name, port, "leaf_down") for port in ranked[:cut]]
        out += [(switch.name, port, "leaf_up") for port in ranked[cut:]]
    return out


def port_kinds(intent: Intent) -> dict[tuple[str, str], str]:
    """Each switch port's netsim kind by (switch, port name): the twin's figures for a kind
    stand for each of its ports (the fit check compares them, controller/tuning/fit.py)."""
    spines = sum(1 for s in intent.switches if s.role is Role.SPINE)
    return {(switch, port.name): kind for switch, port, kind in _kinded_ports(intent, spines)}


def _speed_and_buffer(intent: Intent, port: Port) -> tuple[int, int]:
    return port.speed_gbps, port.buffer_bytes or intent.fabric.port_buffer_bytes


def _smallest(intent: Intent, ports: list[Port]) -> Port | None:
    """The port a kind's ports all run as in the twin: the smallest (speed Gb/s, buffer B)."""
    return min(ports, key=lambda p: _speed_and_buffer(intent, p)) if ports else None


def _chosen_port(intent: Intent, ports: list[Port], kind: str, notes: list[str]) -> Port | None:
    """``_smallest``, noted when the kind's ports differ."""
    chosen = _smallest(intent, ports)
    if chosen is None:
        return None
    shapes = {_speed_and_buffer(intent, p) for p in ports}
    if len(shapes) > 1:
        notes.append(
            f"{kind} ports have several (speed Gb/s, buffer B) {sorted(shapes)}; "
            f"the twin gives them all {_speed_and_buffer(intent, chosen)}"
        )
    return chosen


def _threshold(fields: dict[str, str] | None) -> int | None:
    """A compiled WRED step profile's threshold if it marks (netsim marks ECT at a step)."""
    if fields is None or fields.get("ecn") != "ecn_all":
        return None
    return int(fields["green_min_threshold"])


def _agent_aqm(fleet: FleetQos, notes: list[str]) -> str:
    """What a switch runs: each queue its compiled profile, the agent rewriting the dynamic
    ones every interval (or, if the switch's counters cannot feed it, holding them at their
    static fallback, as the agent does)."""
    algorithm = fleet.algorithm
    if algorithm == "static":
        return "per_queue"
    interval_ms = fleet.fabric.agent.interval_ms
    refusal = agent_refusal(fleet.fabric, EcnMode(algorithm))
    if refusal is not None:
        notes.append(
            f"{algorithm}: a switch's agent refuses these orders ({refusal}) and holds every "
            "dynamic queue at its static fallback; so does the twin"
        )
    else:
        notes.append(
            f"{algorithm} runs as the deployed qos-agent's loop (qos-core) every {interval_ms} "
            "ms of simulated time, the switches' queue counter interval, reading the counters "
            "SONiC publishes (no occupancy: the watermark, read and cleared); the counters' "
            "own polling phase is not modelled"
        )
    return "per_queue"


def _per_packet_aqm(intent: Intent, fleet: FleetQos, notes: list[str]) -> str | JsonObject:
    """vasic's MQ-ECN, DynaQ and HDCQ modes are port-wide; the intent's other queues keep
    theirs on the switch but follow the port's mode in the twin."""
    algorithm = fleet.algorithm
    if algorithm == "static":
        return "per_queue"
    others = sorted({q.ecn.value for q in fleet.queues if q.ecn.value != algorithm})
    if others:
        notes.append(
            f"{algorithm} is per port in netsim: queues configured {', '.join(others)} are "
            f"marked by {algorithm} in the twin"
        )
    notes.append(
        f"{algorithm} runs per packet (vasic's ideal model, as the papers run it), not as the "
        "qos-agent a switch runs"
    )
    if algorithm == EcnMode.MQECN.value:
        return {"mqecn": {"k_std_bytes": 0.0}}  # per port kind, below
    if algorithm == EcnMode.HDCQ.value:
        return _hdcq_per_packet(intent, notes)
    return "dynaq"


def _hdcq_per_packet(intent: Intent, notes: list[str]) -> str | JsonObject:
    """HDCQ's Algorithm 2 on the first HDCQ class's queues (HDCQ 2021 §3.3.2): Q1 its ACK
    queue, Q2 its own, Q3 its long queue; Eq. (1)'s period one base RTT."""
    service_class = next((c for c in intent.service_classes if c.hdcq is not None), None)
    if service_class is None or service_class.hdcq is None:
        notes.append(
            "HDCQ per packet: no class has HDCQ's queues (hdcq), so the twin holds its queues "
            "at the agent's static start value"
        )
        return "per_queue"
    hdcq = service_class.hdcq
    return {
        "hdcq": {
            "q1": hdcq.ack.queue,
            "q2": service_class.queue,
            "q3": hdcq.long.queue,
            "port_threshold_pct": hdcq.port_threshold_pct,
            "k": intent.fabric.agent.hdcq_k,
            "period_ns": intent.fabric.base_rtt_us * 1000.0,
        }
    }


def _port_qos(profile: PortProfile, queues: int, aqm: str | JsonObject) -> JsonObject:
    ks: list[int | None] = [None] * queues
    for q in profile.queues:
        ks[q.queue] = _threshold(q.wred_fields)
    out: JsonObject = {"port_buffer_bytes": profile.buffer_bytes, "ecn_k_bytes": ks}
    if isinstance(aqm, dict) and "mqecn" in aqm:
        out["k_std_bytes"] = float(profile.k_bytes)
    return out


def _queues(fleet: FleetQos, profile: PortProfile) -> list[JsonObject]:
    """Eight queues as the switch has them; queues no class uses get DWRR weight 1 (they
    carry nothing in the twin, so their scheduling does not matter)."""
    dynamic_th = int(next(iter(profile.buffer_profiles.values()))["dynamic_th"])
    specs: list[JsonObject] = [
        {"sched": {"dwrr": 1}, "ecn_k_bytes": None, "dynamic_th": dynamic_th} for _ in range(8)
    ]
    for q in fleet.queues:
        strict = q.scheduling == SchedulingType.STRICT.value
        specs[q.queue] = {
            "sched": "strict" if strict else {"dwrr": q.weight},
            "ecn_k_bytes": None,
            "dynamic_th": dynamic_th,
        }
        if q.ecn_lambda is not None:
            # MQ-ECN's K_std for this queue: the class's own lambda in C x RTT x lambda
            specs[q.queue]["ecn_lambda_scale"] = q.ecn_lambda / fleet.fabric.ecn_lambda
    return specs


def _marking(intent: Intent, notes: list[str]) -> list[JsonObject]:
    """Each class's DSCP, and its PIAS stages when hosts tag it (only classes with
    ``hosts_match`` are tagged by sluice's hosts; others are assumed marked by their
    senders). An HDCQ class is tagged as its hosts tag it (``hosts.compile.hdcq_entry``):
    its own DSCP up to ``flow_type_thresh_bytes``, then ``long``'s."""
    out: list[JsonObject] = []
    for service_class in intent.service_classes:
        entry: JsonObject = {"dscp": service_class.dscp[0], "pias": None}
        pias = service_class.pias
        hdcq = service_class.hdcq
        if hdcq is not None and service_class.hosts_match is not None:
            entry["pias"] = {
                "thresholds_bytes": [hdcq.flow_type_thresh_bytes],
                "dscp": [hdcq.long.dscp],
            }
        elif pias is not None and service_class.hosts_match is not None:
            thresholds = pias_thresholds(pias)
            entry["pias"] = {
                "thresholds_bytes": thresholds,
                "dscp": [stage.dscp for stage in pias.demotions],
            }
        elif pias is not None:
            notes.append(
                f"class {service_class.name}: PIAS without hosts_match is not applied by the "
                "hosts, so the twin does not demote it either"
            )
        out.append(entry)
    return out


def qjump_hosts(intent: Intent, notes: list[str]) -> JsonObject | None:
    """Every host's QJUMP token buckets as the host compiler plans them (rates and bursts for
    the fabric's ``window``), and each class's level: a class the hosts mark (``hosts_match``)
    rides its ``qjump_level``, any other the hosts' default level 0."""
    if intent.fabric.qjump is None or not intent.hosts:
        return None
    # The twin runs one host NIC speed (the slowest, as topology() notes); only the
    # unbounded level 0 depends on the host's own rate.
    slowest = min(intent.hosts, key=lambda h: h.nic_gbps)
    planned = qjump_vars(intent, slowest)
    if planned is None:
        return None
    packet_bytes = intent.fabric.qjump.packet_bytes
    notes.append(
        "QJUMP token buckets shape each host's packets per level, pure ACKs included, with "
        f"tbf's mtu P = {packet_bytes} B and limit counted in netsim's packet bytes (no "
        "Ethernet header) and without the kernel's burst and rate rounding; a packet the "
        "level's queue drops is lost to TCP as in the network (Linux's TCP sees a local "
        "qdisc drop at once)"
    )
    if any("mpu_bytes" in level for level in planned["levels"]):
        notes.append(
            "tbf's mpu (window: sliding charges every packet as P) is not modelled: netsim "
            "charges a packet its own length, so a level sending packets below P passes more "
            "of them than the host does; the level's queue, a pfifo of queue_packets on the "
            "host, is netsim's byte limit of queue_packets x P"
        )
    return {
        "levels": [
            qjump_level(lv, planned["line_rate_bps"], packet_bytes) for lv in planned["levels"]
        ],
        "class_levels": [
            c.qjump_level if c.hosts_match is not None else None for c in intent.service_classes
        ],
    }


def qjump_level(level: JsonObject, line_rate_bps: int, packet_bytes: int) -> JsonObject:
    """netsim's bucket for one planned level. A level below the line rate is bounded: on the
    host a tbf with ``mtu`` P (the level's MSS is clamped to fit) and ``limit`` the planned
    ``queue_packets`` x P (``window: sliding``; the host counts that queue in packets) or the
    bucket, at least P (the ``sluice.fabric.htb`` module's ``TbfLeaf``,
    ``plugins/module_utils/hostqos.py``). The unbounded level is HTB alone: no mtu, no limit."""
    burst = int(level["burst_bytes"])
    entry: JsonObject = {
        "level": level["level"],
        "rate_bps": float(level["rate_bps"]),
        "burst_bytes": burst,
    }
    if int(level["rate_bps"]) < line_rate_bps:
        entry["mtu_bytes"] = packet_bytes
        default_limit = max(burst, packet_bytes)
        if "queue_packets" in level:
            default_limit = int(level["queue_packets"]) * packet_bytes
        entry["limit_bytes"] = int(level.get("queue_bytes", default_limit))
    return entry


def agent_orders(fleet: FleetQos, profiles: dict[str, PortProfile | None]) -> JsonObject | None:
    """netsim's agent spec: the compiled ``SLUICE_AGENT|global`` fields and, per port kind,
    the ``SLUICE_AGENT_QUEUE`` rows of that kind's profile (a kind with no dynamic queue gets
    no agent). Orders a switch's agent would refuse for want of fresh counters run as
    ``static``: the agent then holds every queue at its fallback."""
    if fleet.algorithm == "static":
        return None
    orders = sluice_agent.orders_fields(fleet, "twin")
    if agent_refusal(fleet.fabric, EcnMode(fleet.algorithm)) is not None:
        orders = {**orders, "algorithm": "static"}
    spec: JsonObject = {"global": orders}
    if fleet.fabric.counters.wred_ecn_queue:
        # The switches poll WRED_ECN_QUEUE at the agent's interval (flex_counter_table): the
        # agent reads the marked counts too.
        spec["readout"] = "published_with_ecn"
    # The agent rewrites thresholds only; whether a step marks or drops is the compiled
    # profile's ``ecn`` field, which it keeps (agents/qos-agent/src/wred.rs).
    dynamic = [
        q for p in profiles.values() if p is not None for q in p.queues if q.bounds is not None
    ]
    if dynamic:
        spec["write"] = "ecn_step" if _threshold(dynamic[0].wred_fields) else "drop_step"
    for kind, profile in profiles.items():
        rows = sluice_agent_queue.rows(profile) if profile is not None else []
        if not rows:
            continue
        entries = []
        for row in rows:
            fields = dict(row.fields)
            if row.port_named is not None:
                fields[row.port_named] = dynamic_wred_name("Ethernet0", row.queue)
            entries.append({"queue": row.queue, "fields": fields})
        spec[kind] = entries
    return spec if any(kind in spec for kind in profiles) else None


def _ack_queue(intent: Intent, notes: list[str]) -> int | None:
    """Where pure ACKs go: an HDCQ class's hosts put theirs in its ``ack`` queue (Priority 1,
    HDCQ 2021 Algorithm 1). netsim has one ACK queue for every flow, so with several HDCQ
    classes, or other classes beside one, every flow's ACKs take the first one's."""
    tagged = [c for c in intent.service_classes if c.hdcq is not None and c.hosts_match]
    if not tagged:
        return None
    first = tagged[0].hdcq
    assert first is not None  # filtered above
    if len(tagged) < len(intent.service_classes):
        notes.append(
            f"pure ACKs of every class go to HDCQ's ack queue {first.ack.queue} (netsim has one "
            "ACK queue; a host puts only the HDCQ class's ACKs there)"
        )
    return first.ack.queue


# --------------------------------------------------------------------------------------------
# lossless classes (docs/lossless.md): PFC and DCQCN


def pfc_thresholds(port: PortLossless) -> JsonObject:
    """netsim's PFC thresholds for a port's lossless priority groups: PAUSE at sluice's XOFF
    point (the group's share of the shared pool, ``xoff_point_bytes``), the compiled
    profile's ``xoff`` as the headroom above it, RESUME once the group has drained the
    profile's ``xon`` below the XOFF point."""
    point, group = port.xoff_point_bytes, port.headroom
    return {
        "xoff_bytes": point,
        "xon_bytes": point - group.xon_bytes,
        "headroom_bytes": group.xoff_bytes,
    }


def _lossless_ramp(fleet: FleetQos, queues: list[int], notes: list[str]) -> JsonObject | None:
    """The lossless queues' DCQCN ramp as compiled (``WRED_PROFILE|SLUICE_DCQCN_Q<queue>``).
    netsim has one ramp for every lossless queue: with several, the first queue's."""
    ramps = {q.queue: q.dcqcn for q in fleet.queues if q.queue in queues}
    marked = [(queue, ramp) for queue, ramp in sorted(ramps.items()) if ramp is not None]
    if not marked:
        return None
    queue, ramp = marked[0]
    if len(marked) < len(ramps) or len({r for _, r in marked}) > 1:
        notes.append(
            "lossless classes mark differently (Kmin/Kmax/Pmax or ecn off); netsim has one "
            f"ramp for all lossless queues, the twin gives them queue {queue}'s"
        )
    return {"kmin_bytes": ramp.kmin_bytes, "kmax_bytes": ramp.kmax_bytes, "pmax_pct": ramp.pmax_pct}


def _headroom_shapes(
    intent: Intent, groups: dict[str, list[Port]], chosen: dict[str, Port | None]
) -> list[str]:
    """Port kinds whose ports' headroom differs (cable length or MTU): the twin sizes them
    all as its chosen port."""
    notes: list[str] = []
    for kind, port in chosen.items():
        shapes = {port_cable_and_mtu(intent.fabric, p) for p in groups[kind]}
        if port is not None and len(shapes) > 1:
            notes.append(
                f"{kind} ports have several (cable m, MTU B) {sorted(shapes)}; the twin "
                f"sizes their PFC headroom for {port_cable_and_mtu(intent.fabric, port)}"
            )
    return notes


def lossless(
    intent: Intent,
    fleet: FleetQos,
    groups: dict[str, list[Port]],
    chosen: dict[str, Port | None],
    notes: list[str],
) -> JsonObject | None:
    """The intent's lossless classes as netsim's lossless queues: PFC on every switch ingress
    port with each port kind's thresholds as the compiler sizes them (``port_headroom``, the
    XOFF point of ``port_lossless_figures``), the compiled DCQCN ramp, DCQCN senders (the
    paper's parameters: the intent does not set the NICs')."""
    figures = {
        kind: port_lossless_figures(fleet, port)
        for kind, port in chosen.items()
        if port is not None
    }
    if fleet.lossless is None or not figures:
        return None
    pfc = {kind: pfc_thresholds(f) for kind, f in figures.items() if f is not None}
    queues = sorted({int(q) for q in fleet.lossless.pfc_to_queue.values()})
    if any(int(p) != int(q) for p, q in fleet.lossless.pfc_to_queue.items()):
        notes.append(
            "netsim's PFC priority is the lossless queue's number; the intent's priorities "
            f"{fleet.lossless.pfc_to_queue} pause the same queues"
        )
    cnp = cnp_queue(fleet)
    notes += _headroom_shapes(intent, groups, chosen) + _lossless_notes(intent, cnp)
    base = pfc.get("leaf_down") or next(iter(pfc.values()))
    return {
        "queues": queues,
        "pfc": base,
        "pfc_ports": pfc,
        "ecn": _lossless_ramp(fleet, queues, notes),
        "dcqcn": {},
        "egress_static_th_bytes": _egress_static_th(intent, fleet, notes),
        "cnp_queue": cnp,
    }


def cnp_queue(fleet: FleetQos) -> int | None:
    """The queue the switches put CNPs in: their DSCP's TC's queue in the compiled maps
    (``fabric.lossless.cnp``, which a lossy class carries); None where the intent declares
    no CNP DSCP."""
    platform = fleet.fabric.lossless
    if platform is None or platform.cnp is None:
        return None
    tc = fleet.dscp_to_tc.get(str(platform.cnp.dscp))
    return None if tc is None else int(fleet.tc_to_queue.get(tc, tc))


def _egress_static_th(intent: Intent, fleet: FleetQos, notes: list[str]) -> int:
    """The lossless queues' compiled static egress limit (``SLUICE_egress_lossless_<KiB>K``,
    the switch's port buffers summed): the smallest over the switches, noted where they
    differ."""
    assert fleet.lossless is not None  # only called with a lossless class
    limits = {
        int(egress_lossless_profile(fleet.lossless.egress_pool, total).fields["static_th"])
        for total in (switch_port_buffers(intent.fabric, switch) for switch in intent.switches)
    }
    if len(limits) > 1:
        notes.append(
            f"the switches' lossless egress limits differ ({sorted(limits)} B, their port "
            f"buffers summed); the twin gives every switch {min(limits)} B"
        )
    return min(limits)


def _lossless_notes(intent: Intent, cnp: int | None) -> list[str]:
    """What of a lossless class the twin runs otherwise than the fabric would."""
    notes = [
        "links are as long as the cables the PFC headroom is sized for and the hosts take the "
        f"rest of base_rtt_us ({intent.fabric.base_rtt_us:g} us across the spine) as a NIC and "
        "stack delay, half at each end",
        "lossless classes' senders run DCQCN with the paper's parameters (the NICs' own are "
        "not in the intent); a DCQCN flow has no ACKs or retransmissions (RoCE's go-back-N "
        "is not modelled): a lost packet leaves its flow unfinished; no PFC watchdog",
    ]
    if cnp is None:
        notes.append(
            "CNPs go back in the lossless class's own queue unless pure ACKs have one "
            "(fabric.lossless.cnp is not set); they are not ECN-capable, so past Kmin the "
            "class's DCQCN ramp drops some, each a lossless loss"
        )
    return notes


def qos(intent: Intent, notes: list[str], per_packet: bool = False) -> JsonObject:
    fleet = fleet_qos(intent)
    spines = sum(1 for s in intent.switches if s.role is Role.SPINE)
    groups = _port_groups(intent, spines)
    chosen = {kind: _chosen_port(intent, ports, kind, notes) for kind, ports in groups.items()}
    profiles = {
        kind: None if port is None else port_profile(fleet, *_speed_and_buffer(intent, port))
        for kind, port in chosen.items()
    }
    base = profiles["leaf_down"] or profiles["spine"] or profiles["leaf_up"]
    if base is None:
        raise TwinInputInvalid("the twin needs switch ports")
    aqm = _per_packet_aqm(intent, fleet, notes) if per_packet else _agent_aqm(fleet, notes)
    if isinstance(aqm, dict) and "mqecn" in aqm:
        aqm = {"mqecn": {"k_std_bytes": float(base.k_bytes)}}
    return {
        "scheme": "custom",
        "queues": _queues(fleet, base),
        "aqm": aqm,
        "port_buffer_bytes": base.buffer_bytes,
        "buffer": "per_port",
        "quantum_unit_bytes": NETSIM_PACKET_BYTES,
        "tagging": {
            "dscp": {
                "classes": _marking(intent, notes),
                "dscp_to_queue": [[int(d), int(q)] for d, q in fleet.dscp_to_tc.items()],
            }
        },
        "ports": {
            kind: _port_qos(profile, 8, aqm)
            for kind, profile in profiles.items()
            if profile is not None
        },
        "ack_queue": _ack_queue(intent, notes),
        "qjump": qjump_hosts(intent, notes),
        "agent": None if per_packet else agent_orders(fleet, profiles),
        "lossless": lossless(intent, fleet, groups, chosen, notes),
    }


# --------------------------------------------------------------------------------------------
# the traffic


def _shares(classes: tuple[ServiceClass, ...], mix: tuple[tuple[str, float], ...]) -> list[float]:
    if not mix:
        return [1.0 / len(classes)] * len(classes)
    given = dict(mix)
    unknown = sorted(set(given) - {c.name for c in classes})
    if unknown:
        raise TwinInputInvalid(f"mix names unknown classes: {', '.join(unknown)}")
    total = sum(given.values())
    return [given.get(c.name, 0.0) / total for c in classes]


def traffic(intent: Intent, request: Request) -> list[JsonObject]:
    """One Poisson part per class carrying its share of the load, the request's workload,
    flows in proportion to the share (so every part spans about the same time)."""
    classes = intent.service_classes
    if not classes:
        part = {"kind": "poisson", "workload": request.workload, "load": request.load}
        return [{**part, "flows": request.flows, "class": 0}]
    parts: list[JsonObject] = []
    for index, share in enumerate(_shares(classes, request.mix)):
        flows = round(request.flows * share)
        if flows == 0:
            continue
        parts.append(
            {
                "kind": "poisson",
                "workload": request.workload,
                "load": request.load * share,
                "flows": flows,
                "class": index,
            }
        )
    return parts


def _host_notes(intent: Intent, notes: list[str]) -> None:
    if intent.fabric.mtu_bytes != NETSIM_PACKET_BYTES:
        notes.append(
            f"MTU {intent.fabric.mtu_bytes} B: netsim sends {NETSIM_PACKET_BYTES} B packets "
            "(thresholds and buffers are the compiled bytes)"
        )
    notes.append("buffers are per port (each port its own buffer), not one shared switch pool")


def translate(intent: Intent, request: Request) -> TwinConfig:
    """netsim's run description for ``intent`` under ``request``."""
    check_request(request)
    notes: list[str] = []
    config: JsonObject = {
        "seed": request.seed,
        "topology": topology(intent, notes),
        "tcp": tcp(intent, notes),
        "qos": qos(intent, notes, request.per_packet),
        "traffic": traffic(intent, request),
        "end_ns": 60e9,
    }
    _host_notes(intent, notes)
    names = tuple(c.name for c in intent.service_classes) or ("all",)
    lossless_classes = tuple(
        (c.name, c.queue) for c in intent.service_classes if c.lossless is not None
    )
    if config["qos"]["lossless"] is None:
        lossless_classes = ()
    return TwinConfig(config, names, tuple(notes), lossless_classes)
