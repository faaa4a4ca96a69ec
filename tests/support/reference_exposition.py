"""The counter and PFC families' exposition written plainly in Python, as the collector wrote
them before the compiled core did (``controller_core.CounterTable.exposition``,
native/controller-core/src/exposition.rs): a view per queue and per port (rates by name, the
mark fraction, occupancy falling back to the watermark, utilisation over the intent's speed),
the switch's PFC views (``pfc_rates``, ``watched_groups``, ``watchdog``), then a string format
per sample. It is the reference the core's lines are held equal to, byte
for byte (tests/unit/telemetry/test_exposition_core.py), and the scrape benches' baseline
(``ReferenceMetrics``: the code path before the core, bench/telemetry_scrape_bench.py and
bench/telemetry_bench.py). ``read_back`` reads an exposition with prometheus_client's own
parser and ``counter_values`` gives the values a switch's state implies, so that the tests
hold the text to a reader that is not ours as well as to this reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from controller.telemetry.metrics import COUNTER_FAMILIES, TelemetryMetrics, labels_text, number
from controller.telemetry.state import PG_DROPPED_PACKETS as PG_DROPPED_FIELD
from controller.telemetry.state import PG_SHARED_WATERMARK as PG_SHARED_FIELD
from controller.telemetry.state import PG_XOFF_ROOM_WATERMARK as PG_XOFF_ROOM_FIELD
from controller.telemetry.state import (
    PORT_IN_OCTETS,
    PORT_OUT_OCTETS,
    QUEUE_BYTES,
    QUEUE_DROPPED_BYTES,
    QUEUE_DROPPED_PACKETS,
    QUEUE_ECN_MARKED_PACKETS,
    QUEUE_OCCUPANCY,
    QUEUE_PACKETS,
    QUEUE_SHARED_WATERMARK,
    QUEUE_WATERMARK,
    CounterView,
    QueueId,
    SwitchTelemetry,
)
from controller.telemetry.state import WD_DETECTED as WD_DETECTED_FIELD
from controller.telemetry.state import WD_RESTORED as WD_RESTORED_FIELD


def fraction(part: float | None, whole: float | None) -> float | None:
    """``part / whole`` clamped to 0..1; None without both, 0 when nothing was sent."""
    if part is None or whole is None:
        return None
    if whole <= 0:
        return 0.0
    return min(1.0, max(0.0, part / whole))


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


def queue_view(counters: CounterView) -> QueueView:
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


def queue_views(sw: SwitchTelemetry) -> dict[QueueId, QueueView]:
    return {q: queue_view(c) for q, c in sorted(sw.queues.items())}


def port_rates(sw: SwitchTelemetry, port: str) -> tuple[float | None, float | None]:
    """(tx, rx) bytes per second of ``port``."""
    found = sw.ports.get(port)
    if found is None:
        return None, None
    return found.rates.get(PORT_OUT_OCTETS), found.rates.get(PORT_IN_OCTETS)


def utilisation(sw: SwitchTelemetry, port: str) -> float | None:
    tx, _ = port_rates(sw, port)
    speed = sw.port_speeds_bps.get(port)
    if tx is None or not speed:
        return None
    return fraction(tx * 8, speed)


# The queue view's fields in the core's slot order (the first eight counter families).
QUEUE_SLOTS = (
    "tx_bytes_per_second",
    "tx_packets_per_second",
    "dropped_packets_per_second",
    "dropped_bytes_per_second",
    "ecn_marked_packets_per_second",
    "mark_fraction",
    "occupancy_bytes",
    "watermark_bytes",
)
PORT_SPEED, PORT_TX, PORT_RX, PORT_UTILISATION = range(8, 12)
PFC_RX, PFC_TX, PG_DROPPED, PG_SHARED, PG_HEADROOM, WD_DETECTED, WD_RESTORED, WD_STORMING = range(
    12, 20
)
PfcValues = list[tuple[int, tuple[tuple[str, str], ...], float]]


@dataclass(frozen=True, slots=True)
class PfcRate:
    """One port's PFC pause frames a second on one priority, received and sent (None: no
    rate yet)."""

    port: str
    priority: str
    rx_per_second: float | None
    tx_per_second: float | None


@dataclass(frozen=True, slots=True)
class WatchdogCounts:
    """What SONiC's PFC watchdog counted on one queue: storms detected and restored. A
    queue is in a storm while more were detected than restored (the watchdog writes
    ``PFC_WD_STATUS`` ``stormed`` then; both counts are cleared together)."""

    detected: int
    restored: int

    @property
    def storming(self) -> bool:
        return self.detected > self.restored


def pfc_rates(sw: SwitchTelemetry) -> list[PfcRate]:
    """Each port's pause frames a second per priority with a rate either way, for the
    lossless classes' priorities and any other priority while it pauses (SONiC counts all
    eight of every port)."""
    rates = sw.table.pfc_rates(sw.watched_priorities())
    return [PfcRate(port, str(priority), rx, tx) for port, priority, rx, tx in rates]


def watched_groups(sw: SwitchTelemetry) -> dict[QueueId, CounterView]:
    """The lossless classes' priority groups, and any other group while it drops."""
    found = sw.table.pgs(sorted(sw.pfc_classes))
    return {QueueId(p, g): CounterView(*views) for p, g, views in found}


