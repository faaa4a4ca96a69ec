"""Intent -> desired CONFIG_DB tables, per switch. Pure: no I/O, no clock.

The work is split by what it depends on, so a large fleet does the arithmetic a few times:

- ``fleet_qos``: what depends on the intent only (queue per class, normalised DWRR weights,
  DSCP and TC maps, schedulers, the agent's algorithm);
- ``port_profile``: what depends on a port's (speed, buffer) too (K, WRED thresholds, buffer
  profiles); cached per (speed, buffer) for the whole fleet;
- the table builders in ``controller/sonic/tables/`` stamp out per-port entries from these
  and validate them against their schemas, and ``check_references`` confirms every name a
  field references exists, before anything can reach a switch;
- ``compile_fleet`` builds each distinct switch *shape* (its ports' names and (speed,
  buffer), which is all the builders read besides the intent) once, with its table digests,
  and gives every other switch of that shape a copy of the entries: a fleet of a thousand
  switches has a handful of shapes. So a table builder must not read the switch's name.

``compile_*`` assume an intent that passed ``controller.intent.validate.validate_intent``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.errors import CompiledConfigInvalid, FieldProblem, IntentInvalid
from controller.intent.models import (
    EcnMode,
    Fabric,
    Intent,
    Port,
    SchedulingType,
    ServiceClass,
    Switch,
)
from controller.qos.buffers import dynaq_bounds, select_dynamic_th
from controller.qos.ecn import mqecn_bounds, per_queue_minimum_bytes, standard_threshold_bytes
from controller.qos.lossless import (
    Headroom,
    LosslessQueue,
    PortLossless,
    headroom,
    port_lossless,
)
from controller.qos.scheduling import normalise_weights
from controller.sonic.bulk import collector_paused
from controller.sonic.context import (
    Bounds,
    FleetLossless,
    FleetQos,
    PgProfile,
    PortContext,
    PortProfile,
    QueueClass,
    QueueProfile,
    SwitchContext,
    scheduler_name,
)
from controller.sonic.digest import TableDigests, table_digests
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from controller.sonic.tables import (
    SCHEMAS,
    TABLES,
    WRITE_ORDER,
    buffer_profile,
    pfc_wd,
    scheduler,
    wred_profile,
)


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# what depends on the intent only


def _queue_classes(classes: Iterable[ServiceClass]) -> list[tuple[int, str, ServiceClass]]:
    """(queue, owner name, class) for every class and PIAS demotion stage. A demotion stage
    runs its own queue with the class's scheduling and ECN mode: PIAS is a multi-level
    feedback queue over strict priority (PIAS, NSDI 2015)."""
    out: list[tuple[int, str, ServiceClass]] = []
    for service_class in classes:
        out.append((service_class.queue, service_class.name, service_class))
        if service_class.pias is not None:
            for stage, demotion in enumerate(service_class.pias.demotions, start=1):
                out.append((demotion.queue, f"{service_class.name}/stage{stage}", service_class))
        if service_class.hdcq is not None:
            # HDCQ 2021 §3.3: Q1 (Priority 1, ACKs), Q2 (the class), Q3 (Priority 3)
            out.append((service_class.hdcq.ack.queue, f"{service_class.name}/ack", service_class))
            out.append((service_class.hdcq.long.queue, f"{service_class.name}/long", service_class))
    return sorted(out, key=lambda item: item[0])


def _owner_scheduling(name: str, service_class: ServiceClass) -> tuple[str, int]:
    """(SONiC scheduler type, DWRR weight) of one queue owner. HDCQ with ``wrr_weight`` w is
    SP + WRR (HDCQ 2021 §3.3.3, Algorithm 3): the ACK queue strict, Priority 2 and 3 in
    DWRR at w : 1 (SONiC serves strict queues before the DWRR ones). Otherwise the class's."""
    hdcq = service_class.hdcq
    if hdcq is not None and hdcq.wrr_weight is not None and not name.endswith("/ack"):
        weight = 1 if name.endswith("/long") else hdcq.wrr_weight
        return SchedulingType.DWRR.value, weight
    return service_class.scheduling.type.value, service_class.scheduling.weight or 1


