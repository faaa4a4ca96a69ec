"""The counter families as the compiled core writes them (``CounterTable.exposition``,
native/controller-core/src/exposition.rs), for generated switches (ports and classes with
characters the text format escapes, speeds of any float a line rate can be read from, NaN and
subnormals included, counts that give rates of every size, gauges present or not, queues with
no rate yet): read back by prometheus_client's own text-format parser, a reader that is not
ours, they are the values the switch's state implies, sample for sample; and they are the
lines the Python reference (tests/support/reference_exposition.py, the collector's code path
before the core) writes, byte for byte, and so are the whole expositions built over them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from controller.telemetry.metrics import COUNTER_FAMILIES, COUNTER_NAMES, TelemetryMetrics
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
    SwitchTelemetry,
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
QUEUE_FIELDS = [QUEUE_PACKETS, QUEUE_BYTES, QUEUE_DROPPED_PACKETS, QUEUE_DROPPED_BYTES,
                QUEUE_ECN_MARKED_PACKETS, QUEUE_OCCUPANCY, QUEUE_SHARED_WATERMARK,
                QUEUE_WATERMARK]  # fmt: skip
counts = st.one_of(st.integers(0, 100), st.integers(0, 2**64 - 1))
queue_hash = st.dictionaries(st.sampled_from(QUEUE_FIELDS), counts.map(str), max_size=8)
port_hash = st.dictionaries(st.sampled_from([PORT_OUT_OCTETS, PORT_IN_OCTETS]), counts.map(str))
speeds = st.one_of(
    st.floats(max_value=1e18, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 100e9, 25e9, 800.0]),
)


@st.composite
def switches(draw: st.DrawFn) -> SwitchTelemetry:
    ports = draw(PORTS)
    speed_of = {port: draw(speeds) for port in draw(st.lists(st.sampled_from(ports)))}
    classes = draw(st.dictionaries(st.sampled_from(["0", "3", "7"]), ODD, max_size=3))
    sw = SwitchTelemetry(draw(ODD), speed_of, classes, draw(st.sampled_from([0, S, 3 * S])))
    queues = {f"{port}:{q}": f"oid:q{i}:{q}" for i, port in enumerate(ports) for q in (0, 3, 7)}
    port_oids = {port: f"oid:p{i}" for i, port in enumerate(ports)}
    sw.set_queue_map(queues)
    sw.set_port_map(port_oids)
    ts = S
    for _ in range(draw(st.integers(0, 4))):
        ts += draw(st.sampled_from([1, S // 3, S, 7 * S]))
        for oid in draw(st.lists(st.sampled_from(sorted(queues.values())), max_size=6)):
            sw.counters(oid, draw(queue_hash), ts)
        for oid in draw(st.lists(st.sampled_from(sorted(port_oids.values())), max_size=3)):
            sw.counters(oid, draw(port_hash), ts)
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
