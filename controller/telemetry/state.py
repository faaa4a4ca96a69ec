"""One switch's telemetry as the collector holds it (pure: updates in, views out).

Inputs are what the Subscribe stream carries (docs/telemetry.md): the two COUNTERS_DB name
maps (``COUNTERS_QUEUE_NAME_MAP``: ``Ethernet0:3`` -> oid, ``COUNTERS_PORT_NAME_MAP``:
``Ethernet0`` -> oid), the ``COUNTERS:<oid>`` hashes with SAI stat names, and the agent's
STATE_DB report (``SLUICE_AGENT_STATE|global`` and ``|<port>|<queue>``). Every input carries
the switch's timestamp; rates come from ``controller.telemetry.rates``.

A counter hash whose oid is in neither map is counted as unknown and otherwise ignored (a
map not yet received, or an object the maps no longer name); a field that is not a decimal
is ignored, never raised on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.telemetry.rates import NS_PER_S, fraction, parse_count

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

QUEUE_RATE_FIELDS = frozenset(
    (
        QUEUE_BYTES,
        QUEUE_PACKETS,
        QUEUE_DROPPED_PACKETS,
        QUEUE_DROPPED_BYTES,
        QUEUE_ECN_MARKED_PACKETS,
    )
)
PORT_RATE_FIELDS = frozenset((PORT_OUT_OCTETS, PORT_IN_OCTETS))


@dataclass(frozen=True, slots=True, order=True)
class QueueId:
    port: str
    queue: str  # the index as SONiC writes it in the name map: "3"


@dataclass(frozen=True, slots=True)
class ResetEvent:
    """A counter hash that went backwards (cleared, wrapped, the switch restarted)."""

    port: str
    queue: str  # "" for a port's counters


@dataclass(slots=True)
class CounterSet:
    """Rates of one object's counters; ``rates`` holds the last rate of each field.

    A hash's fields arrive together under one timestamp, so the samples are kept per object
    (``(timestamp_ns, {field: count})``, oldest first), not per field: one window check per
    update instead of one per field. The rule is ``CounterTrack``'s, applied to every rate
    field at once (tests/unit/telemetry/test_counter_set.py holds the two equal): a sample
    not newer than the last changes no rate; a hash any of whose rate counters went
    backwards is one reset (SONiC clears, and syncd restarts, a whole object) and starts
    every rate afresh; a rate spans at least ``window_ns`` of switch time.
    """

    window_ns: int
    samples: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    rates: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, int] = field(default_factory=dict)

    def update(self, fields: Mapping[str, str], ts_ns: int, rate_fields: frozenset[str]) -> bool:
        """Take one hash; True when any rate field went backwards (one reset for the hash)."""
        counts: dict[str, int] = {}
        gauges = self.gauges
        for name, text in fields.items():
            # parse_count inlined: this loop runs for every field of every update.
            if not isinstance(text, str) or not text.isdigit():
                continue
            if name in rate_fields:
                counts[name] = int(text)
            else:
                gauges[name] = int(text)
        samples = self.samples
        if not counts:  # nothing to rate (gauges only, or no decimal): no sample either
            return False
        if not samples:
            samples.append((ts_ns, counts))
            return False
        last_ts, last = samples[-1]
        if ts_ns <= last_ts:  # a duplicate or reordered notification
            return False
        for name, value in counts.items():
            if value < last.get(name, 0):
                samples.clear()
                samples.append((ts_ns, counts))
                self.rates = {}
                return True
        samples.append((ts_ns, counts))
        # Drop samples older than needed: keep the newest one that still spans the window.
        window = self.window_ns
        while len(samples) > 2 and ts_ns - samples[1][0] >= window:
            del samples[0]
        oldest_ts, oldest = samples[0]
        span = ts_ns - oldest_ts
        if span < window:
            return False
        rates = self.rates
        for name, value in counts.items():
            base = oldest.get(name)
            if base is not None:
                rates[name] = (value - base) * NS_PER_S / span
        return False


@dataclass(frozen=True, slots=True)
class QueueView:
    tx_bytes_per_second: float | None
    tx_packets_per_second: float | None
    dropped_packets_per_second: float | None
    dropped_bytes_per_second: float | None
    ecn_marked_packets_per_second: float | None
    mark_fraction: float | None
    occupancy_bytes: int | None
    watermark_bytes: int | None


def queue_view(counters: CounterSet) -> QueueView:
    rates, gauges = counters.rates, counters.gauges
    marked = rates.get(QUEUE_ECN_MARKED_PACKETS)
    watermark = gauges.get(QUEUE_SHARED_WATERMARK, gauges.get(QUEUE_WATERMARK))
    return QueueView(
        tx_bytes_per_second=rates.get(QUEUE_BYTES),
        tx_packets_per_second=rates.get(QUEUE_PACKETS),
        dropped_packets_per_second=rates.get(QUEUE_DROPPED_PACKETS),
        dropped_bytes_per_second=rates.get(QUEUE_DROPPED_BYTES),
        ecn_marked_packets_per_second=marked,
        mark_fraction=fraction(marked, rates.get(QUEUE_PACKETS)),
        # Current occupancy where the switch polls it, else the watermark since the last read.
        occupancy_bytes=gauges.get(QUEUE_OCCUPANCY, watermark),
        watermark_bytes=watermark,
    )


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
    ) -> None:
        self.name = name
        self.port_speeds_bps = dict(port_speeds_bps)
        self.queue_classes = dict(queue_classes)  # queue index -> class name
        self.window_ns = window_ns
        self.queue_oids: dict[str, QueueId] = {}
        self.port_oids: dict[str, str] = {}
        self.queues: dict[QueueId, CounterSet] = {}
        self.ports: dict[str, CounterSet] = {}
        self.agent: AgentGlobal | None = None
        self.agent_queues: dict[QueueId, AgentQueue] = {}
        self.resets: dict[ResetEvent, int] = {}
        self.unknown_oids = 0
        self.updates = 0
        self.last_update_ns: int | None = None
        self.stream_up = False

    # name maps -------------------------------------------------------------------------------

    def set_queue_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_QUEUE_NAME_MAP`` as a whole: ``Ethernet0:3`` -> oid."""
        oids: dict[str, QueueId] = {}
        for name, oid in mapping.items():
            port, sep, index = name.rpartition(":")
            if sep and port and index.isdigit():
                oids[oid] = QueueId(port, index)
        # A queue under a new oid is a new object (syncd restarted): its counts start afresh.
        kept = {q for oid, q in oids.items() if self.queue_oids.get(oid) == q}
        self.queue_oids = oids
        self.queues = {q: c for q, c in self.queues.items() if q in kept}

    def set_port_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_PORT_NAME_MAP`` as a whole: ``Ethernet0`` -> oid."""
        oids = {oid: port for port, oid in mapping.items()}
        kept = {p for oid, p in oids.items() if self.port_oids.get(oid) == p}
        self.port_oids = oids
        self.ports = {p: c for p, c in self.ports.items() if p in kept}

    def counter_oids(self) -> list[str]:
        """Every oid the maps name, queues then ports, sorted: what to subscribe to."""
        return sorted(self.queue_oids) + sorted(self.port_oids)

    # updates ---------------------------------------------------------------------------------

    def _seen(self, ts_ns: int) -> None:
        self.updates += 1
        if self.last_update_ns is None or ts_ns > self.last_update_ns:
            self.last_update_ns = ts_ns

    def counters(self, oid: str, fields: Mapping[str, str], ts_ns: int) -> ResetEvent | None:
        """One ``COUNTERS:<oid>`` hash; the reset it reveals, if any."""
        self.updates += 1  # _seen inlined: this runs for every counter update
        last = self.last_update_ns
        if last is None or ts_ns > last:
            self.last_update_ns = ts_ns
        queue = self.queue_oids.get(oid)
        if queue is not None:
            counters = self.queues.get(queue)
            if counters is None:
                counters = self.queues[queue] = CounterSet(self.window_ns)
            if counters.update(fields, ts_ns, QUEUE_RATE_FIELDS):
                return self._reset(ResetEvent(queue.port, queue.queue))
            return None
        port = self.port_oids.get(oid)
        if port is None:
            self.unknown_oids += 1
            return None
        counters = self.ports.get(port)
        if counters is None:
            counters = self.ports[port] = CounterSet(self.window_ns)
        if counters.update(fields, ts_ns, PORT_RATE_FIELDS):
            return self._reset(ResetEvent(port, ""))
        return None

    def _reset(self, event: ResetEvent) -> ResetEvent:
        self.resets[event] = self.resets.get(event, 0) + 1
        return event

    def agent_state(self, key: str, fields: Mapping[str, str] | None, ts_ns: int) -> None:
        """``SLUICE_AGENT_STATE|<key>``: ``global`` or ``<port>|<queue>``; None: deleted."""
        self._seen(ts_ns)
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

    def queue_views(self) -> dict[QueueId, QueueView]:
        return {q: queue_view(c) for q, c in sorted(self.queues.items())}

    def port_rates(self, port: str) -> tuple[float | None, float | None]:
        """(tx, rx) bytes per second of ``port``."""
        counters = self.ports.get(port)
        if counters is None:
            return None, None
        return counters.rates.get(PORT_OUT_OCTETS), counters.rates.get(PORT_IN_OCTETS)

    def utilisation(self, port: str) -> float | None:
        tx, _ = self.port_rates(port)
        speed = self.port_speeds_bps.get(port)
        if tx is None or not speed:
            return None
        return fraction(tx * 8, speed)

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
