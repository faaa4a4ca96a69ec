"""One switch's telemetry as the collector holds it (pure: updates in, views out).

Inputs are what the Subscribe stream carries (docs/telemetry.md): the two COUNTERS_DB name
maps (``COUNTERS_QUEUE_NAME_MAP``: ``Ethernet0:3`` -> oid, ``COUNTERS_PORT_NAME_MAP``:
``Ethernet0`` -> oid), the ``COUNTERS:<oid>`` hashes with SAI stat names, and the agent's
STATE_DB report (``SLUICE_AGENT_STATE|global`` and ``|<port>|<queue>``). Every input carries
the switch's timestamp; rates come from ``controller.telemetry.rates``.

A queue or port counter hash whose oid is in neither map is counted as unknown and otherwise
ignored (a map not yet received, or an object the maps no longer name); another object of the
COUNTERS table (a priority group, a buffer pool) is ignored; a hash with no member (``{}``,
an object the switch does not hold) is no update; a field that is not a decimal is ignored,
never raised on. A counter that grows past its object's line rate (the ports' speeds from the
intent, ``port_speeds_bps``) is a reset, as one that goes backwards
(``controller.telemetry.rates``).

The counter objects and their rates live in the compiled core (``controller_core.
CounterTable``, native/controller-core/src/table.rs, where the rule is written): a switch's
SAMPLE notifications go into it as the bytes gRPC received (``SwitchTelemetry.ingest``), with
no Python object per update; this class keeps the maps, the agent's report and the views.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller_core import CounterTable

from controller.southbound.faults import Fault
from controller.telemetry.rates import NS_PER_S, parse_count

QUEUE_PACKETS = "SAI_QUEUE_STAT_PACKETS"
QUEUE_BYTES = "SAI_QUEUE_STAT_BYTES"
QUEUE_DROPPED_PACKETS = "SAI_QUEUE_STAT_DROPPED_PACKETS"
QUEUE_DROPPED_BYTES = "SAI_QUEUE_STAT_DROPPED_BYTES"
QUEUE_ECN_MARKED_PACKETS = "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"
QUEUE_OCCUPANCY = "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES"
QUEUE_SHARED_WATERMARK = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"
QUEUE_WATERMARK = "SAI_QUEUE_STAT_WATERMARK_BYTES"
PORT_OUT_OCTETS = "SAI_PORT_STAT_IF_OUT_OCTETS"
PORT_IN_OCTETS = "SAI_PORT_STAT_IF_IN_OCTETS"
# PFC pause frames per priority (saiport.h); the core keeps their rates with the port's.
PFC_PRIORITIES = range(8)
# An ingress priority group's counters (saibuffer.h), in ``COUNTERS:<pg oid>``.
PG_DROPPED_PACKETS = "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS"
PG_SHARED_WATERMARK = "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES"
PG_XOFF_ROOM_WATERMARK = "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES"
# What SONiC's PFC watchdog writes into a queue's hash (sonic-swss orchagent/pfcwdorch.cpp).
WD_DETECTED = "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"
WD_RESTORED = "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED"


def pfc_rx_field(priority: int) -> str:
    """The pause frames received on ``priority``: ``SAI_PORT_STAT_PFC_<n>_RX_PKTS``."""
    return f"SAI_PORT_STAT_PFC_{priority}_RX_PKTS"


def pfc_tx_field(priority: int) -> str:
    """The pause frames sent on ``priority``: ``SAI_PORT_STAT_PFC_<n>_TX_PKTS``."""
    return f"SAI_PORT_STAT_PFC_{priority}_TX_PKTS"


@dataclass(frozen=True, slots=True, order=True)
class QueueId:
    port: str
    queue: str  # the index as SONiC writes it in the name map: "3"


@dataclass(frozen=True, slots=True)
class ResetEvent:
    """A counter hash that went backwards (cleared, wrapped, the switch restarted)."""

    port: str
    queue: str  # "" for a port's counters


@dataclass(frozen=True, slots=True)
class CounterView:
    """One object's counters as last computed: the rate of each rate field that has one
    (per second; the core divides the exact count delta by the exact span and rounds once,
    as Python divides two integers) and the last value of each gauge (any other decimal
    field of the hash)."""

    rates: dict[str, float]
    gauges: dict[str, int]


@dataclass(frozen=True, slots=True)
class AgentQueue:
    threshold_bytes: int | None
    basis: str


@dataclass(frozen=True, slots=True)
class AgentGlobal:
    heartbeat_ms: int | None
    mode: str
    algorithm: str
    version: str
    loop_seconds: float | None


def indexed_objects(mapping: Mapping[str, str]) -> dict[str, QueueId]:
    """A name map of per-port objects (``COUNTERS_QUEUE_NAME_MAP``, ``COUNTERS_PG_NAME_MAP``:
    ``Ethernet0:3`` -> oid) as oid -> (port, index); a name without an index is skipped."""
    oids: dict[str, QueueId] = {}
    for name, oid in mapping.items():
        port, sep, index = name.rpartition(":")
        if sep and port and index.isdigit():
            oids[oid] = QueueId(port, index)
    return oids


def agent_global(fields: Mapping[str, str]) -> AgentGlobal:
    loop_us = parse_count(fields.get("loop_us", ""))
    return AgentGlobal(
        heartbeat_ms=parse_count(fields.get("heartbeat", "")),
        mode=fields.get("mode", ""),
        algorithm=fields.get("algorithm", ""),
        version=fields.get("version", ""),
        loop_seconds=loop_us / 1e6 if loop_us is not None else None,
    )


def orders_version_number(version: str) -> int | None:
    """The orders' version (a short hex digest) as a number a gauge can carry; None for
    ``none`` or anything that is not hex."""
    try:
        return int(version, 16) if version else None
    except ValueError:
        return None


class SwitchTelemetry:
    """Everything the collector knows about one switch, fed by its stream."""

    def __init__(
        self,
        name: str,
        port_speeds_bps: Mapping[str, float],
        queue_classes: Mapping[str, str],
        window_ns: int = 0,
        pfc_classes: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.queue_classes = dict(queue_classes)  # queue index -> class name
        # PFC priority (= its priority group's index) -> the lossless class on it
        self.pfc_classes = dict(pfc_classes or {})
        self.window_ns = window_ns
        self.queue_oids: dict[str, QueueId] = {}
        self.port_oids: dict[str, str] = {}
        self.table = CounterTable(window_ns)
        self.port_speeds_bps = port_speeds_bps
        self.agent: AgentGlobal | None = None
        self.agent_queues: dict[QueueId, AgentQueue] = {}
        self.stream_up = False
        # Each stream that is failing now (``counters``, ``agent_state``): its fault.
        self.faults: dict[str, Fault] = {}

    @property
    def port_speeds_bps(self) -> dict[str, float]:
        """Each port's line rate (bits a second, from the intent)."""
        return self._port_speeds_bps

    @port_speeds_bps.setter
    def port_speeds_bps(self, speeds: Mapping[str, float]) -> None:
        """New speeds bound the counters from here on (a jump past one is a reset)."""
        self._port_speeds_bps = dict(speeds)
        self.table.set_line_rates(
            [(port, int(bps) // 8) for port, bps in self._port_speeds_bps.items() if bps > 0]
        )

    # name maps -------------------------------------------------------------------------------

    def set_queue_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_QUEUE_NAME_MAP`` as a whole: ``Ethernet0:3`` -> oid. A queue under a
        new oid is a new object (syncd restarted): its counts start afresh."""
        oids = indexed_objects(mapping)
        self.queue_oids = oids
        self.table.set_queues([(oid, q.port, q.queue) for oid, q in oids.items()])

    def set_port_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_PORT_NAME_MAP`` as a whole: ``Ethernet0`` -> oid."""
        oids = {oid: port for port, oid in mapping.items()}
        self.port_oids = oids
        self.table.set_ports(list(oids.items()))

    def set_pg_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_PG_NAME_MAP`` as a whole: ``Ethernet0:3`` -> oid, as the queue map. Its
        groups are not named in ``counter_oids``: SONiC polls them only where the
        ``PG_DROP``/``PG_WATERMARK`` counter groups are on, so a group without counters is no
        fault."""
        groups = indexed_objects(mapping)
        self.table.set_pgs([(oid, g.port, g.queue) for oid, g in groups.items()])

    def counter_oids(self) -> list[str]:
        """Every oid the maps name, queues then ports, sorted: what to subscribe to."""
        return sorted(self.queue_oids) + sorted(self.port_oids)

    # updates ---------------------------------------------------------------------------------

    def ingest(self, response: bytes) -> int | None:
        """A serialized SubscribeResponse: when it is a batch of counter hashes (a SAMPLE
        tick), every hash is taken and their number returned; otherwise nothing is taken and
        None returned (decode it and feed its changes one by one)."""
        taken: int | None = self.table.ingest(response)
        return taken

    def counters(self, oid: str, fields: dict[str, Any], ts_ns: int) -> ResetEvent | None:
        """One decoded ``COUNTERS:<oid>`` hash; the reset it reveals, if any."""
        reset = self.table.counters(oid, fields, ts_ns)
        return ResetEvent(*reset) if reset is not None else None

    def agent_state(self, key: str, fields: Mapping[str, str] | None, ts_ns: int) -> None:
        """``SLUICE_AGENT_STATE|<key>``: ``global`` or ``<port>|<queue>``; None or no field
        (sonic-gnmi's ``{key: {}}`` for a deleted key): deleted."""
        self.table.seen(ts_ns)
        if not fields:
            fields = None
        if key == "global":
            self.agent = agent_global(fields) if fields is not None else None
            return
        port, sep, queue = key.partition("|")
        if not sep:
            return
        queue_id = QueueId(port, queue)
        if fields is None:
            self.agent_queues.pop(queue_id, None)
            return
        threshold = parse_count(fields.get("threshold_bytes", ""))
        self.agent_queues[queue_id] = AgentQueue(threshold, fields.get("basis", ""))

    # views -----------------------------------------------------------------------------------

    @property
    def updates(self) -> int:
        """Counter hashes and agent reports taken."""
        updates: int = self.table.updates
        return updates

    @property
    def last_update_ns(self) -> int | None:
        """The newest switch timestamp taken."""
        last: int | None = self.table.last_update_ns
        return last

    @property
    def unknown_oids(self) -> int:
        """Counter hashes whose oid neither map names."""
        unknown: int = self.table.unknown_oids
        return unknown

    @property
    def resets(self) -> dict[ResetEvent, int]:
        """Resets per object that had one (queue ``""`` for a port)."""
        return {ResetEvent(port, queue): n for port, queue, n in self.table.resets()}

    @property
    def queues(self) -> dict[QueueId, CounterView]:
        """Each queue that has had a hash (built at each read)."""
        return {QueueId(p, q): CounterView(*views) for p, q, views in self.table.queues()}

    @property
    def ports(self) -> dict[str, CounterView]:
        """Each port that has had a hash."""
        return {port: CounterView(*views) for port, views in self.table.ports()}

    @property
    def priority_groups(self) -> dict[QueueId, CounterView]:
        """Each ingress priority group that has had a hash (``QueueId.queue``: its index)."""
        return {QueueId(p, g): CounterView(*views) for p, g, views in self.table.pgs()}

    @property
    def pg_resets(self) -> dict[QueueId, int]:
        """Resets per priority group that had one."""
        return {QueueId(port, group): n for port, group, n in self.table.pg_resets()}

    def watched_priorities(self) -> list[int]:
        """The lossless classes' PFC priorities: their pause frames have series while quiet."""
        return sorted(int(p) for p in self.pfc_classes if p.isdigit())

    def counter_lines(self, names: list[str]) -> list[bytes]:
        """The sample lines of the counter and PFC families (the queues', ports', priorities',
        priority groups' and watchdog's series), one ``bytes`` per name of ``names``, in the
        core's slot order (``controller_core.CounterTable.exposition``;
        ``controller.telemetry.metrics.COUNTER_FAMILIES``)."""
        chunks: list[bytes] = self.table.exposition(
            names,
            self.name,
            self.queue_classes,
            self._port_speeds_bps,
            self.pfc_classes,
            self.watched_priorities(),
        )
        return chunks

    def class_of(self, queue: str) -> str:
        return self.queue_classes.get(queue, "")

    def last_update_age_s(self, now_ns: int) -> float | None:
        if self.last_update_ns is None:
            return None
        return max(0.0, (now_ns - self.last_update_ns) / NS_PER_S)

    def is_stale(self, now_ns: int, stale_after_s: float) -> bool:
        """No update within ``stale_after_s`` (or none ever): the switch's data is old."""
        age = self.last_update_age_s(now_ns)
        return age is None or age > stale_after_s