def _owner_port_threshold_pct(name: str, service_class: ServiceClass) -> float | None:
    """HDCQ's per-port ECN point (HDCQ 2021 Algorithm 2 lines 1-3) for one queue owner: on
    Priority 1 (``/ack``) and Priority 3 (``/long``), not on the class's own Priority 2 queue,
    whose packets the per-queue threshold alone marks (line 11: a Priority 2 packet under it
    is enqueued with its ECN reset, "decided by per-queue ECN and per-port ECN together",
    §3.3.1)."""
    hdcq = service_class.hdcq
    if hdcq is None or not name.endswith(("/ack", "/long")):
        return None
    return hdcq.port_threshold_pct


def _dscp_to_tc(classes: Iterable[ServiceClass]) -> Fields:
    """TC = queue: a class's DSCPs, and each PIAS stage's DSCP, map to that class's queue."""
    pairs: dict[int, int] = {}
    for service_class in classes:
        for dscp in service_class.dscp:
            pairs[dscp] = service_class.queue
        if service_class.pias is not None:
            for demotion in service_class.pias.demotions:
                pairs[demotion.dscp] = demotion.queue
        if service_class.hdcq is not None:
            for stage in (service_class.hdcq.ack, service_class.hdcq.long):
                pairs[stage.dscp] = stage.queue
    return {str(dscp): str(pairs[dscp]) for dscp in sorted(pairs)}


def _dynamic_algorithm(classes: Iterable[ServiceClass]) -> str:
    modes = sorted({c.ecn.value for c in classes if c.ecn.is_dynamic})
    if len(modes) > 1:
        # validate_intent refuses this; a direct caller gets the same answer.
        reason = f"one dynamic ECN algorithm per fabric, got {modes}"
        raise IntentInvalid([FieldProblem("service_classes", reason)])
    return modes[0] if modes else "static"


def _by_number(pairs: Iterable[tuple[int, int]]) -> Fields:
    return {str(k): str(v) for k, v in sorted(pairs)}


def fleet_lossless(intent: Intent) -> FleetLossless | None:
    """What the intent's lossless classes put on every port: each class's PFC priority is
    its ingress priority group (its TC (= queue) and the priority both map to that group),
    and a pause for the priority stops its queue. None without a lossless class."""
    platform = intent.fabric.lossless
    classes = [c for c in intent.service_classes if c.lossless is not None]
    if platform is None or not classes:
        return None
    pairs = [(c.lossless.pfc_priority, c.queue) for c in classes if c.lossless is not None]
    return FleetLossless(
        priorities=tuple(sorted(p for p, _ in pairs)),
        tc_to_pg=_by_number((queue, priority) for priority, queue in pairs),
        pfc_to_queue=_by_number(pairs),
        pfc_to_pg=_by_number((priority, priority) for priority, _ in pairs),
        watchdog=pfc_wd.watchdog_fields(platform.watchdog),
        pool=platform.ingress_pool,
        dynamic_th=platform.dynamic_th,
        egress_pool=platform.egress_pool,
    )


def fleet_qos(intent: Intent) -> FleetQos:
    """Queue per class, normalised weights, maps, schedulers and agent algorithm."""
    owners = _queue_classes(intent.service_classes)
    kinds = {q: _owner_scheduling(name, c) for q, name, c in owners}
    dwrr = SchedulingType.DWRR.value
    raw = {str(q): weight for q, (kind, weight) in kinds.items() if kind == dwrr}
    weights = normalise_weights(raw)
    queues = tuple(
        QueueClass(
            q,
            name,
            kinds[q][0],
            weights.get(str(q), 0),
            c.ecn,
            _owner_port_threshold_pct(name, c),
            c.ecn_lambda,
            c.dcqcn if name == c.name else None,
        )
        for q, name, c in owners
    )
    schedulers = {
        scheduler_name(q.queue): scheduler.scheduler_fields(q.scheduling, q.weight) for q in queues
    }
    dynamic = tuple(q.queue for q in queues if q.ecn.is_dynamic)
    dscp_to_tc = _dscp_to_tc(intent.service_classes)
    tc_to_queue = {str(q.queue): str(q.queue) for q in queues}
    algorithm = _dynamic_algorithm(intent.service_classes)
    lossless = fleet_lossless(intent)
    # Only what reaches the switch: QJUMP and PIAS host settings do not, so changing them
    # must not bump the version; thresholds and buffers are in the port profiles' digests.
    fabric = intent.fabric
    digest = _digest(
        [
            fabric.agent.model_dump(mode="json"),
            [fabric.base_rtt_us, fabric.ecn_lambda],
            [[q.queue, q.scheduling, q.weight, q.ecn.value, q.port_threshold_pct] for q in queues],
            # only when some class has its own lambda: other intents keep their versions
            *([[q.queue, q.ecn_lambda] for q in queues if q.ecn_lambda is not None] or []),
            dscp_to_tc,
            # only with a lossless class: other intents keep their versions
            *([repr(lossless)] if lossless is not None else []),
        ]
    )
    return FleetQos(
        intent.fabric,
        queues,
        dscp_to_tc,
        tc_to_queue,
        schedulers,
        algorithm,
        dynamic,
        digest,
        lossless,
    )


