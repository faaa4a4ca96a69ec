"""The collector's Prometheus metrics (names and labels: docs/telemetry.md, the telemetry
contract), rendered at scrape time from the switches' state straight into the text
exposition format (Prometheus "Exposition formats", text format 0.0.4), so an update costs no
label lookup and a queue or switch that goes away leaves no stale series.

The counter families (eight per queue, four per port: most of the series) and the PFC
families (pause frames per port and priority, the priority groups' drops and watermarks, the
watchdog's storms per queue) are written by the compiled core (``controller_core.
CounterTable.exposition``, native/controller-core/src/exposition.rs) into one buffer per
family and switch, with no Python object per series, and without the interpreter, so the
streams' thread ingests meanwhile; ``COUNTER_FAMILIES`` names them in the core's slot order.
The agent's queues, the switch and collector families are written here, each queue's label
text escaped once and cached.

Why not prometheus_client: a 250-switch collector holds about 1.35 million series, and
building a ``Sample`` per series and then formatting it (label escaping, float to Go string)
cost 10.6 CPU-seconds a scrape, 7.9 us a sample, where this takes 0.4 (0.3 us), measured in
the same run (``bench/telemetry_scrape_bench.py``; docs/telemetry.md, "The scrape").

Cardinality is bounded by the fleet: per switch, ports x queues series for each queue metric
(64 x 8 = 512), one per port for each port metric, a handful per switch, and a few per
collector; ``class`` and ``basis`` are functions of (switch, port, queue), not new dimensions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from controller.telemetry.rates import NS_PER_S
from controller.telemetry.state import QueueId, SwitchTelemetry, orders_version_number

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family: its ``# HELP``/``# TYPE`` header and the lines of its samples."""

    name: str
    doc: str
    kind: str = "gauge"  # or "counter": its samples are named ``<name>_total``

    def sample_name(self) -> str:
        return f"{self.name}_total" if self.kind == "counter" else self.name

    def header(self) -> str:
        """HELP and TYPE name the samples (``_total`` for a counter), as prometheus_client
        writes text format 0.0.4."""
        doc = self.doc.replace("\\", "\\\\").replace("\n", "\\n")
        name = self.sample_name()
        return f"# HELP {name} {doc}\n# TYPE {name} {self.kind}\n"

    def prefix(self) -> str:
        """A sample line's start, up to and including the ``{`` of its labels."""
        return f"{self.sample_name()}{{"


