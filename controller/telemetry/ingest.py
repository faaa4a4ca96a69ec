"""What one switch's streams feed into its telemetry state: the collector's stream handler
and its counters stream's decoder (pure: no I/O; the lock the metrics are read under is
passed in, since the scrape runs on another thread).

``SwitchHandler`` takes the notifications the reference decoder made (the name maps, the
agent's state, deletes, and every response before a stream's sync) and the streams' state
(up, faults); ``CounterIngest`` gives a synced counters stream's batches of counter hashes to
the compiled core whole, as the bytes gRPC received (docs/telemetry.md, "Ingest path and its
cost"). ``telemetry_for`` makes a switch's state from the intent: its ports' speeds and the
service class on each queue, the labels its series carry.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from controller.intent.models import Intent, Switch
from controller.openconfig.counters import QueueKey, queue_counters
from controller.sonic.compile import fleet_qos
from controller.southbound.faults import Fault
from controller.southbound.subscribe import (
    AGENT_STATE,
    COUNTERS,
    PG_NAME_MAP,
    PORT_NAME_MAP,
    QUEUE_NAME_MAP,
    SYNC,
    Decoder,
    Handler,
    Notification,
    keyed_decoder,
    reference_decoder,
)
from controller.telemetry.state import (
    QUEUE_BYTES,
    QUEUE_DROPPED_BYTES,
    QUEUE_DROPPED_PACKETS,
    QUEUE_ECN_MARKED_PACKETS,
    QUEUE_PACKETS,
    SwitchTelemetry,
)

STATE_LEAVES = {
    "transmit-pkts": QUEUE_PACKETS,
    "transmit-octets": QUEUE_BYTES,
    "dropped-pkts": QUEUE_DROPPED_PACKETS,
    "dropped-octets": QUEUE_DROPPED_BYTES,
    "ecn-marked-pkts": QUEUE_ECN_MARKED_PACKETS,
}
"""An openconfig-qos queue state leaf (``controller.openconfig.counters.COUNTER_LEAVES``) ->
the SAI queue statistic a SONiC switch counts the same under."""


def object_id(port: str, queue: str) -> str:
    """The counter table's id of an OpenConfig switch's queue (a SONiC queue's: its oid)."""
    return f"openconfig:{port}:{queue}"


def queue_classes(intent: Intent) -> dict[str, str]:
    """Queue index -> service class name (a PIAS stage counts as its class)."""
    return {str(q.queue): q.class_name.split("/")[0] for q in fleet_qos(intent).queues}


def pfc_classes(intent: Intent) -> dict[str, str]:
    """PFC priority -> the lossless class on it (its priority group has the same index:
    docs/lossless.md)."""
    return {
        str(c.lossless.pfc_priority): c.name
        for c in intent.service_classes
        if c.lossless is not None
    }


def telemetry_for(
    switch: Switch,
    classes: Mapping[str, str],
    window_ns: int,
    lossless: Mapping[str, str] | None = None,
) -> SwitchTelemetry:
    speeds = {p.name: p.speed_gbps * 1e9 for p in switch.ports}
    return SwitchTelemetry(switch.name, speeds, classes, window_ns, lossless)


class SwitchHandler(Handler):
    """Feeds one switch's notifications into its ``SwitchTelemetry`` under the lock the
    metrics endpoint reads with (it runs on another thread)."""

    def __init__(self, telemetry: SwitchTelemetry, lock: threading.Lock) -> None:
        self.telemetry = telemetry
        self._lock = lock
        self._maps: dict[tuple[str, ...], dict[str, str]] = {
            QUEUE_NAME_MAP: {},
            PORT_NAME_MAP: {},
            PG_NAME_MAP: {},
        }

    def counter_oids(self) -> list[str]:
        with self._lock:
            return self.telemetry.counter_oids()

    def stream_up(self, up: bool) -> None:
        with self._lock:
            self.telemetry.stream_up = up

    def fault(self, stream: str, fault: Fault | None) -> None:
        with self._lock:
            if fault is None:
                self.telemetry.faults.pop(stream, None)
            else:
                self.telemetry.faults[stream] = fault

    def decoder(self) -> Decoder:
        """A new counters stream's decoder (``SupervisedStream`` makes one per Subscribe)."""
        return CounterIngest(self.telemetry, self._lock)

    def notification(self, note: Notification) -> None:
        """One notification under one lock: the lock, the timestamp and the dispatch are paid
        per notification; each counter hash goes straight to its object (one per object path,
        every object of a whole-table answer), anything else through ``_change``."""
        ts_ns = note.timestamp_ns
        counters = self.telemetry.counters
        with self._lock:
            for elems, value in note.changes:
                if len(elems) == 4 and elems[2] == "COUNTERS" and elems[:3] == COUNTERS:
                    if isinstance(value, dict):
                        # Values stay as sent: the state parses each decimal or skips it.
                        counters(elems[3], value, ts_ns)
                    continue
                if elems == COUNTERS:
                    for oid, fields in value.items() if isinstance(value, dict) else ():
                        if isinstance(fields, dict):
                            counters(str(oid), fields, ts_ns)
                    continue
                self._change(elems, value, ts_ns)

    def _change(self, elems: tuple[str, ...], value: Any, ts_ns: int) -> None:
        table, rest = elems[:3], elems[3:]
        if table in self._maps:
            self._map_change(table, rest, value)
        elif table == AGENT_STATE:
            if rest:
                self.telemetry.agent_state(rest[0], _fields(value), ts_ns)
            elif isinstance(value, dict):
                for key, fields in value.items():
                    self.telemetry.agent_state(str(key), _fields(fields), ts_ns)
        # anything else is not read (a table delete of sonic-gnmi's comes with its keys)

    def _map_change(self, table: tuple[str, ...], rest: tuple[str, ...], value: Any) -> None:
        """The map as it is now, applied when it moved (an object under a new oid starts
        afresh; the COUNTERS table subscription already covers every oid)."""
        current = self._maps[table]
        updated = dict(current)
        if rest:
            if value is None:
                updated.pop(rest[0], None)
            else:
                updated[rest[0]] = str(value)
        else:
            updated = {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
        if updated == current:
            return
        self._maps[table] = updated
        if table == QUEUE_NAME_MAP:
            self.telemetry.set_queue_map(updated)
        elif table == PORT_NAME_MAP:
            self.telemetry.set_port_map(updated)
        else:
            self.telemetry.set_pg_map(updated)


class QueueStateHandler(SwitchHandler):
    """An OpenConfig switch's counters stream (``controller.openconfig.counters``): each
    notification's queue state leaves, under the SAI names, into the same counter table as a
    SONiC switch's hashes. A queue first seen joins the table's queue map under its
    ``object_id``. A target streaming ON_CHANGE sends only the leaves that moved, so each
    queue's last leaves are kept and the whole hash is given at each update, as sonic-gnmi
    sends a SONiC queue's."""

    def __init__(self, telemetry: SwitchTelemetry, lock: threading.Lock) -> None:
        super().__init__(telemetry, lock)
        self._last: dict[QueueKey, dict[str, str]] = {}

    def decoder(self) -> Decoder:
        return keyed_decoder()

    def notification(self, note: Notification) -> None:
        found = queue_counters(note.changes)
        if not found:
            return
        with self._lock:
            if not found.keys() <= self._last.keys():
                for key in found:
                    self._last.setdefault(key, {})
                self.telemetry.set_queue_map(
                    {f"{port}:{queue}": object_id(port, queue) for port, queue in self._last}
                )
            for (port, queue), leaves in found.items():
                last = self._last[(port, queue)]
                last.update((STATE_LEAVES[leaf], count) for leaf, count in leaves.items())
                self.telemetry.counters(object_id(port, queue), dict(last), note.timestamp_ns)


class CounterIngest:
    """One counters stream's decoder for the collector. Once the stream has synced, a
    response that is a batch of counter hashes (the whole COUNTERS table at a SAMPLE tick, or
    an object's hash on a change: the bulk of what a switch sends) goes whole into the
    switch's compiled table as the bytes gRPC received, under the metrics lock, and nothing
    is handed on; anything else (the maps, deletes, and every response before the sync, which
    the stream applies maps first and checks for objects without counters) goes through the
    reference decoder to ``SwitchHandler.notification``."""

    def __init__(self, telemetry: SwitchTelemetry, lock: threading.Lock) -> None:
        self._telemetry = telemetry
        self._lock = lock
        self._reference = reference_decoder()
        self._synced = False

    def __call__(self, raw: bytes) -> Notification | None:
        if self._synced:
            with self._lock:
                taken = self._telemetry.ingest(raw)
            if taken is not None:
                return None
        note = self._reference(raw)
        if note is SYNC:
            self._synced = True
        return note


def _fields(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}
