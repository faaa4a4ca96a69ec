"""PFC telemetry in the collector's state and exposition: pause frames per port and priority
as rates (``SAI_PORT_STAT_PFC_<n>_RX_PKTS``/``_TX_PKTS`` in the port's hash), the ingress
priority groups' drops and watermarks (``COUNTERS_PG_NAME_MAP``), the PFC watchdog's storm
counts in the queues' hashes; a count that goes backwards or jumps past the line rate is a
reset with no rate, never a negative one. Read back by prometheus_client's parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controller.telemetry.metrics import TelemetryMetrics
from controller.telemetry.state import QueueId, SwitchTelemetry
from tests.support.reference_exposition import WatchdogCounts, pfc_rates, watchdog

S = 1_000_000_000
PORT, QUEUE, PG = "oid:0x1000000000001", "oid:0x15000000000003", "oid:0x1a000000000003"
RX3, TX3 = "SAI_PORT_STAT_PFC_3_RX_PKTS", "SAI_PORT_STAT_PFC_3_TX_PKTS"
PG_DROPS = "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS"
PG_XOFF = "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES"
DETECTED, RESTORED = "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED"


def _switch() -> SwitchTelemetry:
    sw = SwitchTelemetry("leaf1", {"Ethernet0": 100e9}, {"3": "roce"}, pfc_classes={"3": "roce"})
    sw.set_port_map({"Ethernet0": PORT})
    sw.set_queue_map({"Ethernet0:3": QUEUE})
    sw.set_pg_map({"Ethernet0:3": PG, "Ethernet0:0": "oid:0x1a000000000000"})
    return sw


def _samples(sw: SwitchTelemetry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = TelemetryMetrics("0/1", lambda: [sw], lambda: 10 * S).render().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_pause_frames_per_priority_become_rates_and_series() -> None:
    sw = _switch()
    sw.counters(PORT, {RX3: "100", TX3: "7", "SAI_PORT_STAT_IF_OUT_OCTETS": "0"}, 1 * S)
    sw.counters(PORT, {RX3: "6100", TX3: "7", "SAI_PORT_STAT_IF_OUT_OCTETS": "0"}, 3 * S)
    [pfc] = pfc_rates(sw)
    assert (pfc.port, pfc.priority, pfc.rx_per_second, pfc.tx_per_second) == (
        "Ethernet0", "3", 3000.0, 0.0)  # fmt: skip
    labels = frozenset({("switch", "leaf1"), ("port", "Ethernet0"), ("priority", "3"),
                        ("class", "roce")})  # fmt: skip
    samples = _samples(sw)
    assert samples[("sluice_port_pfc_rx_pause_frames_per_second", labels)] == 3000.0
    assert samples[("sluice_port_pfc_tx_pause_frames_per_second", labels)] == 0.0
    # The port's own octet families are untouched by the PFC fields beside them.
    port = frozenset({("switch", "leaf1"), ("port", "Ethernet0")})
    assert samples[("sluice_port_tx_bytes_per_second", port)] == 0.0


def test_a_cleared_or_wrapped_pause_count_is_a_reset_and_no_rate() -> None:
    sw = _switch()
    sw.counters(PORT, {RX3: "5000"}, 1 * S)
    sw.counters(PORT, {RX3: "9000"}, 2 * S)
    cleared = sw.counters(PORT, {RX3: "10"}, 3 * S)  # sonic-clear pfccounters
    assert cleared is not None
    assert (cleared.port, cleared.queue) == ("Ethernet0", "")
    assert pfc_rates(sw) == []
    sw.counters(PORT, {RX3: "20"}, 4 * S)
    assert [p.rx_per_second for p in pfc_rates(sw)] == [10.0]
    # Near 2^64 a second later: more pause frames than 100 Gb/s can carry.
    assert sw.counters(PORT, {RX3: str(2**64 - 5)}, 5 * S) is not None
    assert pfc_rates(sw) == []
    assert sw.resets[next(iter(sw.resets))] == 2
    assert not any(
        value < 0 for (name, _), value in _samples(sw).items() if name.startswith("sluice_port_pfc")
    )


def test_priority_groups_drops_and_watermarks_with_resets_of_their_own() -> None:
    sw = _switch()
    sw.counters(PG, {PG_DROPS: "0", PG_XOFF: "1024"}, 1 * S)
    sw.counters(PG, {PG_DROPS: "12", PG_XOFF: "4096"}, 3 * S)
    view = sw.priority_groups[QueueId("Ethernet0", "3")]
    assert (view.rates[PG_DROPS], view.gauges[PG_XOFF]) == (6.0, 4096)
    labels = frozenset({("switch", "leaf1"), ("port", "Ethernet0"), ("pg", "3"),
                        ("class", "roce")})  # fmt: skip
    samples = _samples(sw)
    assert samples[("sluice_pg_dropped_packets_per_second", labels)] == 6.0
    assert samples[("sluice_pg_headroom_watermark_bytes", labels)] == 4096
    sw.counters(PG, {PG_DROPS: "0"}, 4 * S)
    assert sw.pg_resets == {QueueId("Ethernet0", "3"): 1}
    assert sw.resets == {}  # queue 3's resets are its own
    reset = frozenset({("switch", "leaf1"), ("port", "Ethernet0"), ("queue", ""), ("pg", "3")})
    assert _samples(sw)[("sluice_counter_resets_total", reset)] == 1


def test_the_watchdogs_storms_per_queue() -> None:
    sw = _switch()
    sw.counters(QUEUE, {"SAI_QUEUE_STAT_PACKETS": "1", "PFC_WD_STATUS": "stormed",
                        DETECTED: "3", RESTORED: "2"}, 1 * S)  # fmt: skip
    assert watchdog(sw) == {QueueId("Ethernet0", "3"): WatchdogCounts(3, 2)}
    labels = frozenset({("switch", "leaf1"), ("port", "Ethernet0"), ("queue", "3"),
                        ("class", "roce")})  # fmt: skip
    samples = _samples(sw)
    assert samples[("sluice_queue_pfc_storms_detected_total", labels)] == 3
    assert samples[("sluice_queue_pfc_storm_active", labels)] == 1
    sw.counters(QUEUE, {"SAI_QUEUE_STAT_PACKETS": "2", "PFC_WD_STATUS": "operational",
                        DETECTED: "3", RESTORED: "3"}, 2 * S)  # fmt: skip
    assert _samples(sw)[("sluice_queue_pfc_storm_active", labels)] == 0


def test_a_quiet_priority_or_group_no_lossless_class_is_on_has_no_series() -> None:
    sw = _switch()  # lossless: priority 3 only
    rx0, rx5 = "SAI_PORT_STAT_PFC_0_RX_PKTS", "SAI_PORT_STAT_PFC_5_RX_PKTS"
    sw.counters(PORT, {RX3: "0", rx0: "0", rx5: "0"}, 1 * S)
    sw.counters(PORT, {RX3: "0", rx0: "0", rx5: "40"}, 2 * S)
    sw.counters("oid:0x1a000000000000", {PG_DROPS: "0"}, 1 * S)
    sw.counters("oid:0x1a000000000000", {PG_DROPS: "0"}, 2 * S)
    sw.counters(PG, {PG_DROPS: "0"}, 1 * S)
    sw.counters(PG, {PG_DROPS: "0"}, 2 * S)
    samples = _samples(sw)
    pauses = {dict(labels)["priority"]: value for (name, labels), value in samples.items()
              if name == "sluice_port_pfc_rx_pause_frames_per_second"}  # fmt: skip
    assert pauses == {"3": 0.0, "5": 40.0}  # lossless 3 always, lossy 5 while it pauses
    groups = {dict(labels)["pg"] for (name, labels), _ in samples.items()
              if name == "sluice_pg_dropped_packets_per_second"}  # fmt: skip
    assert groups == {"3"}