def label_value(text: str) -> str:
    """A label value escaped as the text format requires (backslash, quote, newline)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels_text(pairs: Iterable[tuple[str, str]]) -> str:
    return ",".join(f'{name}="{label_value(value)}"' for name, value in pairs)


_NOT_FINITE = {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}


def number(value: float) -> str:
    """A sample value as the text format reads it (Go's ParseFloat: ``repr`` of an int or a
    float, except the spelling of infinities and NaN)."""
    text = repr(value)
    return _NOT_FINITE.get(text, text) if text[-1] in "fn" else text


QUEUE_TX_BYTES = Family("sluice_queue_tx_bytes_per_second", "bytes the queue sent per second")
QUEUE_TX_PACKETS = Family("sluice_queue_tx_packets_per_second", "packets sent per second")
QUEUE_DROPPED_PACKETS = Family(
    "sluice_queue_dropped_packets_per_second", "packets dropped per second"
)
QUEUE_DROPPED_BYTES = Family("sluice_queue_dropped_bytes_per_second", "bytes dropped per second")
QUEUE_ECN_MARKED = Family(
    "sluice_queue_ecn_marked_packets_per_second",
    "packets ECN-marked per second (switches with WRED/ECN counters only)",
)
QUEUE_MARK_FRACTION = Family(
    "sluice_queue_mark_fraction", "marked / sent packets over the last interval"
)
QUEUE_OCCUPANCY = Family(
    "sluice_queue_occupancy_bytes",
    "current occupancy where polled, else the watermark since the last sample",
)
QUEUE_WATERMARK = Family("sluice_queue_watermark_bytes", "the queue's shared-buffer watermark")
THRESHOLD = Family("sluice_queue_threshold_bytes", "the agent's threshold in force")
THRESHOLD_INFO = Family("sluice_queue_threshold_info", "who set the threshold in force")
PORT_TX = Family("sluice_port_tx_bytes_per_second", "bytes sent per second")
PORT_RX = Family("sluice_port_rx_bytes_per_second", "bytes received per second")
PORT_UTILISATION = Family("sluice_port_utilisation", "tx bits per second over the port speed")
PORT_SPEED = Family("sluice_port_speed_bits_per_second", "the port's line rate")
HEARTBEAT = Family("sluice_agent_heartbeat_age_seconds", "now minus the agent's last heartbeat")
MODE = Family("sluice_agent_mode_info", "the agent's mode and algorithm")
VERSION = Family("sluice_agent_orders_version", "the orders' version in force (hex as a number)")
LOOP = Family("sluice_agent_loop_seconds", "the agent's last loop")
STREAM_UP = Family("sluice_switch_stream_up", "1 while the Subscribe stream is up")
STREAM_FAULT = Family(
    "sluice_switch_stream_fault_info",
    "1 for each of a switch's streams that is failing now, by reason "
    "(tls_certificate, tls_handshake, auth_refused, unreachable, refused, empty, ...)",
)
UPDATE_AGE = Family(
    "sluice_switch_last_update_age_seconds", "now minus the last update's timestamp"
)
PFC_RX = Family(
    "sluice_port_pfc_rx_pause_frames_per_second", "PFC pause frames received per second"
)
PFC_TX = Family("sluice_port_pfc_tx_pause_frames_per_second", "PFC pause frames sent per second")
PG_DROPPED = Family(
    "sluice_pg_dropped_packets_per_second", "packets the ingress priority group dropped per second"
)
PG_SHARED_WATERMARK = Family(
    "sluice_pg_shared_watermark_bytes", "the priority group's shared-buffer watermark"
)
PG_HEADROOM_WATERMARK = Family(
    "sluice_pg_headroom_watermark_bytes", "the priority group's headroom (xoff room) watermark"
)
WD_DETECTED = Family(
    "sluice_queue_pfc_storms_detected", "PFC storms the watchdog detected on the queue", "counter"
)
WD_RESTORED = Family(
    "sluice_queue_pfc_storms_restored", "PFC storms the watchdog restored on the queue", "counter"
)
WD_STORMING = Family(
    "sluice_queue_pfc_storm_active", "1 while the watchdog holds the queue in a storm"
)
RESETS = Family("sluice_counter_resets", "counters that went backwards", "counter")
UPDATES = Family("sluice_collector_updates", "updates ingested", "counter")
UNKNOWN = Family("sluice_collector_unknown_oids", "counter hashes no name map names", "counter")
SWITCHES = Family("sluice_collector_switches", "switches this collector streams")
LAG = Family("sluice_collector_lag_seconds", "now minus the newest update's switch timestamp")

# The families the compiled core writes, in its slot order (src/exposition.rs: SLOTS): the
# counter families, then the PFC ones a lossless class adds (``PFC_FAMILIES``).
PFC_FAMILIES = (
    PFC_RX,
    PFC_TX,
    PG_DROPPED,
    PG_SHARED_WATERMARK,
    PG_HEADROOM_WATERMARK,
    WD_DETECTED,
    WD_RESTORED,
    WD_STORMING,
)
COUNTER_FAMILIES = (
    QUEUE_TX_BYTES,
    QUEUE_TX_PACKETS,
    QUEUE_DROPPED_PACKETS,
    QUEUE_DROPPED_BYTES,
    QUEUE_ECN_MARKED,
    QUEUE_MARK_FRACTION,
    QUEUE_OCCUPANCY,
    QUEUE_WATERMARK,
    PORT_SPEED,
    PORT_TX,
    PORT_RX,
    PORT_UTILISATION,
    *PFC_FAMILIES,
)
COUNTER_NAMES = [family.sample_name() for family in COUNTER_FAMILIES]
# Every family, in the exposition's order.
FAMILIES = (
    *COUNTER_FAMILIES[:8],
    THRESHOLD,
    THRESHOLD_INFO,
    PORT_TX,
    PORT_RX,
    PORT_UTILISATION,
    PORT_SPEED,
    HEARTBEAT,
    MODE,
    VERSION,
    LOOP,
    STREAM_UP,
    STREAM_FAULT,
    UPDATE_AGE,
    *PFC_FAMILIES,
    RESETS,
    UPDATES,
    UNKNOWN,
    SWITCHES,
    LAG,
)

Lines = dict[Family, list[str]]


class LabelCache:
    """Each object's escaped label text, made once and reused by every scrape (a label set
    is the same text in every family of its object)."""

    def __init__(self) -> None:
        self._queues: dict[str, dict[QueueId, tuple[str, str]]] = {}

    def queue(self, sw: SwitchTelemetry, queue: QueueId) -> str:
        """``switch,port,queue,class``: the class is looked up each time, as the intent may
        move a class to another queue."""
        known = self._queues.setdefault(sw.name, {})
        klass = sw.class_of(queue.queue)
        cached = known.get(queue)
        if cached is not None and cached[0] == klass:
            return cached[1]
        text = labels_text(
            (("switch", sw.name), ("port", queue.port), ("queue", queue.queue), ("class", klass))
        )
        known[queue] = (klass, text)
        return text

    def keep_only(self, names: set[str]) -> None:
        """Forget the switches no longer streamed (their objects are gone from the scrape)."""
        for name in [n for n in self._queues if n not in names]:
            del self._queues[name]


class TelemetryMetrics:
    """Every metric of one collector process, read from ``switches()`` at scrape time."""

    def __init__(
        self,
        collector: str,
        switches: Callable[[], Iterable[SwitchTelemetry]],
        wall_ns: Callable[[], int],
        lock: AbstractContextManager[object] | None = None,
    ) -> None:
        self._collector = collector
        self._switches = switches
        self._wall_ns = wall_ns
        self._lock = lock if lock is not None else nullcontext()
        self._labels = LabelCache()

    def render(self) -> bytes:
        """The whole exposition. The lock the updates are applied under (the scrape runs on
        the metrics endpoint's thread) is taken once per switch, not for the whole scrape, so a
        large scrape delays an update by one switch's lines at most."""
        with self._lock:
            switches = list(self._switches())
        counters: list[list[bytes]] = [[] for _ in COUNTER_FAMILIES]
        lines: Lines = {family: [] for family in FAMILIES}
        now = self._wall_ns()
        for sw in switches:
            with self._lock:
                chunks = self.counter_chunks(sw)
                self._agent_lines(sw, lines)
                _switch_lines(sw, now, lines)
            for chunk, family_chunks in zip(chunks, counters, strict=True):
                family_chunks.append(chunk)
        with self._lock:
            self._collector_lines(switches, now, lines)
        self._labels.keep_only({sw.name for sw in switches})
        written = dict(zip(COUNTER_FAMILIES, counters, strict=True))
        out: list[bytes] = []
        for family in FAMILIES:
            out.append(family.header().encode())
            if family in written:
                out.extend(written[family])
            else:
                out.append("".join(lines[family]).encode())
        return b"".join(out)

    def counter_chunks(self, sw: SwitchTelemetry) -> list[bytes]:
        """``sw``'s counter and PFC families' sample lines, one ``bytes`` per family of
        ``COUNTER_FAMILIES`` (called holding the lock)."""
        return sw.counter_lines(COUNTER_NAMES)

    def _agent_lines(self, sw: SwitchTelemetry, lines: Lines) -> None:
        threshold, info = lines[THRESHOLD], lines[THRESHOLD_INFO]
        threshold_prefix, info_prefix = THRESHOLD.prefix(), THRESHOLD_INFO.prefix()
        for queue, state in sw.agent_queues.items():
            labels = self._labels.queue(sw, queue)
            if state.threshold_bytes is not None:
                threshold.append(f"{threshold_prefix}{labels}}} {number(state.threshold_bytes)}\n")
            info.append(f'{info_prefix}{labels},basis="{label_value(state.basis)}"}} 1\n')

    def _collector_lines(self, switches: list[SwitchTelemetry], now: int, lines: Lines) -> None:
        labels = labels_text((("collector", self._collector),))
        _add(lines, UPDATES, labels, sum(s.updates for s in switches))
        _add(lines, UNKNOWN, labels, sum(s.unknown_oids for s in switches))
        _add(lines, SWITCHES, labels, len(switches))
        newest = [s.last_update_ns for s in switches if s.last_update_ns is not None]
        if newest:
            _add(lines, LAG, labels, max(0.0, (now - max(newest)) / NS_PER_S))


def _add(lines: Lines, family: Family, labels: str, value: float) -> None:
    lines[family].append(f"{family.prefix()}{labels}}} {number(value)}\n")


def _switch_lines(sw: SwitchTelemetry, now: int, lines: Lines) -> None:
    one = labels_text((("switch", sw.name),))
    _add(lines, STREAM_UP, one, 1 if sw.stream_up else 0)
    for stream, fault in sorted(sw.faults.items()):
        labels = (("switch", sw.name), ("stream", stream), ("reason", fault.reason.value))
        _add(lines, STREAM_FAULT, labels_text(labels), 1)
    last = sw.last_update_age_s(now)
    if last is not None:
        _add(lines, UPDATE_AGE, one, last)
    for event, count in sw.resets.items():
        reset = labels_text((("switch", sw.name), ("port", event.port), ("queue", event.queue)))
        _add(lines, RESETS, reset, count)
    for group, count in sw.pg_resets.items():
        pairs = (("switch", sw.name), ("port", group.port), ("queue", ""), ("pg", group.queue))
        _add(lines, RESETS, labels_text(pairs), count)
    agent = sw.agent
    if agent is None:
        return
    if agent.heartbeat_ms is not None:
        _add(lines, HEARTBEAT, one, max(0.0, now / NS_PER_S - agent.heartbeat_ms / 1000))
    mode = labels_text((("switch", sw.name), ("mode", agent.mode), ("algorithm", agent.algorithm)))
    _add(lines, MODE, mode, 1)
    version = orders_version_number(agent.version)
    if version is not None:
        _add(lines, VERSION, one, version)
    if agent.loop_seconds is not None:
        _add(lines, LOOP, one, agent.loop_seconds)