# --------------------------------------------------------------------------------------------
# what depends on a port's speed and buffer too


def _dwrr_total(queues: Iterable[QueueClass]) -> int:
    return sum(q.weight for q in queues if q.scheduling == SchedulingType.DWRR.value)


def _bounds(
    queue: QueueClass, k_bytes: int, total_weight: int, mtu: int, buffer_bytes: int
) -> Bounds:
    """Where the agent may move a dynamic queue's threshold.

    DynaQ: ``dynaq_bounds`` from the port's egress buffer, not from K (ceiling = the buffer,
    floor = static = the weighted share w_i/sum(w) x B; a STRICT queue, weight 0, may use
    the whole buffer). MQ-ECN and HDCQ, DWRR: ``mqecn_bounds`` (floor = the per-queue
    minimum w_i/sum(w) x K, ceiling = K, MQ-ECN, NSDI 2016 §3.2). HDCQ, STRICT: a strict
    queue is served at line rate whenever it is backlogged, so its fair share is C and its
    static threshold the standard K; the agent may lower it to one MTU, never to nothing.
    """
    if queue.ecn is EcnMode.DYNAQ:
        strict = queue.scheduling != SchedulingType.DWRR.value
        weight = 0 if strict else queue.weight
        b = dynaq_bounds(buffer_bytes, weight, max(total_weight, weight, 1), mtu)
        return Bounds(b.floor_bytes, b.ceiling_bytes, b.static_bytes)
    if queue.scheduling == SchedulingType.DWRR.value:
        b = mqecn_bounds(k_bytes, queue.weight, total_weight, mtu)
        return Bounds(b.floor_bytes, b.ceiling_bytes, b.static_bytes)
    top = max(k_bytes, mtu)
    return Bounds(mtu, top, top)


def _static_threshold(queue: QueueClass, k_bytes: int, total_weight: int, mtu: int) -> int:
    """standard: K on every queue; per-queue-minimum: w_i / sum(w) x K, at least one MTU
    (MQ-ECN, NSDI 2016 §2, Eq. 1 and 2)."""
    if queue.ecn is EcnMode.PER_QUEUE_MINIMUM:
        return per_queue_minimum_bytes(k_bytes, queue.weight, total_weight, floor_bytes=mtu)
    return k_bytes


def _port_threshold_bytes(queue: QueueClass, buffer_bytes: int) -> int | None:
    """HDCQ's per-port ECN point: a packet is marked once the port holds this much
    (HDCQ 2021 Algorithm 2 line 1, §4.2.1: 60 % of the switch buffer, 144 of 240 packets)."""
    if queue.port_threshold_pct is None:
        return None
    return math.floor(buffer_bytes * queue.port_threshold_pct / 100)


def _ordered_lambda(queue: QueueClass, bounds: Bounds | None) -> float | None:
    """The lambda the agent is ordered for a queue: the class's own, on a queue whose
    threshold the agent computes from K (MQ-ECN: min(share, C) / C x K). DynaQ's limits come
    from the buffer and HDCQ's from its marked fraction, so those queues need none."""
    if bounds is None or queue.ecn is not EcnMode.MQECN:
        return None
    return queue.ecn_lambda


def _dynamic_th(n_queues: int, k_bytes: int, buffer_bytes: int) -> int:
    """dynamic_th for every sluice queue of a port.

    A lone congested queue may take the buffer that the port's other queues do not need to
    reach their standard ECN point K: share = 1 - (N - 1) x K / B, but never under an equal
    split 1/N. The largest alpha whose lone-queue share alpha/(1+alpha) stays within it is
    the answer (Choudhury-Hahne; ``controller.qos.buffers``).
    """
    share = max(1.0 - (n_queues - 1) * k_bytes / buffer_bytes, 1.0 / n_queues)
    return select_dynamic_th(1, min(share, 1.0))


