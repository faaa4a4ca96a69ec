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
    LosslessSample,
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


def test_an_idle_fabric_is_healthy_even_with_the_last_rates_that_moved() -> None:
    # Both agents report idle; leaf1's queue still shows the drops and marks of the last
    # interval its counters moved (the collector keeps the last rate), and basis idle.
    idle = FabricSamples(
        queues=(q(dropped_packets_per_s=40.0, mark_fraction=0.95, basis="idle"),),
        switches=(healthy("leaf1", agent_mode="idle"), healthy("leaf2", agent_mode="idle")),
        collector_lag_s={"0": 0.5},
    )
    verdict = fabric_health(intent(), idle)
    assert verdict.state is State.OK
    assert [(s.switch, s.idle, s.all_reasons) for s in verdict.switches] == [
        ("leaf1", True, ()),
        ("leaf2", True, ()),
    ]
    # The same values on a switch that is not idle are its traffic's: critical drops.
    busy = fabric_health(intent(), samples(q(dropped_packets_per_s=40.0, mark_fraction=0.95)))
    assert busy.state is State.CRITICAL


def test_a_faulty_agent_on_an_idle_looking_fabric_is_not_healthy() -> None:
    # No traffic anywhere: leaf2's agent idles, leaf1's falls back (its counters are missing)
    # and holds its queue on the stale fallback. That is a fault, not idleness.
    quiet = FabricSamples(
        queues=(q(dropped_packets_per_s=0.0, basis="stale_fallback"),),
        switches=(healthy("leaf1", agent_mode="fallback"), healthy("leaf2", agent_mode="idle")),
        collector_lag_s={"0": 0.5},
    )
    verdict = fabric_health(intent(), quiet)
    assert verdict.state is State.WARN
    leaf1, leaf2 = verdict.switches
    assert (leaf1.idle, leaf1.state) == (False, State.WARN)
    assert {r.check for r in leaf1.all_reasons} == {"agent_fallback"}
    assert len(leaf1.all_reasons) == 2  # the agent's mode and the queue's basis
    assert (leaf2.idle, leaf2.state) == (True, State.OK)
    # A stopped agent or an old heartbeat on an idle switch is still reported.
    stopped = fabric_health(
        intent(),
        FabricSamples(
            switches=(
                healthy("leaf1", agent_mode="stopped"),
                healthy("leaf2", agent_mode="idle", heartbeat_age_s=40.0),
            ),
            collector_lag_s={"0": 0.5},
        ),
    )
    assert [s.state for s in stopped.switches] == [State.CRITICAL, State.CRITICAL]


def test_a_pause_storm_and_a_lossless_drop_are_reasons_of_the_switch() -> None:
    # Defaults: pauses warn at 300/s and are critical at 3000/s; a lossless drop is critical.
    paused = LosslessSample("leaf1", "Ethernet0", "3", "storage", pause_per_s=450.0)
    verdict = fabric_health(intent(), FabricSamples(
        switches=(healthy("leaf1"), healthy("leaf2")), collector_lag_s={"0": 0.5},
        lossless=(paused,)))  # fmt: skip
    (reason,) = verdict.switches[0].all_reasons
    assert (reason.check, reason.state) == ("pfc_storm", State.WARN)
    assert reason.where == "leaf1 Ethernet0 priority 3 (storage)"
    assert reason.detail == "PFC pause frames/s 450 >= 300"
    stormed = LosslessSample("leaf1", "Ethernet4", "3", "storage", storming=True,
                             dropped_packets_per_s=0.5)  # fmt: skip
    verdict = fabric_health(intent(), FabricSamples(
        switches=(healthy("leaf1"), healthy("leaf2")), collector_lag_s={"0": 0.5},
        lossless=(paused, stormed)))  # fmt: skip
    assert verdict.switches[0].state is State.CRITICAL
    checks = [(r.check, r.state, r.where.split()[1]) for r in verdict.switches[0].all_reasons]
    assert checks == [
        ("pfc_storm", State.WARN, "Ethernet0"),
        ("pfc_storm", State.CRITICAL, "Ethernet4"),
        ("lossless_drops", State.CRITICAL, "Ethernet4"),
    ]
    # Quiet lossless priorities are no reason.
    quiet = LosslessSample("leaf1", "Ethernet0", "3", "storage", pause_per_s=10.0,
                           dropped_packets_per_s=0.0)  # fmt: skip
    verdict = fabric_health(intent(), FabricSamples(
        switches=(healthy("leaf1"), healthy("leaf2")), collector_lag_s={"0": 0.5},
        lossless=(quiet,)))  # fmt: skip
    assert verdict.state is State.OK
