"""ECN thresholds, checked against numbers worked by hand from MQ-ECN, NSDI 2016."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.ecn import (
    ThresholdBounds,
    mqecn_bounds,
    per_queue_minimum_bytes,
    standard_threshold_bytes,
)

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