def _wred_for(
    queue: QueueClass, k: int, total: int, fabric: Fabric, buffer_bytes: int
) -> tuple[int | None, Bounds | None, bool]:
    """(static threshold or None, dynamic bounds or None, marks with ECN)."""
    if queue.ecn is EcnMode.OFF:
        return None, None, False
    if queue.ecn.is_dynamic:
        bounds = _bounds(queue, k, total, fabric.mtu_bytes, buffer_bytes)
        return None, bounds, queue.ecn is not EcnMode.DYNAQ
    return _static_threshold(queue, k, total, fabric.mtu_bytes), None, True


def queue_threshold_bytes(queue: QueueClass, fabric: Fabric, speed_gbps: int) -> int:
    """The queue's standard threshold K = C x RTT x lambda with its class's own lambda, else
    the fabric's (MQ-ECN, NSDI 2016, §2 Eq. 1; the lambda that suits a class's traffic is the
    tuner's per class, docs/tuning.md)."""
    ecn_lambda = fabric.ecn_lambda if queue.ecn_lambda is None else queue.ecn_lambda
    return standard_threshold_bytes(speed_gbps, fabric.base_rtt_us, ecn_lambda)


def port_profile(fleet: FleetQos, speed_gbps: int, buffer_bytes: int) -> PortProfile:
    """K, WRED profiles, buffer profiles and per-queue settings for one (speed, buffer). The
    port's K (the buffer split, ``PortProfile.k``) is the fabric's; each queue's thresholds and
    bounds come from its own class's K (``queue_threshold_bytes``)."""
    fabric = fleet.fabric
    k = standard_threshold_bytes(speed_gbps, fabric.base_rtt_us, fabric.ecn_lambda)
    total = _dwrr_total(fleet.queues)
    pct = fabric.wred_drop_probability_pct
    buf_fields = buffer_profile.profile_fields(
        fabric.egress_pool,
        fabric.mtu_bytes,
        _dynamic_th(max(len(fleet.queues), 1), k, buffer_bytes),
    )
    buf_name = buffer_profile.profile_name(speed_gbps, buffer_bytes, buf_fields)
    static_wred: dict[str, Fields] = {}
    queues: list[QueueProfile] = []
    for queue in fleet.queues:
        own_k = queue_threshold_bytes(queue, fabric, speed_gbps)
        threshold, bounds, mark = _wred_for(queue, own_k, total, fabric, buffer_bytes)
        name: str | None = None
        fields: Fields | None = None
        if queue.dcqcn is not None:
            # A lossless queue marks by DCQCN's ramp, not at the lossy classes' K.
            fields = wred_profile.dcqcn_fields(queue.dcqcn)
            name = wred_profile.dcqcn_name(queue.queue)
            static_wred[name] = fields
        elif threshold is not None:
            fields = wred_profile.profile_fields(threshold, mark=mark, probability_pct=pct)
            name = wred_profile.static_name(speed_gbps, queue.queue)
            static_wred[name] = fields
        elif bounds is not None:
            fields = wred_profile.profile_fields(
                bounds.static_bytes, mark=mark, probability_pct=pct
            )
        queues.append(
            QueueProfile(
                queue.queue,
                scheduler_name(queue.queue),
                queue.weight,
                name,
                fields,
                bounds,
                buf_name,
                _port_threshold_bytes(queue, buffer_bytes),
                _ordered_lambda(queue, bounds),
            )
        )
    lambdas = [[q.queue, q.ecn_lambda] for q in queues if q.ecn_lambda is not None]
    own = [lambdas] if lambdas else []  # none: the versions of intents without one stay
    digest = _digest([speed_gbps, buffer_bytes, [repr(q) for q in queues], buf_fields, *own])
    return PortProfile(
        speed_gbps, buffer_bytes, k, tuple(queues), static_wred, {buf_name: buf_fields}, digest
    )


def port_cable_and_mtu(fabric: Fabric, port: Port) -> tuple[float, int]:
    """The cable length and MTU a port's lossless headroom is sized for: the port's own, else
    the fabric's (``fabric.lossless.cable_length_m``, ``fabric.mtu_bytes``)."""
    default_cable = fabric.lossless.cable_length_m if fabric.lossless is not None else 0.0
    return port.cable_length_m or default_cable, port.mtu_bytes or fabric.mtu_bytes


def switch_port_buffers(fabric: Fabric, switch: Switch) -> int:
    """The switch's port buffers summed (each port's, else the fabric's): the static egress
    limit of its lossless queues (``buffer_profile.egress_lossless_profile``)."""
    return sum(p.buffer_bytes or fabric.port_buffer_bytes for p in switch.ports)


