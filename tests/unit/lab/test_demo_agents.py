"""The agent demo's pure part: queues shown, the traffic file, rates from counter deltas,
start/stop markers, the phase summary and the table's alignment. Expected values by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.intent.loader import load_intent_file, parse_intent
from lab.demo_agents_view import (
    AgentDemo,
    Burst,
    QueueReading,
    Reading,
    ShownQueue,
    active_at,
    boundaries,
    events_between,
    queue_row,
    render_header,
    render_row,
    render_summary,
    rows,
    shown_queues,
    summarize,
    traffic_text,
)
from lab.demo_common import DemoError
from lab.demo_switches import demo_intent

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
DEFAULT = AgentDemo()


def _q(queue: int, tx: int, marked: int = 0, k: int | None = 1000, flag: str = "C") -> QueueReading:
    return QueueReading(queue, k, flag, tx, marked, occupancy_bytes=4500)


def test_queues_come_from_the_intent_highest_weight_first() -> None:
    queues = shown_queues(load_intent_file(EXAMPLE), DEFAULT.schedule)
    # docs/example-intent.yaml: storage q3 DWRR 50 DSCP 10/12, analytics q2 30 DSCP 18/20,
    # best-effort q1 20 DSCP 0.
    assert queues == [
        ShownQueue(3, "storage", "mqecn", 50, 10),
        ShownQueue(2, "analytics", "mqecn", 30, 18),
        ShownQueue(1, "best-effort", "per-queue-minimum", 20, 0),
    ]


def test_a_class_the_intent_lacks_is_named() -> None:
    with pytest.raises(DemoError, match="no service class named bulk"):
        shown_queues(load_intent_file(EXAMPLE), (Burst("bulk", 0, 1),))


def test_traffic_file_has_one_dctcp_class_per_burst_on_its_dscp() -> None:
    demo = AgentDemo(schedule=(Burst("storage", 0.0, 1.5), Burst("analytics", 0.25, 3.0)))
    queues = shown_queues(load_intent_file(EXAMPLE), demo.schedule)
    lines = traffic_text(demo, queues, rtt_us=40.0).splitlines()
    assert lines[0].startswith("#")
    assert lines[1:] == [
        "storage port=Ethernet0 dscp=10 kind=dctcp flows=2 packet_bytes=9000 rtt_us=40 "
        "start=0ms stop=1500ms",
        "analytics port=Ethernet0 dscp=18 kind=dctcp flows=2 packet_bytes=9000 rtt_us=40 "
        "start=250ms stop=3000ms",
    ]


def test_rates_from_counter_deltas() -> None:
    # 3,125,000,000 B in 0.5 s = 6.25e9 B/s x 8 = 50 Gb/s; 500 marks in 0.5 s = 1,000/s.
    row = queue_row(_q(3, 1_000_000, 100), _q(3, 3_126_000_000, 600, k=78_125), 0.5)
    assert row.gbps == pytest.approx(50.0)
    assert row.marks_per_s == pytest.approx(1000.0)
    assert (row.threshold_bytes, row.flag, row.occupancy_bytes) == (78_125, "C", 4500)


def test_counters_that_went_back_show_no_traffic_rather_than_negative() -> None:
    row = queue_row(_q(3, 5_000, 10), _q(3, 1_000, 2), 1.0)
    assert (row.gbps, row.marks_per_s) == (0.0, 0.0)
    with pytest.raises(ValueError, match="positive"):
        queue_row(_q(3, 0), _q(3, 0), 0.0)


def test_rows_use_the_time_between_readings() -> None:
    # 250,000,000 B in 2 s = 125,000,000 B/s x 8 = 1 Gb/s; 0 B on queue 2.
    before = Reading(1.0, {3: _q(3, 0), 2: _q(2, 7)})
    after = Reading(3.0, {3: _q(3, 250_000_000), 2: _q(2, 7)})
    out = rows(before, after)
    assert out[3].gbps == pytest.approx(1.0)
    assert out[2].gbps == 0.0


def test_phases_and_start_stop_markers() -> None:
    s = DEFAULT.schedule  # storage 0-15, analytics 5-20, best-effort 10-20
    assert boundaries(s) == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert active_at(s, 4.99) == ["storage"]
    assert active_at(s, 15.0) == ["analytics", "best-effort"]
    assert active_at(s, 20.0) == []
    assert events_between(s, float("-inf"), 0.0) == ["0.0 s  storage starts"]
    assert events_between(s, 4.75, 5.75) == ["5.0 s  analytics starts"]
    assert events_between(s, 5.75, 6.75) == []
    assert events_between(s, 14.75, 20.75) == [
        "15.0 s  storage stops",
        "20.0 s  analytics stops",
        "20.0 s  best-effort stops",
    ]


def test_summary_per_phase_leaves_out_the_first_second() -> None:
    schedule = (Burst("a", 0.0, 4.0), Burst("b", 2.0, 4.0))
    # Queue 3 sends 1.25e9 B/s (x 8 = 10 Gb/s) throughout; queue 2 from 2 s at 6.25e8 B/s
    # (5 Gb/s). The reading at 0.5 s falls in the settling second and is left out.
    times = [0.5, 1.0, 1.5, 2.0, 3.0, 3.5, 4.0]
    readings = [
        Reading(
            t,
            {
                3: _q(3, int(1_250_000_000 * t), k=int(100 * t)),
                2: _q(2, int(625_000_000 * max(t - 2, 0))),
            },
        )
        for t in times
    ]
    phases = summarize(schedule, readings)
    assert [(p.start_s, p.end_s, p.active) for p in phases] == [
        (0.0, 2.0, ["a"]),
        (2.0, 4.0, ["a", "b"]),
    ]
    # Phase 0-2 s: readings 1.0 .. 2.0; phase 2-4 s: readings 3.0 .. 4.0.
    assert phases[0].gbps[3] == pytest.approx(10.0)
    assert phases[0].gbps[2] == 0.0
    assert phases[1].gbps[3] == pytest.approx(10.0)
    assert phases[1].gbps[2] == pytest.approx(5.0)
    # The threshold at each phase's last reading (2.0 s and 4.0 s).
    assert (phases[0].threshold_bytes[3], phases[1].threshold_bytes[3]) == (200, 400)


def test_a_phase_with_fewer_than_two_settled_readings_is_left_out() -> None:
    schedule = (Burst("a", 0.0, 1.5),)
    readings = [Reading(t, {3: _q(3, int(t * 1000))}) for t in (0.5, 0.9, 1.4)]
    assert [p.start_s for p in summarize(schedule, readings)] == []


def test_table_columns_line_up() -> None:
    queues = shown_queues(load_intent_file(EXAMPLE), DEFAULT.schedule)
    header = render_header(queues)
    line = render_row(
        12.0,
        queues,
        rows(
            Reading(11.0, {q.queue: _q(q.queue, 0) for q in queues}),
            Reading(12.0, {q.queue: _q(q.queue, 3_125_000_000, k=None, flag="S") for q in queues}),
        ),
    )
    pipes = [i for i, c in enumerate(header[1]) if c == "|"]
    assert [i for i, c in enumerate(header[0]) if c == "|"] == pipes
    assert [i for i, c in enumerate(line) if c == "|"] == pipes
    # 3,125,000,000 B in 1 s = 25 Gb/s; no profile shows "-".
    assert line.split("|")[1].split() == ["-", "S", "25.00", "0", "4.5"]


def test_summary_columns_line_up() -> None:
    queues = shown_queues(load_intent_file(EXAMPLE), DEFAULT.schedule)
    readings = [
        Reading(t, {q.queue: _q(q.queue, int(t * 1e9), k=125_000) for q in queues})
        for t in (1.0, 2.0, 3.0, 4.0, 5.0)
    ]
    lines = render_summary(queues, summarize(DEFAULT.schedule, readings))
    assert len(lines) == 2  # the header and the 0-5 s phase
    assert len(lines[0]) == len(lines[1])
    # 1e9 B/s = 8 Gb/s.
    assert lines[1].split()[-3:] == ["B", "8.00", "Gb/s"]


def test_the_switch_step_intent_polls_as_often_as_the_counters_refresh() -> None:
    intent = parse_intent(demo_intent(EXAMPLE, 3.0, lambda port: True))
    example = load_intent_file(EXAMPLE)
    # The demo lowers the counter poll to 100 ms, counterpoll's minimum (sonic-utilities).
    assert intent.fabric.agent.interval_ms == 100
    # Only the interval changes: the rest of the agent's orders are the example's.
    assert intent.fabric.agent == example.fabric.agent
