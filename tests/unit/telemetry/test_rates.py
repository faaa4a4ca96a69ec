"""Counter deltas to rates (the reference rule, tests/support/reference_counters.py, and one
switch's state over the compiled core, its series read back from the exposition by
prometheus_client's parser): switch timestamps, resets never negative, unknown oids counted."""

from __future__ import annotations

from controller.telemetry.metrics import TelemetryMetrics
from controller.telemetry.rates import grew_too_fast
from controller.telemetry.state import QueueId, ResetEvent, SwitchTelemetry
from tests.support.reference_counters import CounterTrack
from tests.support.reference_exposition import read_back

S = 1_000_000_000
QUEUE = frozenset(
    {("switch", "leaf1"), ("port", "Ethernet0"), ("queue", "3"), ("class", "storage")}
)
PORT = frozenset({("switch", "leaf1"), ("port", "Ethernet0")})


def exposed(sw: SwitchTelemetry, labels: frozenset[tuple[str, str]]) -> dict[str, float]:
    """``sw``'s series with exactly ``labels``, by name, as a scrape reads them."""
    text = TelemetryMetrics("0/1", lambda: [sw], lambda: 9 * S).render()
    return {name: value for (name, got), value in read_back(text).items() if got == labels}


def test_rate_is_the_delta_over_the_switch_timestamps() -> None:
    track = CounterTrack()
    assert track.add(10 * S, 1_000).rate is None  # one sample: no rate yet
    # 2,500 bytes in 0.5 s of switch time: 5,000 B/s, whenever it arrived here.
    assert track.add(10 * S + S // 2, 3_500).rate == 5_000.0


def test_a_counter_that_goes_backwards_is_one_reset_and_no_rate() -> None:
    track = CounterTrack()
    track.add(1 * S, 9_000)
    track.add(2 * S, 10_000)
    step = track.add(3 * S, 400)  # cleared: sonic-clear queuecounters
    assert step.reset
    assert step.rate is None
    after = track.add(4 * S, 1_400)  # the next delta starts from the cleared value
    assert not after.reset
    assert after.rate == 1_000.0


def test_a_duplicate_or_older_sample_changes_nothing() -> None:
    track = CounterTrack()
    track.add(2 * S, 100)
    step = track.add(2 * S, 50)
    assert not step.reset
    assert step.rate is None
    assert track.add(3 * S, 300).rate == 200.0


def test_a_window_spans_several_samples() -> None:
    track = CounterTrack(window_ns=2 * S)
    track.add(0, 0)
    assert track.add(1 * S, 100).rate is None  # 1 s < the 2 s window
    assert track.add(2 * S, 300).rate == 150.0  # (300 - 0) / 2 s
    assert track.add(3 * S, 400).rate == 150.0  # (400 - 100) / 2 s


def test_the_mark_fraction_is_clamped_and_zero_when_nothing_was_sent() -> None:
    sw = _switch()
    oid = "oid:0x15000000000003"
    marks = "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"
    fractions = []
    for sent, marked in ((1000, 1100), (1000, 1200), (3000, 1700)):
        sw.counters(oid, {"SAI_QUEUE_STAT_PACKETS": str(sent), marks: str(marked)}, marked * S)
        fractions.append(exposed(sw, QUEUE).get("sluice_queue_mark_fraction"))
    # No rate from one sample; nothing sent but 100 marked: 0; 500 marked of 2000: 0.25.
    assert fractions == [None, 0.0, 0.25]
    sw.counters(oid, {"SAI_QUEUE_STAT_PACKETS": "3010", marks: "1720"}, 1800 * S)
    assert exposed(sw, QUEUE)["sluice_queue_mark_fraction"] == 1.0  # 20 marked of 10 sent


def _switch() -> SwitchTelemetry:
    sw = SwitchTelemetry("leaf1", {"Ethernet0": 10e9}, {"3": "storage"})
    sw.set_queue_map({"Ethernet0:3": "oid:0x15000000000003"})
    sw.set_port_map({"Ethernet0": "oid:0x1000000000001"})
    return sw


def test_queue_rates_marks_and_occupancy_from_sai_fields() -> None:
    sw = _switch()
    oid = "oid:0x15000000000003"
    first = {"SAI_QUEUE_STAT_BYTES": "0", "SAI_QUEUE_STAT_PACKETS": "0",
             "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "0",
             "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "7000"}  # fmt: skip
    sw.counters(oid, first, 1 * S)
    second = {"SAI_QUEUE_STAT_BYTES": "1500000", "SAI_QUEUE_STAT_PACKETS": "1000",
              "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "250",
              "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "9000"}  # fmt: skip
    sw.counters(oid, second, 2 * S)
    view = exposed(sw, QUEUE)
    assert view["sluice_queue_tx_bytes_per_second"] == 1_500_000.0
    assert view["sluice_queue_ecn_marked_packets_per_second"] == 250.0
    assert view["sluice_queue_mark_fraction"] == 0.25
    # No current-occupancy stat polled: the watermark since the last read stands in.
    assert view["sluice_queue_occupancy_bytes"] == view["sluice_queue_watermark_bytes"] == 9000
    assert sw.class_of("3") == "storage"


def test_a_cleared_queue_gives_one_reset_event_for_all_its_fields() -> None:
    sw = _switch()
    oid = "oid:0x15000000000003"
    fields = ("SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_DROPPED_PACKETS")
    sw.counters(oid, dict.fromkeys(fields, "1000"), 1 * S)
    event = sw.counters(oid, dict.fromkeys(fields, "5"), 2 * S)
    assert event == ResetEvent("Ethernet0", "3")
    assert sw.resets == {ResetEvent("Ethernet0", "3"): 1}
    view = exposed(sw, QUEUE)
    assert "sluice_queue_tx_bytes_per_second" not in view  # no negative rate, none at all


def test_port_utilisation_and_unknown_oids() -> None:
    sw = _switch()
    port = "oid:0x1000000000001"
    sw.counters(port, {"SAI_PORT_STAT_IF_OUT_OCTETS": "0"}, 1 * S)
    sw.counters(port, {"SAI_PORT_STAT_IF_OUT_OCTETS": "625000000"}, 2 * S)
    assert exposed(sw, PORT)["sluice_port_utilisation"] == 0.5  # 5 Gb/s of 10
    assert sw.counters("oid:0xdead", {"SAI_QUEUE_STAT_BYTES": "1"}, 3 * S) is None
    assert sw.unknown_oids == 1


def test_a_changed_name_map_forgets_objects_it_no_longer_names() -> None:
    sw = _switch()
    sw.counters("oid:0x15000000000003", {"SAI_QUEUE_STAT_BYTES": "1"}, 1 * S)
    sw.set_queue_map({"Ethernet0:3": "oid:0x15000000000099"})
    assert exposed(sw, QUEUE) == {}
    sw.counters("oid:0x15000000000003", {"SAI_QUEUE_STAT_BYTES": "2"}, 2 * S)
    assert sw.unknown_oids == 1
    assert sw.counter_oids() == ["oid:0x15000000000099", "oid:0x1000000000001"]


def test_agent_state_and_staleness() -> None:
    sw = _switch()
    assert sw.is_stale(10 * S, 3.0)  # nothing yet
    sw.agent_state("global", {"heartbeat": "9000", "mode": "dynamic", "algorithm": "mqecn",
                              "version": "00ab", "loop_us": "250"}, 9 * S)  # fmt: skip
    sw.agent_state("Ethernet0|3", {"threshold_bytes": "62500", "basis": "computed"}, 9 * S)
    assert sw.agent is not None
    assert sw.agent.loop_seconds == 0.00025
    assert sw.agent_queues[QueueId("Ethernet0", "3")].threshold_bytes == 62_500
    assert not sw.is_stale(10 * S, 3.0)
    assert sw.is_stale(13 * S, 3.0)
    sw.agent_state("Ethernet0|3", None, 10 * S)
    assert sw.agent_queues == {}


def test_growth_past_the_line_rate_allowance_is_too_fast_and_not_before() -> None:
    # 100 counts a second: four times that over the second since the change plus a second.
    assert not grew_too_fast(800, 1 * S, 100)
    assert grew_too_fast(801, 1 * S, 100)
    assert not grew_too_fast(10**30, 1 * S, None)  # no line rate known: no bound
    assert not grew_too_fast(0, 0, 0)


def test_a_counter_that_jumps_past_its_line_rate_is_a_reset_not_a_rate() -> None:
    line_rate = 25 * 10**9 // 8  # a 25 Gb/s port, in bytes a second
    track = CounterTrack(limit_per_s=line_rate)
    track.add(1 * S, 1_000)
    step = track.add(2 * S, 2**64 - 1_000)  # went below zero on the switch: not traffic
    assert step.reset
    assert step.rate is None
    after = track.add(3 * S, 2**64 - 1_000)
    assert not after.reset
    assert after.rate == 0.0


def test_the_allowance_runs_from_when_the_value_last_changed() -> None:
    """A SAMPLE re-sends the last value written each tick: a counter polled every 10 s moves
    once in ten ticks, by ten seconds of traffic."""
    track = CounterTrack(limit_per_s=100)
    track.add(1 * S, 0)
    for tick in range(2, 11):
        assert not track.add(tick * S, 0).reset
    step = track.add(11 * S, 100 * 10)  # ten seconds at line rate, seen one tick later
    assert not step.reset
    assert step.rate == 1_000.0