def port_headroom(fabric: Fabric, port: Port) -> Headroom:
    """A port's lossless priority group headroom (xon, xoff, size of its BUFFER_PROFILE).
    Only for a fabric with ``lossless`` figures."""
    if fabric.lossless is None:
        raise ValueError("a lossless headroom needs fabric.lossless")
    cable, mtu = port_cable_and_mtu(fabric, port)
    return headroom(port.speed_gbps, cable, mtu, fabric.lossless.headroom_platform())


def port_lossless_figures(fleet: FleetQos, port: Port) -> PortLossless | None:
    """What a port's lossless priorities take, as the intent check sizes them
    (``controller.intent.capacity.lossless_buffers_fit``): each group's headroom, the shared
    pool beside them and the XOFF point in it, Kmax checked below it. None without a lossless
    class."""
    fabric, lossless = fleet.fabric, fleet.lossless
    if lossless is None or fabric.lossless is None:
        return None
    by_queue = {q.queue: q for q in fleet.queues}
    queues = [
        LosslessQueue(int(priority), by_queue[int(queue)].dcqcn)
        for priority, queue in lossless.pfc_to_queue.items()
    ]
    return port_lossless(
        port.name,
        port.buffer_bytes or fabric.port_buffer_bytes,
        queues,
        port_headroom(fabric, port),
        dynamic_th=lossless.dynamic_th,
    )


# --------------------------------------------------------------------------------------------
# per switch


class _FleetCompiler:
    """Holds the per-intent and per-(speed, buffer) results while a fleet compiles."""

    def __init__(self, intent: Intent) -> None:
        self.fleet = fleet_qos(intent)
        self._profiles: dict[tuple[int, int], PortProfile] = {}
        self._pg_profiles: dict[tuple[int, float, int], PgProfile] = {}

    def profile(self, speed_gbps: int, buffer_bytes: int) -> PortProfile:
        key = (speed_gbps, buffer_bytes)
        found = self._profiles.get(key)
        if found is None:
            found = self._profiles[key] = port_profile(self.fleet, speed_gbps, buffer_bytes)
        return found

    def pg_profile(self, port: Port) -> PgProfile | None:
        """The port's lossless ingress profile (SONiC's dynamic buffer formula from its
        speed, cable length and MTU), or None without a lossless class."""
        fabric = self.fleet.fabric
        lossless = self.fleet.lossless
        if lossless is None or fabric.lossless is None:
            return None
        cable, mtu = port_cable_and_mtu(fabric, port)
        key = (port.speed_gbps, cable, mtu)
        found = self._pg_profiles.get(key)
        if found is None:
            room = port_headroom(fabric, port)
            name = buffer_profile.lossless_name(port.speed_gbps, cable, mtu)
            found = buffer_profile.lossless_profile(name, lossless.pool, room, lossless.dynamic_th)
            self._pg_profiles[key] = found
        return found

    def context(self, switch: Switch) -> SwitchContext:
        default_buffer = self.fleet.fabric.port_buffer_bytes
        ports = tuple(
            PortContext(
                p.name,
                self.profile(p.speed_gbps, p.buffer_bytes or default_buffer),
                self.pg_profile(p),
            )
            for p in switch.ports
        )
        egress = self.lossless_egress(switch)
        # Lossless profiles only when there are some: other intents keep their versions.
        lossless: list[object] = [
            [p.name, p.lossless.name, p.lossless.fields] for p in ports if p.lossless
        ]
        if egress is not None:
            lossless.append([egress.name, egress.fields])
        version = _digest(
            [self.fleet.digest, [[p.name, p.profile.digest] for p in ports], *lossless]
        )
        return SwitchContext(switch.name, self.fleet, ports, version, egress)

    def lossless_egress(self, switch: Switch) -> PgProfile | None:
        """The switch's static egress profile for its lossless queues, or None without a
        lossless class."""
        lossless = self.fleet.lossless
        if lossless is None:
            return None
        total = switch_port_buffers(self.fleet.fabric, switch)
        return buffer_profile.egress_lossless_profile(lossless.egress_pool, total)

    def compile(self, switch: Switch) -> SwitchConfig:
        ctx = self.context(switch)
        if not self.fleet.queues:
            return {}  # no service classes: sluice has nothing to configure
        by_table = {table: TABLES[table].build(ctx) for table in WRITE_ORDER}
        check_references(by_table)
        config: SwitchConfig = {}
        for entries in by_table.values():
            config.update(entries)
        return config


