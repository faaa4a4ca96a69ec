"""ECN thresholds, checked against numbers worked by hand from MQ-ECN, NSDI 2016."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.ecn import (
    ThresholdBounds,
    ewma_round_time,
    idle_decay,
    idle_slot_seconds,
    mqecn_bounds,
    mqecn_threshold_bytes,
    per_queue_minimum_bytes,
    standard_threshold_bytes,
)
from controller.qos.units import gbps_to_bytes_per_s

# --- standard threshold K = C x RTT x lambda (§2, Eq. 1) -------------------------------------


def test_standard_threshold_mqecn_simulation_fabric():
    # §5.2: 10 Gb/s links, base RTT 85.2 us.
    # C = 10e9 / 8 = 1.25e9 B/s; 1.25e9 x 85.2e-6 = 106 500 B at lambda 1.
    assert standard_threshold_bytes(10, 85.2, 1.0) == 106_500


def test_standard_threshold_mqecn_testbed():
    # §5.1: 1 Gb/s, base RTT ~250 us -> 125e6 B/s x 250e-6 s = 31 250 B, the paper's "32 KB".
    assert standard_threshold_bytes(1, 250, 1.0) == 31_250


def test_standard_threshold_lambda_scales_linearly():
    # lambda 0.5 at 10 Gb/s, 100 us: 1.25e9 x 100e-6 x 0.5 = 62 500 B.
    assert standard_threshold_bytes(10, 100, 0.5) == 62_500


def test_standard_threshold_rounds_up_fractions():
    # 1 Gb/s x 1 us = 125 B; lambda 0.01 -> 1.25 B, rounded up to 2 (Eq. 1 is a lower bound).
    assert standard_threshold_bytes(1, 1, 0.01) == 2


@pytest.mark.parametrize(
    ("speed", "rtt", "lam", "field"),
    [(0, 100, 1, "speed_gbps"), (10, -1, 1, "rtt_us"), (10, 100, 0, "ecn_lambda")],
)
def test_standard_threshold_rejects_bad_input(speed, rtt, lam, field):
    with pytest.raises(IntentInvalid) as caught:
        standard_threshold_bytes(speed, rtt, lam)
    assert caught.value.problems[0].path == field


# --- per-queue minimum K_i = w_i / sum(w) x K (§2, Eq. 2) ------------------------------------


def test_per_queue_minimum_testbed_example():
    # §2: standard threshold 16 packets, 8 equal-weight queues -> 2 packets each.
    # With 1500 B packets: 24 000 x 1 / 8 = 3 000 B.
    assert per_queue_minimum_bytes(16 * 1500, 1, 8) == 3_000


def test_per_queue_minimum_simulation_rounds_down():
    # §5.2: K_std 65 packets, 8 queues: 97 500 / 8 = 12 187.5 -> 12 187 B (floor keeps sum <= K).
    assert per_queue_minimum_bytes(65 * 1500, 1, 8) == 12_187


def test_per_queue_minimum_weighted():
    # weights 40/30/25/5 (a stock SONiC template): queue of weight 30 gets 30/100 x 100 000.
    assert per_queue_minimum_bytes(100_000, 30, 100) == 30_000


def test_per_queue_minimum_floor_applies():
    # 32 queues: 97 500 / 32 = 3 046.875 -> 3 046; with 5 000 B floor -> 5 000.
    assert per_queue_minimum_bytes(97_500, 1, 32) == 3_046
    assert per_queue_minimum_bytes(97_500, 1, 32, floor_bytes=5_000) == 5_000


def test_per_queue_minimum_rejects_weight_above_total():
    with pytest.raises(IntentInvalid) as caught:
        per_queue_minimum_bytes(1000, 5, 4)
    assert caught.value.problems[0].path == "weight"


@given(
    k=st.integers(1, 10**8),
    weights=st.lists(st.integers(1, 1000), min_size=1, max_size=8),
)
def test_per_queue_minimums_never_sum_above_k(k, weights):
    total = sum(weights)
    assert sum(per_queue_minimum_bytes(k, w, total) for w in weights) <= k


# --- MQ-ECN bounds ---------------------------------------------------------------------------


def test_mqecn_bounds_simulation_queue():
    # K 65 x 1500 = 97 500 B, 8 equal queues, MTU 1500: minimum 12 187 >= MTU.
    assert mqecn_bounds(97_500, 1, 8, 1500) == ThresholdBounds(
        floor_bytes=12_187, ceiling_bytes=97_500, static_bytes=12_187
    )


def test_mqecn_bounds_floor_is_at_least_one_mtu():
    # Testbed-sized K 32 000 B over 32 equal queues = 1 000 B < MTU 1 500 -> floor 1 500.
    assert mqecn_bounds(32_000, 1, 32, 1500).floor_bytes == 1_500


def test_mqecn_bounds_ceiling_raised_when_k_below_mtu():
    # K 1 000 B < MTU 9 000 B: floor 9 000, ceiling raised to 9 000 so floor <= ceiling.
    assert mqecn_bounds(1_000, 1, 2, 9000) == ThresholdBounds(9_000, 9_000, 9_000)


@given(
    k=st.integers(1, 10**7),
    weight=st.integers(1, 100),
    extra=st.integers(0, 700),
    mtu=st.integers(1, 9216),
)
def test_mqecn_bounds_are_ordered(k, weight, extra, mtu):
    bounds = mqecn_bounds(k, weight, weight + extra, mtu)
    assert mtu <= bounds.floor_bytes <= bounds.static_bytes <= bounds.ceiling_bytes


# --- MQ-ECN dynamic threshold (§3.2, Eq. 5) --------------------------------------------------

TESTBED_C = 125e6  # 1 Gb/s in bytes/s
TESTBED_K = 32_000  # the testbed's "32 KB" taken as 32 000 B for round numbers
QUANTUM = 1500  # §5.1: the quantum of each queue is 1 MTU


@pytest.mark.parametrize(
    ("busy_queues", "expected"),
    [
        # T_round = busy x 1500 / 125e6; quantum / T_round = C / busy; K_i = K / busy.
        (4, 8_000),  # 48 us round
        (2, 16_000),  # 24 us round
        (1, 32_000),  # 12 us round: a queue alone gets the standard threshold
    ],
)
def test_mqecn_threshold_follows_fair_share(busy_queues, expected):
    t_round = busy_queues * QUANTUM / TESTBED_C
    assert mqecn_threshold_bytes(QUANTUM, t_round, TESTBED_C, TESTBED_K) == expected


def test_mqecn_threshold_caps_at_capacity():
    # Under-estimated round 6 us: quantum / T_round = 250e6 B/s > C -> min(., C) / C = 1 -> K.
    assert mqecn_threshold_bytes(QUANTUM, 6e-6, TESTBED_C, TESTBED_K) == TESTBED_K


def test_mqecn_threshold_without_estimate_is_k():
    assert mqecn_threshold_bytes(QUANTUM, 0.0, TESTBED_C, TESTBED_K) == TESTBED_K


def test_mqecn_threshold_equals_per_queue_minimum_when_all_busy():
    # 8 equal queues at 10 Gb/s, all busy: T_round = 8 x 1500 / 1.25e9 = 9.6 us.
    c = gbps_to_bytes_per_s(10)
    at_all_busy = mqecn_threshold_bytes(1500, 8 * 1500 / c, c, 97_500)
    assert at_all_busy == per_queue_minimum_bytes(97_500, 1, 8) == 12_187


def test_ewma_round_time_by_hand():
    # 0.75 x 48 us + 0.25 x 24 us = 36 + 6 = 42 us.
    assert ewma_round_time(48e-6, 24e-6) == pytest.approx(42e-6, rel=1e-12)
    # beta 0.5: 0.5 x 10 + 0.5 x 20 = 15.
    assert ewma_round_time(10.0, 20.0, beta=0.5) == pytest.approx(15.0)


def test_ewma_round_time_rejects_beta_of_one():
    with pytest.raises(IntentInvalid):
        ewma_round_time(1.0, 2.0, beta=1.0)


def test_idle_slot_matches_reference_defaults():
    # 1500 B at 10 Gb/s = 1500 / 1.25e9 = 1.2 us (ns-2); at 1 Gb/s = 12 us (Linux qdisc).
    assert idle_slot_seconds(1500, gbps_to_bytes_per_s(10)) == pytest.approx(1.2e-6)
    assert idle_slot_seconds(1500, gbps_to_bytes_per_s(1)) == pytest.approx(12e-6)


def test_idle_decay_counts_whole_slots():
    # 3.6 us idle / 1.2 us slots = 3 slots: 40 us x 0.75^3 = 40 x 0.421875 = 16.875 us.
    assert idle_decay(40e-6, 3.6e-6, 1.2e-6) == pytest.approx(16.875e-6)
    # 1.1 us idle is not yet one slot: unchanged.
    assert idle_decay(40e-6, 1.1e-6, 1.2e-6) == pytest.approx(40e-6)


@given(
    t_round=st.floats(1e-7, 1e-2),
    idle_a=st.floats(0, 1e-3),
    idle_b=st.floats(0, 1e-3),
)
def test_idle_decay_never_grows_and_longer_idle_decays_more(t_round, idle_a, idle_b):
    short, long_ = sorted((idle_a, idle_b))
    decayed_short = idle_decay(t_round, short, 1.2e-6)
    decayed_long = idle_decay(t_round, long_, 1.2e-6)
    assert decayed_long <= decayed_short <= t_round
