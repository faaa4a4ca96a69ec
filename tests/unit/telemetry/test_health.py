"""The health model on worked examples: two leaves with 2 MB port buffers (defaults: drops
warn at 1/s and critical at 100/s, marks at 0.5 and 0.9, occupancy at 70 % and 90 % of the
port buffer, heartbeat at 5 s and 30 s, counters at 30 s and 120 s, collector lag at 5 s
and 30 s)."""

from __future__ import annotations

from typing import Any

from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.telemetry.health import (
    FabricSamples,
    QueueSample,
    State,
    SwitchSample,
    fabric_health,
    worst,
)
from tests.unit.intent.intents import intent_data

HEALTHY_SWITCH = {"stream_up": True, "last_update_age_s": 1.0, "heartbeat_age_s": 0.2}


def intent(**health: Any) -> Intent:
    data = intent_data()
    if health:
        data["fabric"]["health"] = health
    return parse_intent(data)


def healthy(name: str, **changes: Any) -> SwitchSample:
    return SwitchSample(name, **{**HEALTHY_SWITCH, "agent_mode": "dynamic", **changes})


def samples(*queues: QueueSample, lag: float = 0.5, **leaf1: Any) -> FabricSamples:
    return FabricSamples(
        queues=queues,
        switches=(healthy("leaf1", **leaf1), healthy("leaf2")),
        collector_lag_s={"0": lag},
    )


def q(**values: Any) -> QueueSample:
    return QueueSample("leaf1", values.pop("port", "Ethernet0"), values.pop("queue", "3"), **values)


def test_a_quiet_fabric_is_ok_everywhere() -> None:
    verdict = fabric_health(intent(), samples(q(dropped_packets_per_s=0.0, mark_fraction=0.1)))
    assert verdict.state is State.OK
    assert verdict.counts() == {"ok": 2, "warn": 0, "critical": 0}
    assert [s.all_reasons for s in verdict.switches] == [(), ()]


def test_drops_grade_the_queue_port_switch_and_fabric() -> None:
    # 2.5 drops/s is >= 1 (warn) and < 100 (critical).
    verdict = fabric_health(intent(), samples(q(dropped_packets_per_s=2.5)))
    leaf1 = verdict.switches[0]
    assert (verdict.state, leaf1.state, leaf1.ports[0].state) == (State.WARN,) * 3
    (reason,) = leaf1.all_reasons
    assert (reason.check, reason.where) == ("drops", "leaf1 Ethernet0 queue 3")
    assert reason.detail == "dropped packets/s 2.5 >= 1"


def test_critical_at_the_critical_threshold_itself() -> None:
    verdict = fabric_health(intent(), samples(q(dropped_packets_per_s=100.0)))
    assert verdict.switches[0].ports[0].queues[0].reasons[0].state is State.CRITICAL


def test_occupancy_is_judged_against_the_port_buffer() -> None:
    # 1.5 MB of a 2 MB buffer = 75 %: warn (>= 70 %), not critical (< 90 %).
    verdict = fabric_health(intent(), samples(q(occupancy_bytes=1_500_000)))
    (reason,) = verdict.switches[0].all_reasons
    assert reason.check == "occupancy"
    assert reason.state is State.WARN
    assert reason.detail.startswith("occupancy % of the 2000000 B port buffer 75 >= 70")


def test_a_port_with_its_own_buffer_uses_it() -> None:
    data = intent_data()
    data["switches"][0]["ports"][0]["buffer_bytes"] = 1_000_000
    # 950 kB of its own 1 MB = 95 %: critical; the same bytes on the 2 MB default would be ok.
    verdict = fabric_health(parse_intent(data), samples(q(occupancy_bytes=950_000)))
    assert verdict.switches[0].state is State.CRITICAL
    other = fabric_health(parse_intent(data), samples(q(port="Ethernet4", occupancy_bytes=950_000)))
    assert other.switches[0].state is State.OK


def test_thresholds_come_from_the_intent() -> None:
    # 0.6 of packets marked: warn with the defaults, ok when the intent allows up to 0.7.
    marked = samples(q(mark_fraction=0.6))
    assert fabric_health(intent(), marked).state is State.WARN
    relaxed = intent(mark_fraction_warn=0.7, mark_fraction_critical=0.95)
    assert fabric_health(relaxed, marked).state is State.OK


def test_a_queue_on_the_stale_fallback_warns() -> None:
    verdict = fabric_health(intent(), samples(q(basis="stale_fallback")))
    assert [r.check for r in verdict.switches[0].all_reasons] == ["agent_fallback"]


def test_agent_heartbeat_and_mode() -> None:
    old = fabric_health(intent(), samples(heartbeat_age_s=45.0))
    assert [(r.check, r.state) for r in old.switches[0].reasons] == [
        ("agent_stale", State.CRITICAL)
    ]
    fallback = fabric_health(intent(), samples(agent_mode="fallback"))
    assert [(r.check, r.state) for r in fallback.switches[0].reasons] == [
        ("agent_fallback", State.WARN)
    ]
    stopped = fabric_health(intent(), samples(agent_mode="stopped"))
    assert stopped.switches[0].state is State.CRITICAL


def test_a_stream_down_and_old_counters_are_both_reported() -> None:
    verdict = fabric_health(intent(), samples(stream_up=False, last_update_age_s=40.0))
    assert [(r.check, r.state) for r in verdict.switches[0].reasons] == [
        ("stream_down", State.CRITICAL),
        ("counters_stale", State.WARN),
    ]


def test_a_declared_switch_without_telemetry_is_critical() -> None:
    verdict = fabric_health(
        intent(), FabricSamples(switches=(healthy("leaf1"),), collector_lag_s={"0": 0})
    )
    assert [s.state for s in verdict.switches] == [State.OK, State.CRITICAL]
    assert verdict.switches[1].reasons[0].check == "no_telemetry"


def test_collector_lag_and_a_missing_collector_grade_the_fabric() -> None:
    lagging = fabric_health(intent(), samples(lag=31.0))
    assert lagging.state is State.CRITICAL
    assert [r.where for r in lagging.reasons] == ["collector 0"]
    assert [s.state for s in lagging.switches] == [State.OK, State.OK]
    alone = fabric_health(intent(), FabricSamples(switches=(healthy("leaf1"), healthy("leaf2"))))
    assert [r.check for r in alone.reasons] == ["no_collector"]


def test_undeclared_switches_are_ignored_and_queues_sorted_numerically() -> None:
    stray = QueueSample("spine9", "Ethernet0", "1", dropped_packets_per_s=500)
    verdict = fabric_health(intent(), samples(stray, q(queue="10"), q(queue="3")))
    assert [s.switch for s in verdict.switches] == ["leaf1", "leaf2"]
    assert verdict.state is State.OK
    assert [x.queue for x in verdict.switches[0].ports[0].queues] == ["3", "10"]


def test_worst() -> None:
    assert worst([]) is State.OK
    assert worst([State.WARN, State.OK, State.CRITICAL, State.WARN]) is State.CRITICAL