def check_references(by_table: Mapping[str, Mapping[EntryKey, Fields]]) -> None:
    """Every name a field references exists (tables sluice does not write, such as
    BUFFER_POOL, are the operator's and are not checked). ``by_table``: table -> its entries.
    Raises CompiledConfigInvalid naming the dangling references."""
    missing: list[str] = []
    for table, schema in SCHEMAS.items():
        entries = by_table.get(table, {})
        for spec in schema.references():
            if spec.ref is None or spec.ref not in SCHEMAS:
                continue
            names = {fields[spec.name] for fields in entries.values() if spec.name in fields}
            targets = by_table.get(spec.ref, {})
            missing += [
                f"{table}.{spec.name} names {spec.ref}|{n}"
                for n in sorted(names)
                if (spec.ref, n) not in targets
            ]
    if missing:
        raise CompiledConfigInvalid("dangling references: " + "; ".join(missing[:10]))


def compile_switch(intent: Intent, switch: Switch) -> SwitchConfig:
    """The desired CONFIG_DB entries sluice owns on ``switch``."""
    return _FleetCompiler(intent).compile(switch)


def switch_context(intent: Intent, switch: Switch) -> SwitchContext:
    """The compiled per-switch model (queues, weights, maps, per-port thresholds) that the
    CONFIG_DB table builders read; the OpenConfig dialect (``controller/openconfig/``) reads
    the same one, so both dialects carry the same arithmetic."""
    return _FleetCompiler(intent).context(switch)


@dataclass(frozen=True)
class CompiledFleet:
    """Every switch's desired entries and their table digests, by switch name. Each switch
    has its own entry dicts; switches of one shape share one read-only digest mapping."""

    configs: dict[str, SwitchConfig]
    digests: dict[str, TableDigests]


Shape = tuple[tuple[str, int, int | None, float | None, int | None], ...]


def _shape(switch: Switch) -> Shape:
    """What the table builders read of a switch: its ports' names, speeds, buffers, and
    the cable lengths and MTUs that size lossless headroom."""
    return tuple(
        (p.name, p.speed_gbps, p.buffer_bytes, p.cable_length_m, p.mtu_bytes) for p in switch.ports
    )


def compile_fleet(intent: Intent, *, share_shapes: bool = True) -> dict[str, SwitchConfig]:
    """Desired CONFIG_DB entries for every switch of the intent, by switch name. Each
    switch shape is built once and copied to the other switches of that shape;
    ``share_shapes`` false builds every switch from scratch: the reference the shared path
    is tested and benchmarked against (same result)."""
    compiler = _FleetCompiler(intent)
    if not share_shapes:
        with collector_paused():
            return {switch.name: compiler.compile(switch) for switch in intent.switches}
    built: dict[Shape, SwitchConfig] = {}
    configs: dict[str, SwitchConfig] = {}
    with collector_paused():
        for switch in intent.switches:
            shape = _shape(switch)
            first = built.get(shape)
            if first is None:
                configs[switch.name] = built[shape] = compiler.compile(switch)
            else:
                configs[switch.name] = {key: dict(fields) for key, fields in first.items()}
    return configs


def compile_fleet_digested(intent: Intent) -> CompiledFleet:
    """``compile_fleet`` plus each switch's table digests (``controller/sonic/digest.py``),
    computed once per switch shape."""
    configs = compile_fleet(intent)
    by_shape: dict[Shape, TableDigests] = {}
    digests: dict[str, TableDigests] = {}
    for switch in intent.switches:
        shape = _shape(switch)
        found = by_shape.get(shape)
        if found is None:
            found = by_shape[shape] = table_digests(configs[switch.name])
        digests[switch.name] = found
    return CompiledFleet(configs, digests)


def compile_fleet_by_shape(intent: Intent) -> CompiledFleet:
    """``compile_fleet_digested`` without the copies: the switches of one shape share one
    config and one digest mapping, built once. What a reconcile pass over thousands of
    switches holds (a few shapes, not a copy per switch); read only, nothing may modify a
    shared config."""
    compiler = _FleetCompiler(intent)
    built: dict[Shape, tuple[SwitchConfig, TableDigests]] = {}
    configs: dict[str, SwitchConfig] = {}
    digests: dict[str, TableDigests] = {}
    with collector_paused():
        for switch in intent.switches:
            shape = _shape(switch)
            if shape not in built:
                config = compiler.compile(switch)
                built[shape] = (config, table_digests(config))
            configs[switch.name], digests[switch.name] = built[shape]
    return CompiledFleet(configs, digests)
