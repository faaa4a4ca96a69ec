"""The counter and PFC families as the compiled core writes them (``CounterTable.exposition``,
native/controller-core/src/exposition.rs), for generated switches (ports and classes with
characters the text format escapes, speeds of any float a line rate can be read from, NaN and
subnormals included, counts that give rates of every size, gauges present or not, queues with
no rate yet; lossless classes on PFC priorities, pause frames on watched and other priorities,
priority groups dropping or quiet, the PFC watchdog's storm counts): read back by
prometheus_client's own text-format parser, a reader that is not ours, they are the values the
switch's state implies, sample for sample; and they are the lines the Python reference
(tests/support/reference_exposition.py, the collector's code path before the core) writes,
byte for byte, and so are the whole expositions built over them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from controller.telemetry.metrics import (
    COUNTER_FAMILIES,
    COUNTER_NAMES,
    PFC_FAMILIES,
    TelemetryMetrics,
)
from controller.telemetry.state import (
    PG_DROPPED_PACKETS,
    PG_SHARED_WATERMARK,
    PG_XOFF_ROOM_WATERMARK,
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
    WD_DETECTED,
    WD_RESTORED,
    SwitchTelemetry,
    pfc_rx_field,
    pfc_tx_field,
)
from tests.support.reference_exposition import (
    LabelTexts,
    ReferenceMetrics,
    Sample,
    counter_lines,
    counter_values,
    read_back,
)

S = 1_000_000_000
ODD = st.text(alphabet=st.sampled_from('ab0\\"\n:é|'), max_size=5)
PORTS = st.lists(st.one_of(st.sampled_from(["Ethernet0", "Ethernet4"]), ODD), min_size=1,
                 max_size=3, unique=True)  # fmt: skip
INDEXES = ("0", "3", "7")  # queues, priorities and priority groups of each port
QUEUE_FIELDS = [QUEUE_PACKETS, QUEUE_BYTES, QUEUE_DROPPED_PACKETS, QUEUE_DROPPED_BYTES,
                QUEUE_ECN_MARKED_PACKETS, QUEUE_OCCUPANCY, QUEUE_SHARED_WATERMARK,
                QUEUE_WATERMARK, WD_DETECTED, WD_RESTORED]  # fmt: skip
PFC_FIELDS = [field(int(p)) for p in INDEXES for field in (pfc_rx_field, pfc_tx_field)]
PG_FIELDS = [PG_DROPPED_PACKETS, PG_SHARED_WATERMARK, PG_XOFF_ROOM_WATERMARK]
counts = st.one_of(st.integers(0, 100), st.integers(0, 2**64 - 1))
queue_hash = st.dictionaries(st.sampled_from(QUEUE_FIELDS), counts.map(str), max_size=10)
port_hash = st.dictionaries(st.sampled_from([PORT_OUT_OCTETS, PORT_IN_OCTETS]), counts.map(str))


# "03" is priority 3 to the watch list (an int) but not the class of "3" (a key).
LOSSLESS = st.dictionaries(st.sampled_from([*INDEXES, "03"]), ODD, max_size=3)
speeds = st.one_of(
    st.floats(max_value=1e18, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 100e9, 25e9, 800.0]),
)


@st.composite
def switches(draw: st.DrawFn) -> SwitchTelemetry:
    ports = draw(PORTS)
    speed_of = {port: draw(speeds) for port in draw(st.lists(st.sampled_from(ports)))}
    classes = draw(st.dictionaries(st.sampled_from(INDEXES), ODD, max_size=3))
    window = draw(st.sampled_from([0, S, 3 * S]))
    sw = SwitchTelemetry(draw(ODD), speed_of, classes, window, draw(LOSSLESS))
    queues = {f"{port}:{q}": f"oid:q{i}:{q}" for i, port in enumerate(ports) for q in INDEXES}
    groups = {f"{port}:{g}": f"oid:g{i}:{g}" for i, port in enumerate(ports) for g in INDEXES}
    port_oids = {port: f"oid:p{i}" for i, port in enumerate(ports)}
    sw.set_queue_map(queues)
    sw.set_port_map(port_oids)
    sw.set_pg_map(groups)
    # The PFC and priority group fields this switch counts, at every poll, mostly growing (as
    # a switch's do, so that two polls give rates), else any count (a reset, a jump).
    pause = draw(st.lists(st.sampled_from(PFC_FIELDS), unique=True, max_size=4))
    group_fields = draw(st.lists(st.sampled_from(PG_FIELDS), unique=True))
    last: dict[tuple[str, str], int] = {}

    def poll(oid: str, fields: list[str]) -> dict[str, str]:
        for field in fields:
            before = last.get((oid, field), 0)
            wild = draw(st.integers(0, 9)) == 9
            last[(oid, field)] = draw(counts if wild else st.integers(before, before + 1000))
        return {field: str(last[(oid, field)]) for field in fields}

    ts = S
    for _ in range(draw(st.integers(0, 4))):
        ts += draw(st.sampled_from([1, S // 3, S, 7 * S]))
        for oid in draw(st.lists(st.sampled_from(sorted(queues.values())), max_size=6)):
            sw.counters(oid, draw(queue_hash), ts)
        for oid in draw(st.lists(st.sampled_from(sorted(port_oids.values())), max_size=3)):
            sw.counters(oid, draw(port_hash) | poll(oid, pause), ts)
        for oid in draw(st.lists(st.sampled_from(sorted(groups.values())), max_size=3)):
            sw.counters(oid, poll(oid, group_fields), ts)
    return sw


def _comparable(samples: dict[Sample, float]) -> dict[Sample, float | str]:
    """NaN is not equal to itself: compare it by name."""
    return {key: "NaN" if math.isnan(value) else value for key, value in samples.items()}


@settings(max_examples=200, deadline=None)
@given(fleet=st.lists(switches(), max_size=3, unique_by=lambda sw: sw.name))
def test_a_real_parser_reads_the_values_of_the_switches_state(
    fleet: list[SwitchTelemetry],
) -> None:
    text = TelemetryMetrics("0/1", lambda: fleet, lambda: 9 * S).render()
    counters = {family.sample_name() for family in COUNTER_FAMILIES}
    read = {key: value for key, value in read_back(text).items() if key[0] in counters}
    expected: dict[Sample, float] = {}
    for sw in fleet:
        expected.update(counter_values(sw))
    assert _comparable(read) == _comparable(expected)


@settings(max_examples=300, deadline=None)
@given(sw=switches())
def test_the_core_writes_the_counter_lines_the_reference_writes(sw: SwitchTelemetry) -> None:
    got = [chunk.decode() for chunk in sw.counter_lines(COUNTER_NAMES)]
    assert got == counter_lines(sw, COUNTER_NAMES, LabelTexts())


@settings(max_examples=50, deadline=None)
@given(fleet=st.lists(switches(), max_size=3, unique_by=lambda sw: sw.name))
def test_the_whole_exposition_is_the_references(fleet: list[SwitchTelemetry]) -> None:
    ours = TelemetryMetrics("0/1", lambda: fleet, lambda: 9 * S).render()
    assert ours == ReferenceMetrics("0/1", lambda: fleet, lambda: 9 * S).render()


def test_the_lines_are_the_text_format_and_name_their_families() -> None:
    sw = SwitchTelemetry("leaf1", {"Ethernet0": 100e9}, {"3": "gold"})
    sw.set_queue_map({"Ethernet0:3": "oid:q"})
    sw.set_port_map({"Ethernet0": "oid:p"})
    for tick in (1, 2):
        sw.counters("oid:q", {QUEUE_PACKETS: str(1000 * tick), QUEUE_WATERMARK: "7"}, tick * S)
        sw.counters("oid:p", {PORT_OUT_OCTETS: str(10**10 * tick)}, tick * S)
    text = "".join(
        f"# TYPE {family.sample_name()} gauge\n" + chunk.decode()
        for family, chunk in zip(COUNTER_FAMILIES, sw.counter_lines(COUNTER_NAMES), strict=True)
    )
    values = {f.name: [s.value for s in f.samples] for f in text_string_to_metric_families(text)}
    assert values["sluice_queue_tx_packets_per_second"] == [1000.0]
    assert values["sluice_queue_occupancy_bytes"] == values["sluice_queue_watermark_bytes"] == [7]
    assert values["sluice_queue_tx_bytes_per_second"] == []
    # 10 GB/s is 80 Gb/s: 0.8 of a 100 Gb/s port.
    assert values["sluice_port_tx_bytes_per_second"] == [1e10]
    assert values["sluice_port_utilisation"] == [0.8]
    assert math.isclose(values["sluice_port_speed_bits_per_second"][0], 100e9)


def _lossless_switch() -> SwitchTelemetry:
    """Two lossless classes, pause frames on them and on a lossy priority, priority groups
    dropping and quiet, and the watchdog holding one queue in a storm."""
    sw = SwitchTelemetry(
        "leaf\"1", {"Ethernet0": 100e9, "Ethernet4": 100e9},
        {"3": "roce", "4": "storage", "6": "scavenger"}, S, {"3": "roce", "4": "storage"},
    )  # fmt: skip
    ports = ("Ethernet0", "Ethernet4")
    sw.set_port_map({port: f"oid:p{i}" for i, port in enumerate(ports)})
    sw.set_queue_map({f"{p}:{q}": f"oid:q{p}{q}" for p in ports for q in range(8)})
    sw.set_pg_map({f"{p}:{g}": f"oid:g{p}{g}" for p in ports for g in range(8)})
    for tick in (1, 2, 3):
        for i, port in enumerate(ports):
            pause = {pfc_rx_field(p): str(tick * 10 * p * (i + 1)) for p in range(8)}
            pause |= {pfc_tx_field(p): str(tick * p) for p in (3, 4)}  # 3 and 4: sent too
            sw.counters(f"oid:p{i}", pause | {PORT_OUT_OCTETS: str(tick * 10**9)}, tick * S)
            for g in range(8):
                group = {PG_DROPPED_PACKETS: str(tick * (g == 6)), PG_XOFF_ROOM_WATERMARK: "512"}
                group |= {PG_SHARED_WATERMARK: str(1000 * g)} if g in (3, 4) else {}
                sw.counters(f"oid:g{port}{g}", group, tick * S)
            storm = {WD_DETECTED: str(tick), WD_RESTORED: str(tick - (port == "Ethernet4"))}
            sw.counters(f"oid:q{port}3", {QUEUE_PACKETS: str(tick)} | storm, tick * S)
    return sw


def test_a_lossless_switch_has_every_pfc_family_and_the_references_lines() -> None:
    sw = _lossless_switch()
    got = [chunk.decode() for chunk in sw.counter_lines(COUNTER_NAMES)]
    assert got == counter_lines(sw, COUNTER_NAMES, LabelTexts())
    pfc = dict(zip(COUNTER_FAMILIES, got, strict=True))
    assert all(pfc[family] for family in PFC_FAMILIES), "every PFC family has lines"
    text = TelemetryMetrics("0/1", lambda: [sw], lambda: 9 * S).render()
    assert text == ReferenceMetrics("0/1", lambda: [sw], lambda: 9 * S).render()
    read = read_back(text)
    for key, value in counter_values(sw).items():
        assert read[key] == value, key
    storm = frozenset({("switch", 'leaf"1'), ("port", "Ethernet4"), ("queue", "3"),
                       ("class", "roce")})  # fmt: skip
    assert read[("sluice_queue_pfc_storm_active", storm)] == 1
    lossy = frozenset({("switch", 'leaf"1'), ("port", "Ethernet4"), ("priority", "5"),
                       ("class", "")})  # fmt: skip
    assert read[("sluice_port_pfc_rx_pause_frames_per_second", lossy)] == 100.0