def watchdog(sw: SwitchTelemetry) -> dict[QueueId, WatchdogCounts]:
    """Each queue the PFC watchdog reports on, with its counts."""
    found = {}
    for port, queue, fields in sw.table.watchdog_queues():
        counts = dict(fields)
        found[QueueId(port, queue)] = WatchdogCounts(
            counts.get(WD_DETECTED_FIELD, 0), counts.get(WD_RESTORED_FIELD, 0)
        )
    return found


def pfc_class_of(sw: SwitchTelemetry, priority: str) -> str:
    """The lossless class on a PFC priority (or priority group), ``""`` for none."""
    return sw.pfc_classes.get(priority, "")


def pfc_values(sw: SwitchTelemetry) -> PfcValues:
    """The PFC families' samples of ``sw`` as ``(slot, labels, value)``, in the exposition's
    order: pause frames per port and priority (``class`` the lossless class on the priority),
    the watched priority groups' drops and watermarks (the lossless class on the group), the
    watchdog's storms per queue (the queue's class)."""
    out: PfcValues = []
    for pfc in pfc_rates(sw):
        labels = (("switch", sw.name), ("port", pfc.port), ("priority", pfc.priority),
                  ("class", pfc_class_of(sw, pfc.priority)))  # fmt: skip
        for slot, rate in ((PFC_RX, pfc.rx_per_second), (PFC_TX, pfc.tx_per_second)):
            if rate is not None:
                out.append((slot, labels, rate))
    for group, view in sorted(watched_groups(sw).items()):
        labels = (("switch", sw.name), ("port", group.port), ("pg", group.queue),
                  ("class", pfc_class_of(sw, group.queue)))  # fmt: skip
        dropped = view.rates.get(PG_DROPPED_FIELD)
        if dropped is not None:
            out.append((PG_DROPPED, labels, dropped))
        for slot, gauge in ((PG_SHARED, PG_SHARED_FIELD), (PG_HEADROOM, PG_XOFF_ROOM_FIELD)):
            if gauge in view.gauges:
                out.append((slot, labels, view.gauges[gauge]))
    for queue, counts in sorted(watchdog(sw).items()):
        labels = (("switch", sw.name), ("port", queue.port), ("queue", queue.queue),
                  ("class", sw.class_of(queue.queue)))  # fmt: skip
        out.append((WD_DETECTED, labels, counts.detected))
        out.append((WD_RESTORED, labels, counts.restored))
        out.append((WD_STORMING, labels, 1 if counts.storming else 0))
    return out


