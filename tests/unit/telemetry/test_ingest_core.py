"""The collector's compiled ingest (``controller_core.CounterTable`` behind ``CounterIngest``)
against the reference: the Python decoder (``controller.southbound.subscribe.decode`` on
protobuf's objects) feeding the Python counter rule (tests/support/reference_counters.py).
For every generated stream of serialized SubscribeResponses (counter hashes split between
prefix and path, whole-table answers with every object by oid, empty hashes, duplicate
members, counts that are not ASCII decimals or pass 64 bits, counts that jump past the
ports' line rates, values that are not strings, timestamps that repeat or go back, counters
that reset, unknown oids and objects that are not queues or ports, agent reports, deletes,
maps that move objects to new oids) the two hold the same rates, gauges, resets and counts
after every message."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.southbound.subscribe import (
    COUNTERS,
    PG_NAME_MAP,
    PORT_NAME_MAP,
    QUEUE_NAME_MAP,
    SYNC,
    Notification,
    counter_hashes,
    counters_path,
    decode,
)
from controller.telemetry.ingest import SwitchHandler
from controller.telemetry.state import (
    PORT_IN_OCTETS,
    PORT_OUT_OCTETS,
    QUEUE_BYTES,
    QUEUE_DROPPED_PACKETS,
    QUEUE_ECN_MARKED_PACKETS,
    QUEUE_PACKETS,
    QUEUE_SHARED_WATERMARK,
    SwitchTelemetry,
)
from tests.support.reference_counters import ReferenceSwitch

S = 1_000_000_000
QUEUES = {"Ethernet0:0": "oid:0x150", "Ethernet0:3": "oid:0x153", "Ethernet4:3": "oid:0x163"}
PORTS = {"Ethernet0": "oid:0x1000000000001", "Ethernet4": "oid:0x1000000000002"}
# A later map: one queue under a new oid (syncd restarted), one oid now another queue's.
QUEUES_LATER = {"Ethernet0:0": "oid:0x250", "Ethernet0:3": "oid:0x163", "Ethernet4:3": "oid:0x153"}
# Priority groups (COUNTERS_PG_NAME_MAP); one oid is also a queue's: the queue wins.
GROUPS = {"Ethernet0:3": "oid:0x1a3", "Ethernet4:3": "oid:0x1a4", "Ethernet4:0": "oid:0x150"}
OIDS = [*QUEUES.values(), *PORTS.values(), "oid:0x250", "oid:0xdead", "oid:0x1a3", "oid:0x1a4"]
NAMES = [QUEUE_PACKETS, QUEUE_BYTES, QUEUE_DROPPED_PACKETS, QUEUE_ECN_MARKED_PACKETS,
         QUEUE_SHARED_WATERMARK, PORT_OUT_OCTETS, PORT_IN_OCTETS, "OTHER", "é",
         "SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS", "SAI_PORT_STAT_PFC_3_RX_PKTS",
         "SAI_PORT_STAT_PFC_7_TX_PKTS", "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS",
         "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES",
         "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"]  # fmt: skip
# Line rates (bits a second): none, slow enough that small counts jump past them, a real one.
SPEEDS = [{}, {"Ethernet0": 800.0, "Ethernet4": 25e9}, {"Ethernet0": 100e9}]
ODD_TEXT = ["", "-5", "+1", "1.5", " 7", "007", "١٢", "²", "0x10", "18446744073709551616"]

values = st.one_of(
    st.integers(min_value=0, max_value=60).map(str),  # small: resets and equal counts happen
    st.integers(min_value=0, max_value=2**64 + 5).map(str),
    st.sampled_from(ODD_TEXT),
    st.one_of(st.integers(), st.none(), st.booleans(), st.just([1, {"a": "2"}])),
)
# A hash as JSON text written member by member, so a name may come twice.
members = st.lists(st.tuples(st.sampled_from(NAMES), values), max_size=6)
counter_update = st.tuples(
    st.just("counter"), st.sampled_from(OIDS), members, st.booleans(), st.integers(0, 3)
)
# A whole COUNTERS table: its objects' members (``split`` 3 puts the whole path in the prefix).
table_update = st.tuples(
    st.just("table"),
    st.just(""),
    st.lists(st.tuples(st.sampled_from(OIDS), members), max_size=4, unique_by=lambda t: t[0]),
    st.booleans(),
    st.sampled_from([0, 3]),
)
other_update: st.SearchStrategy[tuple[str, str, list[Any], bool, int]] = st.tuples(
    st.sampled_from(["agent", "delete", "not-an-object"]),
    st.sampled_from(OIDS),
    st.just([]),
    st.just(True),
    st.just(0),
)
updates = st.one_of(
    st.lists(st.one_of(counter_update, counter_update, counter_update, other_update), max_size=5),
    st.lists(table_update, min_size=1, max_size=2),
    st.just([("tick", "", [], True, 3)]),  # every object, counts growing faster and faster
)
# How far switch time moves per message: often a whole tick (so spans meet the window
# exactly), sometimes nothing or backwards (a duplicate or reordered notification).
advances = st.one_of(
    st.sampled_from([0, -S, S // 2, S, 2 * S, 5 * S // 2]),
    st.integers(min_value=-2 * S, max_value=3 * S),
)
messages = st.lists(
    st.tuples(advances, updates, st.booleans()),
    min_size=1,
    max_size=25,
)


def _path(names: tuple[str, ...] | list[str]) -> Any:
    return gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=n) for n in names])


def _json_text(pairs: list[tuple[str, object]], ascii_only: bool) -> bytes:
    inner = ",".join(
        f"{json.dumps(k, ensure_ascii=ascii_only)}:{json.dumps(v, ensure_ascii=ascii_only)}"
        for k, v in pairs
    )
    return ("{" + inner + "}").encode()


def _table_text(objects: list[tuple[str, list[tuple[str, object]]]], ascii_only: bool) -> bytes:
    inner = b",".join(
        json.dumps(oid).encode() + b":" + _json_text(pairs, ascii_only) for oid, pairs in objects
    )
    return b"{" + inner + b"}"


def _table_response(ts: int, items: list[tuple[str, str, list[Any], bool, int]]) -> bytes:
    """Whole-table answers: the table path in the prefix (``split`` 3) or in the update."""
    split = items[0][4]
    note = gnmi_pb2.Notification(timestamp=ts, prefix=_path(COUNTERS) if split else None)
    for _, _, objects, ascii_only, _ in items:
        value = gnmi_pb2.TypedValue(json_ietf_val=_table_text(objects, ascii_only))
        note.update.append(gnmi_pb2.Update(path=_path(() if split else COUNTERS), val=value))
    raw: bytes = gnmi_pb2.SubscribeResponse(update=note).SerializeToString()
    return raw


def _response(ts: int, items: list[tuple[str, str, list[Any], bool, int]]) -> bytes:
    """One notification; a counter path is split at ``split`` between prefix and path, the
    same split for the whole notification (the prefix is shared)."""
    if items and items[0][0] == "table":
        return _table_response(ts, items)
    if items and items[0][0] == "tick":
        grow = str((ts // S) ** 2)
        fields = [(QUEUE_PACKETS, grow), (PORT_OUT_OCTETS, grow), (QUEUE_BYTES, grow + "0")]
        items = [("counter", oid, fields, True, 3) for oid in OIDS]
    split = next((s for kind, _, _, _, s in items if kind == "counter"), 0)
    prefix = counters_path(OIDS[0])[:split]
    note = gnmi_pb2.Notification(timestamp=ts, prefix=_path(prefix) if split else None)
    for kind, oid, pairs, ascii_only, _ in items:
        full = counters_path(oid)
        if kind == "counter":
            text = _json_text(pairs, ascii_only)
        elif kind == "not-an-object":
            text = b"[1]"
        elif kind == "agent":
            full = ("STATE_DB", "localhost", "SLUICE_AGENT_STATE", "global")
            text = b'{"heartbeat": "5", "mode": "dynamic"}'
        else:
            note.delete.append(_path(full[len(prefix) :] if full[:split] == prefix else full))
            continue
        rest = full[len(prefix) :] if full[:split] == prefix else full
        if full[:split] != prefix:  # another table under a counter prefix: not generated
            continue
        value = gnmi_pb2.TypedValue(json_ietf_val=text)
        note.update.append(gnmi_pb2.Update(path=_path(rest), val=value))
    raw: bytes = gnmi_pb2.SubscribeResponse(update=note).SerializeToString()
    return raw


SYNC_RAW: bytes = gnmi_pb2.SubscribeResponse(sync_response=True).SerializeToString()


def _map_note(table: tuple[str, ...], mapping: dict[str, str]) -> Notification:
    update = gnmi_pb2.Update(
        path=_path(table), val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps(mapping).encode())
    )
    note = decode(gnmi_pb2.SubscribeResponse(update=gnmi_pb2.Notification(update=[update])))
    assert note is not None
    return note


class Pipelines:
    """The collector's path and the reference's, fed the same bytes."""

    def __init__(self, window_ns: int, speeds: dict[str, float] | None = None) -> None:
        self.telemetry = SwitchTelemetry("leaf1", speeds or {}, {}, window_ns)
        self.handler = SwitchHandler(self.telemetry, threading.Lock())
        self.decoder = self.handler.decoder()
        self.reference = ReferenceSwitch(window_ns)
        self.reference.set_line_rates({p: int(b) // 8 for p, b in (speeds or {}).items()})
        self.maps(QUEUES)
        assert self.decoder(SYNC_RAW) is SYNC  # from here counter batches take the fast path

    def maps(self, queues: dict[str, str]) -> None:
        self.handler.notification(_map_note(QUEUE_NAME_MAP, queues))
        self.handler.notification(_map_note(PORT_NAME_MAP, PORTS))
        self.handler.notification(_map_note(PG_NAME_MAP, GROUPS))
        self.reference.set_queue_map(queues)
        self.reference.set_port_map(PORTS)
        self.reference.set_pg_map(GROUPS)

    def feed(self, raw: bytes) -> None:
        note = self.decoder(raw)
        event("compiled core" if note is None else "reference decoder")
        if note is not None:
            self.handler.notification(note)
        expected = decode(gnmi_pb2.SubscribeResponse.FromString(raw))
        assert expected is not None
        for change in expected.changes:
            for oid, value in counter_hashes(change):
                if isinstance(value, dict):
                    self.reference.counters(str(oid), value, expected.timestamp_ns)
            if change.elems[2] == "SLUICE_AGENT_STATE":
                self.reference.seen(expected.timestamp_ns)

    def assert_equal(self) -> None:
        ref, got = self.reference, self.telemetry
        assert got.queues.keys() == ref.queues.keys()
        for queue, counters in ref.queues.items():
            assert got.queues[queue].rates == counters.rates
            assert got.queues[queue].gauges == counters.gauges
        assert got.ports.keys() == ref.ports.keys()
        for port, counters in ref.ports.items():
            assert got.ports[port].rates == counters.rates
            assert got.ports[port].gauges == counters.gauges
        assert got.priority_groups.keys() == ref.priority_groups.keys()
        for group, counters in ref.priority_groups.items():
            assert got.priority_groups[group].rates == counters.rates
            assert got.priority_groups[group].gauges == counters.gauges
        assert got.resets == ref.resets
        assert got.pg_resets == ref.pg_resets
        assert (got.updates, got.unknown_oids, got.last_update_ns) == (
            ref.updates,
            ref.unknown_oids,
            ref.last_update_ns,
        )


@settings(max_examples=400, deadline=None)
@given(
    steps=messages,
    window_ns=st.sampled_from([0, S, 5 * S // 2]),
    speeds=st.sampled_from(SPEEDS),
)
def test_the_compiled_ingest_holds_what_the_reference_decoder_and_rule_hold(
    steps: list[tuple[int, list[tuple[str, str, list[Any], bool, int]], bool]],
    window_ns: int,
    speeds: dict[str, float],
) -> None:
    pipes = Pipelines(window_ns, speeds)
    ts = 10 * S
    for i, (advance, items, remap) in enumerate(steps):
        if remap and i == len(steps) // 2:
            pipes.maps(QUEUES_LATER)
        ts += advance
        pipes.feed(_response(ts, items))
        pipes.assert_equal()


def _tick(ts: int, packets: int) -> bytes:
    fields = [(QUEUE_PACKETS, str(packets)), (QUEUE_BYTES, str(1500 * packets))]
    return _response(ts, [("counter", oid, fields, True, 3) for oid in QUEUES.values()])


def test_a_sample_tick_is_taken_whole_by_the_core_and_gives_the_rates() -> None:
    pipes = Pipelines(0)
    assert pipes.decoder(_tick(1 * S, 100)) is None  # taken: nothing handed on
    assert pipes.decoder(_tick(3 * S, 300)) is None
    rates = {q.port + ":" + q.queue: v.rates for q, v in pipes.telemetry.queues.items()}
    assert rates["Ethernet4:3"] == {QUEUE_PACKETS: 100.0, QUEUE_BYTES: 150_000.0}
    assert pipes.telemetry.updates == 6


def test_before_the_sync_every_response_goes_through_the_reference_decoder() -> None:
    telemetry = SwitchTelemetry("leaf1", {}, {})
    decoder = SwitchHandler(telemetry, threading.Lock()).decoder()
    note = decoder(_tick(1 * S, 100))  # initial values: the stream checks their paths
    assert note is not None
    assert [c.elems for c in note.changes] == [counters_path(o) for o in QUEUES.values()]


def test_a_counter_value_that_is_not_json_fails_the_notification_as_before() -> None:
    pipes = Pipelines(0)
    bad = gnmi_pb2.Notification(
        timestamp=S,
        update=[gnmi_pb2.Update(path=_path(counters_path(OIDS[0])),
                                val=gnmi_pb2.TypedValue(json_ietf_val=b"{"))],
    )  # fmt: skip
    raw = gnmi_pb2.SubscribeResponse(update=bad).SerializeToString()
    with pytest.raises(ValueError, match="Expecting"):
        decode(gnmi_pb2.SubscribeResponse.FromString(raw))
    with pytest.raises(ValueError, match="Expecting"):
        pipes.decoder(raw)
    assert pipes.telemetry.updates == 0


@settings(max_examples=500, deadline=None)
@given(
    first=st.integers(min_value=0, max_value=2**64 - 1),
    growth=st.integers(min_value=0, max_value=2**64 - 1),
    at=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    span=st.integers(min_value=1, max_value=2**64 - 1),
)
def test_a_rate_is_the_float_python_divides_the_exact_delta_and_span_into(
    first: int, growth: int, at: int, span: int
) -> None:
    """The core divides wide integers itself (rounding once); Python's ``int / int`` is the
    reference, over every 64-bit count and timestamp."""
    second = min(first + growth, 2**64 - 1)
    later = min(at + span, 2**63 - 1)
    if later <= at:
        return
    telemetry = SwitchTelemetry("leaf1", {}, {})
    telemetry.set_port_map({"Ethernet0": "oid:0x1"})
    telemetry.counters("oid:0x1", {PORT_OUT_OCTETS: str(first)}, at)
    telemetry.counters("oid:0x1", {PORT_OUT_OCTETS: str(second)}, later)
    expected = (second - first) * S / (later - at)
    assert telemetry.ports["Ethernet0"].rates == {PORT_OUT_OCTETS: expected}
