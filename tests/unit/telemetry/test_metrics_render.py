"""The collector's exposition, read back by prometheus_client's own text-format parser (the
reference reader here; Prometheus reads the same format): every family of the telemetry
contract, values from the counters, label escaping, and a real HTTP scrape on loopback."""

from __future__ import annotations

import math

import httpx
from prometheus_client.parser import text_string_to_metric_families

from controller.collector import MetricsEndpoint, accepts_gzip
from controller.telemetry.metrics import CONTENT_TYPE, FAMILIES, TelemetryMetrics, number
from controller.telemetry.state import SwitchTelemetry

S = 1_000_000_000
QUEUE_OID = "oid:0x15000000000003"
PORT_OID = "oid:0x1000000000001"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _switch(name: str = "leaf1", klass: str = "storage") -> SwitchTelemetry:
    sw = SwitchTelemetry(name, {"Ethernet0": 100e9}, {"3": klass})
    sw.set_queue_map({"Ethernet0:3": QUEUE_OID})
    sw.set_port_map({"Ethernet0": PORT_OID})
    for tick, (sent, marked, octets) in enumerate(((0, 0, 0), (1_500_000, 250, 2_500_000_000))):
        queue = {"SAI_QUEUE_STAT_BYTES": str(sent), "SAI_QUEUE_STAT_PACKETS": str(sent // 1500),
                 "SAI_QUEUE_STAT_DROPPED_PACKETS": "0", "SAI_QUEUE_STAT_DROPPED_BYTES": "0",
                 "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": str(marked),
                 "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "9000"}  # fmt: skip
        sw.counters(QUEUE_OID, queue, (tick + 1) * S)
        port = {"SAI_PORT_STAT_IF_OUT_OCTETS": str(octets), "SAI_PORT_STAT_IF_IN_OCTETS": "0"}
        sw.counters(PORT_OID, port, (tick + 1) * S)
    sw.agent_state("global", {"heartbeat": "1500", "mode": "active", "algorithm": "l2bm",
                              "version": "ff", "loop_us": "250"}, 2 * S)  # fmt: skip
    sw.agent_state("Ethernet0|3", {"threshold_bytes": "40000", "basis": "computed"}, 2 * S)
    sw.stream_up = True
    return sw


def _parse(text: bytes) -> tuple[Samples, dict[str, str]]:
    samples: Samples = {}
    kinds: dict[str, str] = {}
    for family in text_string_to_metric_families(text.decode()):
        kinds[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, kinds


def _metrics(*switches: SwitchTelemetry) -> TelemetryMetrics:
    return TelemetryMetrics("0/1", lambda: switches, lambda: 3 * S)


def test_every_contract_family_and_the_values_the_counters_give() -> None:
    samples, kinds = _parse(_metrics(_switch()).render())
    assert set(kinds) == {family.name for family in FAMILIES}
    assert kinds["sluice_counter_resets"] == kinds["sluice_collector_updates"] == "counter"
    queue = (("class", "storage"), ("port", "Ethernet0"), ("queue", "3"), ("switch", "leaf1"))
    port = (("port", "Ethernet0"), ("switch", "leaf1"))
    one = (("switch", "leaf1"),)
    # 1.5 MB and 1,000 packets in 1 s of switch time, 250 of them marked.
    assert samples[("sluice_queue_tx_bytes_per_second", queue)] == 1_500_000.0
    assert samples[("sluice_queue_tx_packets_per_second", queue)] == 1_000.0
    assert samples[("sluice_queue_mark_fraction", queue)] == 0.25
    assert samples[("sluice_queue_occupancy_bytes", queue)] == 9000
    assert samples[("sluice_queue_threshold_bytes", queue)] == 40000
    assert samples[("sluice_queue_threshold_info", (("basis", "computed"), *queue))] == 1
    # 2.5 GB/s on a 100 Gb/s port: 20 Gb/s, 0.2 of the line.
    assert samples[("sluice_port_tx_bytes_per_second", port)] == 2_500_000_000.0
    assert math.isclose(samples[("sluice_port_utilisation", port)], 0.2)
    assert samples[("sluice_port_speed_bits_per_second", port)] == 100e9
    assert samples[("sluice_agent_heartbeat_age_seconds", one)] == 1.5
    assert samples[("sluice_agent_orders_version", one)] == 255
    assert samples[("sluice_agent_loop_seconds", one)] == 0.00025
    assert samples[("sluice_switch_stream_up", one)] == 1
    assert samples[("sluice_switch_last_update_age_seconds", one)] == 1.0
    mode = (("algorithm", "l2bm"), ("mode", "active"), ("switch", "leaf1"))
    assert samples[("sluice_agent_mode_info", mode)] == 1
    collector = (("collector", "0/1"),)
    assert samples[("sluice_collector_updates_total", collector)] == 6  # 4 counters, 2 agent
    assert samples[("sluice_collector_switches", collector)] == 1


def test_a_reset_is_a_counter_sample() -> None:
    sw = _switch()
    sw.counters(PORT_OID, {"SAI_PORT_STAT_IF_OUT_OCTETS": "5"}, 3 * S)
    samples, _ = _parse(_metrics(sw).render())
    reset = (("port", "Ethernet0"), ("queue", ""), ("switch", "leaf1"))
    assert samples[("sluice_counter_resets_total", reset)] == 1


def test_label_values_are_escaped_and_read_back_unchanged() -> None:
    odd = 'leaf "1"\\a\nb'
    samples, _ = _parse(_metrics(_switch(odd, klass='gold "x"')).render())
    assert samples[("sluice_switch_stream_up", (("switch", odd),))] == 1
    queue = (("class", 'gold "x"'), ("port", "Ethernet0"), ("queue", "3"), ("switch", odd))
    assert samples[("sluice_queue_watermark_bytes", queue)] == 9000


def test_a_moved_class_and_a_gone_switch_leave_no_stale_series() -> None:
    sw, other = _switch(), _switch("leaf2")
    fleet = [sw, other]
    metrics = TelemetryMetrics("0/1", lambda: fleet, lambda: 3 * S)
    metrics.render()  # fills the label cache
    sw.queue_classes = {"3": "bulk"}
    fleet.remove(other)
    samples, _ = _parse(metrics.render())
    switches = {dict(labels).get("switch") for _, labels in samples}
    assert switches == {"leaf1", None}  # None: the collector's own series
    classes = {dict(labels).get("class") for name, labels in samples if "queue_" in name}
    assert classes == {"bulk"}


def test_numbers_the_text_format_reads() -> None:
    for value in (0, 7, 0.25, 1e-7, 1e20, math.inf, -math.inf):
        text = f"# TYPE x gauge\nx {number(value)}\n"
        (family,) = text_string_to_metric_families(text)
        assert family.samples[0].value == value
    (family,) = text_string_to_metric_families(f"# TYPE x gauge\nx {number(math.nan)}\n")
    assert math.isnan(family.samples[0].value)
    assert number(math.inf) == "+Inf"
    assert number(math.nan) == "NaN"


def test_the_endpoint_serves_the_exposition_over_http_gzipped_when_asked() -> None:
    metrics = _metrics(_switch())
    endpoint = MetricsEndpoint("127.0.0.1", 0, metrics.render)
    try:
        url = f"http://127.0.0.1:{endpoint.port}/metrics"
        plain = httpx.get(url, headers={"Accept-Encoding": "identity"}, timeout=5)
        packed = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=5)
        refused = httpx.post(url, timeout=5)
    finally:
        endpoint.close()
    assert plain.status_code == packed.status_code == 200
    assert plain.headers["content-type"] == packed.headers["content-type"] == CONTENT_TYPE
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert int(packed.headers["content-length"]) < len(plain.content)
    assert packed.content == plain.content  # httpx takes the gzip off
    samples, _ = _parse(plain.content)
    assert samples[("sluice_switch_stream_up", (("switch", "leaf1"),))] == 1
    assert refused.status_code == 405


def test_gzip_is_taken_when_named_or_starred_with_a_quality_above_zero() -> None:
    assert accepts_gzip("gzip")
    assert accepts_gzip("br, GZIP;q=0.5")
    assert accepts_gzip("*")
    assert not accepts_gzip("identity")
    assert not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("")
