"""The collector's counter rule written plainly in Python: the reference the compiled core
(``controller_core.CounterTable``, native/controller-core/src/table.rs) is held equal to
(tests/unit/telemetry/test_ingest_core.py). It is the rule the collector ran in Python before
the core, with one change the core made: a count is a decimal of ASCII digits that fits 64
bits (SAI's counters are ``uint64_t``), where ``str.isdigit`` also took other scripts' digits
(``"١٢"``) and superscripts, on which ``int`` raised. ``CounterSet`` is itself held equal to
the per-field ``CounterTrack`` below (tests/unit/telemetry/test_counter_set.py).

Since the real SONiC server: a counter that grows past its object's line rate is a reset as
going backwards is (``controller.telemetry.rates.grew_too_fast``; a queue's sent bytes and
packets are bounded by its port, its drops by the whole switch); a hash with no member
(``{}``: sonic-gnmi's answer for a key that is gone) is no update; a hash whose oid no map
names is unknown only when it holds a queue's or a port's stats (a whole COUNTERS table also
holds priority groups and buffer pools).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.telemetry.rates import MIN_WIRE_BYTES, NS_PER_S, grew_too_fast
from controller.telemetry.state import (
    PFC_PRIORITIES,
    PG_DROPPED_PACKETS,
    PORT_IN_OCTETS,
    PORT_OUT_OCTETS,
    QUEUE_BYTES,
    QUEUE_DROPPED_BYTES,
    QUEUE_DROPPED_PACKETS,
    QUEUE_ECN_MARKED_PACKETS,
    QUEUE_PACKETS,
    QueueId,
    ResetEvent,
    indexed_objects,
    pfc_rx_field,
    pfc_tx_field,
)

QUEUE_RATE_FIELDS = frozenset(
    (QUEUE_BYTES, QUEUE_PACKETS, QUEUE_DROPPED_PACKETS, QUEUE_DROPPED_BYTES,
     QUEUE_ECN_MARKED_PACKETS)
)  # fmt: skip
PFC_FIELDS = frozenset(f(p) for p in PFC_PRIORITIES for f in (pfc_rx_field, pfc_tx_field))
PORT_RATE_FIELDS = frozenset((PORT_OUT_OCTETS, PORT_IN_OCTETS)) | PFC_FIELDS
PG_PACKETS = "SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS"
PG_BYTES = "SAI_INGRESS_PRIORITY_GROUP_STAT_BYTES"
PG_RATE_FIELDS = frozenset((PG_PACKETS, PG_BYTES, PG_DROPPED_PACKETS))
COUNT_LIMIT = 2**64
Limits = dict[str, int]  # rate field -> the most it can grow a second


def queue_limits(port_bytes_per_s: int | None, switch_bytes_per_s: int | None) -> Limits:
    limits: Limits = {}
    if port_bytes_per_s is not None:
        limits[QUEUE_BYTES] = port_bytes_per_s
        packets = port_bytes_per_s // MIN_WIRE_BYTES
        limits[QUEUE_PACKETS] = limits[QUEUE_ECN_MARKED_PACKETS] = packets
    if switch_bytes_per_s is not None:
        limits[QUEUE_DROPPED_BYTES] = switch_bytes_per_s
        limits[QUEUE_DROPPED_PACKETS] = switch_bytes_per_s // MIN_WIRE_BYTES
    return limits


def port_limits(port_bytes_per_s: int | None) -> Limits:
    """Octets at the line rate; PFC frames, minimum-size frames, at most its frame rate."""
    if port_bytes_per_s is None:
        return {}
    frames = dict.fromkeys(PFC_FIELDS, port_bytes_per_s // MIN_WIRE_BYTES)
    return {PORT_OUT_OCTETS: port_bytes_per_s, PORT_IN_OCTETS: port_bytes_per_s, **frames}


def pg_limits(port_bytes_per_s: int | None) -> Limits:
    """What a priority group counts arrived on its port."""
    if port_bytes_per_s is None:
        return {}
    packets = port_bytes_per_s // MIN_WIRE_BYTES
    return {PG_PACKETS: packets, PG_BYTES: port_bytes_per_s, PG_DROPPED_PACKETS: packets}


# --- per field: one counter's samples (the rule as the collector first ran it) ---------------
#
# A SONiC counter only grows until something clears it (``sonic-clear queuecounters``), the
# switch or syncd restarts, or a 64-bit count wraps. A counter that goes backwards is therefore
# a reset: it yields no rate for that interval (never a negative one) and exactly one reset
# event, and the new value becomes the base of the next delta. Rates are taken over a window of
# at least ``window_ns`` of switch time, so the time a sample waited before it was read (a
# flex-counter poll, a SAMPLE tick) is a small part of the span the rate covers.


class Step(NamedTuple):
    """What one new sample of a counter gave: a rate per second (None until two samples span
    the window, or right after a reset) and whether this sample was a reset. (A tuple: one
    is made per counter field per update.)"""

    rate: float | None
    reset: bool


NO_RATE = Step(None, reset=False)
RESET = Step(None, reset=True)


@dataclass(slots=True)
class CounterTrack:
    """The recent samples ``(timestamp_ns, value)`` of one counter, oldest first (a list:
    it holds two or a few samples, and a switch has thousands of these). ``limit_per_s``:
    the most it can grow a second at line rate (None: unbounded but for going backwards);
    ``changed_ns``: when the newest value first arrived."""

    window_ns: int = 0
    samples: list[tuple[int, int]] = field(default_factory=list)
    limit_per_s: int | None = None
    changed_ns: int = 0

    def add(self, ts_ns: int, value: int) -> Step:
        """Record ``value`` seen at switch time ``ts_ns``; a sample not newer than the last one
        (a duplicate or reordered notification) changes nothing."""
        if self.window_ns == 0 and len(self.samples) == 1:
            return self._add_to_last(ts_ns, value)
        if self.samples:
            last_ts, last_value = self.samples[-1]
            if ts_ns <= last_ts:
                return Step(None, reset=False)
            if self._is_reset(ts_ns, value, last_value):
                self.samples.clear()
                self.samples.append((ts_ns, value))
                return Step(None, reset=True)
        else:
            self.changed_ns = ts_ns
        self.samples.append((ts_ns, value))
        return Step(self._rate(), reset=False)

    def _is_reset(self, ts_ns: int, value: int, last_value: int) -> bool:
        """Backwards, or past the line rate since the last value first arrived; moves
        ``changed_ns`` when the value moved."""
        since_ns = ts_ns - self.changed_ns
        if value != last_value:
            self.changed_ns = ts_ns
        return value < last_value or grew_too_fast(value - last_value, since_ns, self.limit_per_s)

    def _add_to_last(self, ts_ns: int, value: int) -> Step:
        """The common case (rate over the last interval): one sample kept, replaced."""
        last_ts, last_value = self.samples[0]
        if ts_ns <= last_ts:
            return NO_RATE
        self.samples[0] = (ts_ns, value)
        if self._is_reset(ts_ns, value, last_value):
            return RESET
        return Step((value - last_value) * NS_PER_S / (ts_ns - last_ts), False)

    def _rate(self) -> float | None:
        newest_ts, newest = self.samples[-1]
        # Drop samples older than needed: keep the newest one that still spans the window.
        while len(self.samples) > 2 and newest_ts - self.samples[1][0] >= self.window_ns:
            del self.samples[0]
        if len(self.samples) < 2:
            return None
        oldest_ts, oldest = self.samples[0]
        span = newest_ts - oldest_ts
        if span <= 0 or span < self.window_ns:
            return None
        return (newest - oldest) * NS_PER_S / span


def count(text: object) -> int | None:
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value < COUNT_LIMIT else None


@dataclass(slots=True)
class CounterSet:
    """Rates of one object's counters: samples per object, one reset per hash that went
    backwards, a rate spanning at least ``window_ns`` of switch time."""

    window_ns: int
    samples: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    rates: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, int] = field(default_factory=dict)
    changed_ns: int = 0  # when the newest sample's counts first arrived

    def update(
        self,
        fields: Mapping[str, Any],
        ts_ns: int,
        rate_fields: frozenset[str],
        limits: Limits | None = None,
    ) -> bool:
        """Take one hash; True when any rate field went backwards or grew past its limit (one
        reset for the hash)."""
        counts: dict[str, int] = {}
        for name, text in fields.items():
            value = count(text)
            if value is None:
                continue
            if name in rate_fields:
                counts[name] = value
            else:
                self.gauges[name] = value
        samples = self.samples
        if not counts:
            return False
        if not samples:
            samples.append((ts_ns, counts))
            self.changed_ns = ts_ns
            return False
        last_ts, last = samples[-1]
        if ts_ns <= last_ts:
            return False
        since_ns = ts_ns - self.changed_ns
        for name, value in counts.items():
            before = last.get(name)
            jumped = before is not None and grew_too_fast(
                value - before, since_ns, (limits or {}).get(name)
            )
            if value < last.get(name, 0) or jumped:
                samples.clear()
                samples.append((ts_ns, counts))
                self.rates = {}
                self.changed_ns = ts_ns
                return True
        if counts != last:
            self.changed_ns = ts_ns
        samples.append((ts_ns, counts))
        while len(samples) > 2 and ts_ns - samples[1][0] >= self.window_ns:
            del samples[0]
        oldest_ts, oldest = samples[0]
        span = ts_ns - oldest_ts
        if span < self.window_ns:
            return False
        for name, value in counts.items():
            base = oldest.get(name)
            if base is not None:
                self.rates[name] = (value - base) * NS_PER_S / span
        return False


class ReferenceSwitch:
    """One switch's counter objects by oid through the two name maps, as ``SwitchTelemetry``
    holds them."""

    def __init__(self, window_ns: int) -> None:
        self.window_ns = window_ns
        self.queue_oids: dict[str, QueueId] = {}
        self.port_oids: dict[str, str] = {}
        self.queues: dict[QueueId, CounterSet] = {}
        self.ports: dict[str, CounterSet] = {}
        self.pg_oids: dict[str, QueueId] = {}
        self.priority_groups: dict[QueueId, CounterSet] = {}
        self.resets: dict[ResetEvent, int] = {}
        self.pg_resets: dict[QueueId, int] = {}
        self.unknown_oids = 0
        self.updates = 0
        self.last_update_ns: int | None = None
        self.line_rates: dict[str, int] = {}  # port -> bytes a second

    def set_line_rates(self, rates: Mapping[str, int]) -> None:
        self.line_rates = dict(rates)

    def _switch_rate(self) -> int | None:
        return sum(self.line_rates.values()) or None

    def set_queue_map(self, mapping: Mapping[str, str]) -> None:
        oids = indexed_objects(mapping)
        kept = {q for oid, q in oids.items() if self.queue_oids.get(oid) == q}
        self.queue_oids = oids
        self.queues = {q: c for q, c in self.queues.items() if q in kept}

    def set_pg_map(self, mapping: Mapping[str, str]) -> None:
        """``COUNTERS_PG_NAME_MAP``, kept and renewed as the queue map is."""
        oids = indexed_objects(mapping)
        kept = {g for oid, g in oids.items() if self.pg_oids.get(oid) == g}
        self.pg_oids = oids
        self.priority_groups = {g: c for g, c in self.priority_groups.items() if g in kept}

    def set_port_map(self, mapping: Mapping[str, str]) -> None:
        oids = {oid: port for port, oid in mapping.items()}
        kept = {p for oid, p in oids.items() if self.port_oids.get(oid) == p}
        self.port_oids = oids
        self.ports = {p: c for p, c in self.ports.items() if p in kept}

    def seen(self, ts_ns: int) -> None:
        self.updates += 1
        if self.last_update_ns is None or ts_ns > self.last_update_ns:
            self.last_update_ns = ts_ns

    def counters(self, oid: str, fields: Mapping[str, Any], ts_ns: int) -> ResetEvent | None:
        if not fields:
            return None
        queue = self.queue_oids.get(oid)
        if queue is not None:
            self.seen(ts_ns)
            counters = self.queues.setdefault(queue, CounterSet(self.window_ns))
            limits = queue_limits(self.line_rates.get(queue.port), self._switch_rate())
            if counters.update(fields, ts_ns, QUEUE_RATE_FIELDS, limits):
                return self._reset(ResetEvent(queue.port, queue.queue))
            return None
        port = self.port_oids.get(oid)
        group = self.pg_oids.get(oid)
        if port is None and group is not None:
            self.seen(ts_ns)
            counters = self.priority_groups.setdefault(group, CounterSet(self.window_ns))
            if counters.update(
                fields, ts_ns, PG_RATE_FIELDS, pg_limits(self.line_rates.get(group.port))
            ):
                self.pg_resets[group] = self.pg_resets.get(group, 0) + 1
            return None  # a group's reset is counted apart, not a queue's or a port's
        if port is None:
            if any(str(n).startswith(("SAI_QUEUE_STAT_", "SAI_PORT_STAT_")) for n in fields):
                self.seen(ts_ns)
                self.unknown_oids += 1
            return None
        self.seen(ts_ns)
        counters = self.ports.setdefault(port, CounterSet(self.window_ns))
        if counters.update(fields, ts_ns, PORT_RATE_FIELDS, port_limits(self.line_rates.get(port))):
            return self._reset(ResetEvent(port, ""))
        return None

    def _reset(self, event: ResetEvent) -> ResetEvent:
        self.resets[event] = self.resets.get(event, 0) + 1
        return event
