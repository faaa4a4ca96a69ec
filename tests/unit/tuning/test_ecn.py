"""ECN lambda rule, worked by hand.

The group: class storage on 25 Gb/s ports, RTT 40 us, DWRR weight 70 of 100, MTU 1500.
C = 25e9 / 8 = 3.125e9 B/s, C x RTT = 3.125e9 x 40e-6 = 125 000 B, so K = 125 000 x lambda:
at lambda 1, K = 125 000 B and the underflow test's K/2 = 62 500 B; the safe floor
K_safe = 125 000 x 0.17 = 21 250 B.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from controller.tuning.ecn import EcnBounds, EcnGroup, safe_floor_bytes, tune_lambda
from controller.tuning.evidence import Change
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QueueSummary

GROUP = EcnGroup("storage", 25, 1.0, 40.0, 1500, 70, 100)
BOUNDS = EcnBounds(lambda_min=0.17, lambda_max=2.0, utilisation_target=0.9)
POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def queue(
    utilisation: float,
    marks: float,
    *,
    offered: float | None = None,
    p50: float | None = 20_000,
    drops_per_s: float | None = 0.0,
    port: str = "Ethernet0",
) -> QueueSummary:
    return QueueSummary(
        "leaf1",
        port,
        "storage",
        25,
        utilisation=utilisation,
        mark_fraction=marks,
        occupancy_p50_bytes=p50,
        occupancy_p95_bytes=90_000,
        dropped_packets_per_s=drops_per_s,
        tx_bytes_per_s=1.5e9,  # 1 000 000 packets/s of 1500 B
        offered_utilisation=offered,
    )


def tune(queues: list[QueueSummary], group: EcnGroup = GROUP, bounds: EcnBounds = BOUNDS) -> Change:
    change = tune_lambda(group, queues, bounds, now_s=0, last_changed={}, policy=POLICY)
    assert change is not None
    return change


def test_k_limited_port_raises_lambda_by_at_most_the_step() -> None:
    # Marking (0.12) at utilisation 0.6 < 0.85 with offered demand 1.0 (> 0.6 + 0.05), the
    # queue's p50 20 000 B <= K/2 = 62 500 B (it underflows), no drops: K limits the port.
    # wanted = 1.0 x min(0.9, 1.0) / 0.6 = 1.5; the 25 % step allows 1.25.
    # K = 125 000 x 1.25 = 156 250 B; agent floor 70/100 x K = 109 375 B, ceiling K.
    change = tune([queue(0.6, 0.12, offered=1.0)])
    assert change.applies
    assert change.parameter == "ecn_lambda/storage/25gbps"
    assert change.proposed == 1.25
    assert change.related["standard_threshold_bytes"] == 156_250
    assert change.related["agent_floor_bytes"] == 109_375
    assert change.related["agent_ceiling_bytes"] == 156_250
    assert change.evidence.outputs["lambda_wanted"] == 1.5
    assert any("max step" in b for b in change.evidence.bounds)
    assert change.evidence.inputs["utilisation_marking_mean"] == 0.6
    assert change.evidence.inputs["offered_utilisation_marking_mean"] == 1.0
    assert "K limits the port" in str(change.evidence.inputs["verdict"])


def test_offered_demand_caps_the_raise() -> None:
    # Offered 0.72, carried 0.6: the link can use at most 0.72, not the 0.9 target:
    # wanted = 1.0 x 0.72 / 0.6 = 1.2 (20 %, inside the step): K = 150 000 B.
    change = tune([queue(0.6, 0.12, offered=0.72)])
    assert change.applies
    assert change.proposed == 1.2
    assert change.related["standard_threshold_bytes"] == 150_000


def test_demand_limited_port_is_held() -> None:
    # The twin's case: utilisation 0.7 below the target while marking, but the port is
    # offered 0.7 and carries 0.7. No threshold raises that: held at lambda 1.0, and the
    # group still has its say in the fabric lambda (it asks for the current one).
    change = tune([queue(0.7, 0.1, offered=0.7)])
    assert not change.applies
    assert change.proposed == 1.0
    assert change.held is not None
    assert change.held.startswith("demand-limited")
    assert change.evidence.inputs.get("opinion") is not False


def test_without_a_demand_measurement_the_queue_signature_decides() -> None:
    # A switch's counters see only what was carried (offered None). The queue underflows
    # (p50 20 000 B <= 62 500 B) without drops: raised as in the first test (wanted 0.9 / 0.6
    # = 1.5, step 1.25), and the verdict says the demand was not measured.
    change = tune([queue(0.6, 0.12, offered=None)])
    assert change.applies
    assert change.proposed == 1.25
    assert "offered demand not measured" in str(change.evidence.inputs["verdict"])
    # The same port with a standing queue (p50 80 000 B > 62 500 B) is held.
    standing = tune([queue(0.6, 0.12, offered=None, p50=80_000)])
    assert not standing.applies
    assert standing.held is not None
    assert "queue stands" in standing.held


def test_a_standing_queue_below_target_is_not_underflow() -> None:
    # Offered 1.0, carried 0.6, but p50 80 000 B > K/2 = 62 500 B: the queue does not drain
    # between marks, so K is not what idles the link (DCTCP §3.3): held.
    change = tune([queue(0.6, 0.12, offered=1.0, p50=80_000)])
    assert not change.applies
    assert change.held is not None
    assert "queue stands" in change.held


def test_drops_below_target_hold_the_raise() -> None:
    # 2 000 drops/s over 1 000 000 packets/s = 0.2 % >= 0.1 %: the buffer binds, not K.
    change = tune([queue(0.6, 0.12, offered=1.0, drops_per_s=2_000)])
    assert not change.applies
    assert change.held is not None
    assert "drops (0.20% of packets)" in change.held


def test_standing_queue_at_target_lowers_lambda() -> None:
    # Utilisation 0.92 (target met), p50 100 000 B > K_safe 21 250 B: wanted =
    # 1.0 x 21 250 / 100 000 = 0.2125; the 25 % step allows 0.75: K = 93 750 B, agent floor
    # 70/100 x 93 750 = 65 625 B. No demand measurement is needed to lower.
    change = tune([queue(0.92, 0.3, p50=100_000)])
    assert change.applies
    assert change.proposed == 0.75
    assert change.evidence.outputs["lambda_wanted"] == 0.2125
    assert change.related["standard_threshold_bytes"] == 93_750
    assert change.related["agent_floor_bytes"] == 65_625
    assert "standing queue" in str(change.evidence.inputs["verdict"])


def test_lowering_never_goes_below_the_safe_floor() -> None:
    # lambda 0.2, utilisation 0.95, p50 50 000 B: wanted 0.2 x 21 250 / 50 000 = 0.085; the
    # step allows 0.2 - 0.05 = 0.15; the safe floor lambda_min = 0.17 wins: K = 21 250 B.
    group = replace(GROUP, current_lambda=0.2)
    change = tune([queue(0.95, 0.3, p50=50_000)], group)
    assert change.applies
    assert change.proposed == 0.17
    assert change.related["standard_threshold_bytes"] == 21_250 == safe_floor_bytes(group, BOUNDS)
    assert any("safe floor" in b for b in change.evidence.bounds)


def test_a_short_queue_at_target_is_held() -> None:
    # Utilisation 0.9, p50 20 000 B <= K_safe 21 250 B: the least queueing already.
    change = tune([queue(0.9, 0.3, p50=20_000)])
    assert not change.applies
    assert change.held is not None
    assert "least queueing" in change.held


def test_no_occupancy_is_no_evidence() -> None:
    at_target = tune([queue(0.95, 0.3, p50=None)])
    below = tune([queue(0.6, 0.12, offered=1.0, p50=None)])
    assert at_target.held is not None
    assert "no occupancy" in at_target.held
    assert below.held is not None
    assert "no occupancy" in below.held


def test_no_change_inside_the_hysteresis_band() -> None:
    # K-limited at 0.84 (below 0.85): wanted 0.9 / 0.84 = 1.0714, 7.1 % < 10 %.
    change = tune([queue(0.84, 0.2, offered=1.0)])
    assert change.proposed == 1.0
    assert change.held is not None
    assert "hysteresis" in change.held


def test_no_marking_is_no_evidence() -> None:
    # Utilisation 0.3 but mark fraction 0.005 < 1 %: the threshold is not what limits it.
    change = tune([queue(0.3, 0.005, offered=1.0)])
    assert not change.applies
    assert change.held is not None
    assert "no port marks" in change.held
    assert change.evidence.inputs["opinion"] is False


def test_only_marking_ports_count() -> None:
    # Ethernet0 marks at 0.6 utilisation, Ethernet4 idles unmarked at 0.1: the reading is the
    # marking port's, as in the first test, so lambda goes to 1.25 again.
    queues = [queue(0.6, 0.12, offered=1.0), queue(0.1, 0.0, offered=0.1, port="Ethernet4")]
    change = tune(queues)
    assert change.proposed == 1.25
    assert change.evidence.inputs["ports_marking"] == 1


def test_no_measurement_no_verdict() -> None:
    empty = QueueSummary("leaf1", "Ethernet0", "storage", 25)
    assert tune_lambda(GROUP, [empty], BOUNDS, now_s=0, last_changed={}, policy=POLICY) is None


def test_a_strict_class_keeps_the_standard_threshold_as_floor_and_ceiling() -> None:
    # STRICT (no weight): floor = ceiling = K = 156 250 B at lambda 1.25 (MQ-ECN §4).
    group = replace(GROUP, weight=None, total_weight=None)
    change = tune([queue(0.6, 0.12, offered=1.0)], group)
    assert change.related["agent_floor_bytes"] == change.related["agent_ceiling_bytes"] == 156_250


def test_oscillating_utilisation_changes_at_most_once_per_interval() -> None:
    # Every minute for two hours the port flips between K-limited (carried 0.5 of an offered
    # 1.0, queue underflowing) and a standing queue at full utilisation. Every minute asks
    # for a change, but with a 900 s interval there can be at most 7200 / 900 = 8 changes,
    # each at least 900 s after the previous one.
    current, times, changed_at = 1.0, dict[str, float](), list[float]()
    for minute in range(120):
        now = minute * 60.0
        if minute % 2 == 0:
            reading = queue(0.5, 0.2, offered=1.0, p50=1_000)
        else:
            reading = queue(1.0, 0.2, offered=1.0, p50=500_000)
        group = replace(GROUP, current_lambda=current)
        change = tune_lambda(group, [reading], BOUNDS, now_s=now, last_changed=times, policy=POLICY)
        assert change is not None
        if change.applies:
            assert isinstance(change.proposed, float)
            current = change.proposed
            times[change.parameter] = now
            changed_at.append(now)
    assert 1 <= len(changed_at) <= 8
    assert all(b - a >= 900 for a, b in itertools.pairwise(changed_at))
    assert BOUNDS.lambda_min <= current <= BOUNDS.lambda_max