class LabelTexts:
    """Each object's label text, escaped once and reused (as the collector cached it)."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, QueueId, str], str] = {}
        self._ports: dict[tuple[str, str], str] = {}

    def queue(self, sw: SwitchTelemetry, queue: QueueId) -> str:
        klass = sw.class_of(queue.queue)
        key = (sw.name, queue, klass)
        text = self._queues.get(key)
        if text is None:
            pairs = (("switch", sw.name), ("port", queue.port), ("queue", queue.queue))
            text = self._queues[key] = labels_text((*pairs, ("class", klass)))
        return text

    def port(self, sw: SwitchTelemetry, port: str) -> str:
        text = self._ports.get((sw.name, port))
        if text is None:
            text = self._ports[(sw.name, port)] = labels_text((("switch", sw.name), ("port", port)))
        return text


def counter_lines(sw: SwitchTelemetry, names: list[str], labels: LabelTexts) -> list[str]:
    """The counter and PFC families' sample lines of ``sw``, one text per name, in slot
    order."""
    out: list[list[str]] = [[] for _ in names]
    for queue, counters in sw.queues.items():
        text = labels.queue(sw, queue)
        view = queue_view(counters)
        for slot, attr in enumerate(QUEUE_SLOTS):
            value = getattr(view, attr)
            if value is not None:
                out[slot].append(f"{names[slot]}{{{text}}} {number(value)}\n")
    for port, bps in sw.port_speeds_bps.items():
        out[PORT_SPEED].append(f"{names[PORT_SPEED]}{{{labels.port(sw, port)}}} {number(bps)}\n")
    for port in sw.ports:
        text = labels.port(sw, port)
        sent, received = port_rates(sw, port)
        used = utilisation(sw, port)
        for slot, value in ((PORT_TX, sent), (PORT_RX, received), (PORT_UTILISATION, used)):
            if value is not None:
                out[slot].append(f"{names[slot]}{{{text}}} {number(value)}\n")
    return ["".join(lines) for lines in out[:PFC_RX]] + pfc_lines(sw, names)


def pfc_lines(sw: SwitchTelemetry, names: list[str]) -> list[str]:
    """The PFC families' sample lines of ``sw``, one text per name from slot ``PFC_RX`` on,
    each object's labels escaped once (as the collector wrote them before the core did)."""
    out: list[list[str]] = [[] for _ in names[PFC_RX:]]
    last: tuple[tuple[str, str], ...] = ()
    for slot, pairs, value in pfc_values(sw):
        if pairs is not last:  # an object's lines share its labels
            last, text = pairs, labels_text(pairs)
        out[slot - PFC_RX].append(f"{names[slot]}{{{text}}} {number(value)}\n")
    return ["".join(lines) for lines in out]


class ReferenceMetrics(TelemetryMetrics):
    """The collector's exposition with the counter and PFC families written by
    ``counter_lines``: the code path before the compiled core wrote them (the bench's
    baseline)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._texts = LabelTexts()

    def counter_chunks(self, sw: SwitchTelemetry) -> list[bytes]:
        names = [family.sample_name() for family in COUNTER_FAMILIES]
        return [text.encode() for text in counter_lines(sw, names, self._texts)]


Sample = tuple[str, frozenset[tuple[str, str]]]


def read_back(text: bytes) -> dict[Sample, float]:
    """Every sample of an exposition as prometheus_client's own text-format parser reads it
    (a reader that is not ours: Prometheus reads the same format), by name and label set."""
    samples: dict[Sample, float] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"{key} twice"
            samples[key] = sample.value
    return samples


def counter_values(sw: SwitchTelemetry) -> dict[Sample, float]:
    """The counter and PFC families' samples ``sw``'s state implies, as values, not text: what a
    reader of the exposition must find."""
    out: dict[Sample, float] = {}

    def put(slot: int, labels: tuple[tuple[str, str], ...], value: float | None) -> None:
        if value is not None:  # a count stays an int: the parser reads one exactly
            out[(COUNTER_FAMILIES[slot].sample_name(), frozenset(labels))] = value

    labels: tuple[tuple[str, str], ...]
    for queue, view in queue_views(sw).items():
        labels = (("switch", sw.name), ("port", queue.port), ("queue", queue.queue),
                  ("class", sw.class_of(queue.queue)))  # fmt: skip
        for slot, attr in enumerate(QUEUE_SLOTS):
            put(slot, labels, getattr(view, attr))
    for port, bps in sw.port_speeds_bps.items():
        put(PORT_SPEED, (("switch", sw.name), ("port", port)), bps)
    for port in sw.ports:
        labels = (("switch", sw.name), ("port", port))
        sent, received = port_rates(sw, port)
        put(PORT_TX, labels, sent)
        put(PORT_RX, labels, received)
        put(PORT_UTILISATION, labels, utilisation(sw, port))
    for slot, labels, value in pfc_values(sw):
        put(slot, labels, value)
    return out
