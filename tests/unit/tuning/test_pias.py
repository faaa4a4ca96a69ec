"""PIAS drift by Kolmogorov-Smirnov distance, worked by hand against the websearch CDF.

websearch (packets of 1460 B): F(8 760) = 0.15, F(18 980) = 0.2, F(48 180) = 0.4,
F(77 380) = 0.53, F(1 946 180) = 0.8, F(4 866 180) = 0.9, linear in between.
"""

from __future__ import annotations

import math

from controller.qos.pias import FlowSizeCdf, demotion_thresholds, load_workload
from controller.tuning.pias import PiasInUse, ks_distance, measured_cdf, tune_pias
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import FlowSizeSample

IN_USE = PiasInUse("rpc", "websearch", 0.6, 2)
POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)
# 1000 flows, mostly small: half <= 10 kB, 90 % <= 50 kB, all <= 2 MB.
SMALL = FlowSizeSample(
    "rpc", ((10_000, 500), (50_000, 900), (2_000_000, 1000), (math.inf, 1000)), load=0.5
)


def test_ks_distance_by_hand() -> None:
    # At 10 000: websearch 0.15 + 0.05 x 1 240 / 10 220 = 0.15607, measured 0.5: 0.34393.
    # At 50 000: 0.4 + 0.13 x 1 820 / 29 200 = 0.40810, measured 0.9: 0.49190 (the max).
    # At 2 000 000: 0.8 + 0.1 x 53 820 / 2 920 000 = 0.80184, measured 1.0: 0.19816.
    assert math.isclose(ks_distance(SMALL, load_workload("websearch")), 0.49190, abs_tol=1e-5)


def test_drift_re_derives_the_thresholds_from_the_measured_cdf() -> None:
    change = tune_pias(
        IN_USE, SMALL, ks_threshold=0.1, min_flows=1000, now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert change.applies
    # In use: websearch at load 0.6, two queues: 4 517 081 B (tests/unit/qos/test_pias.py).
    assert change.current == (4_517_081,)
    # New: the measured CDF (10 kB: 0.5, 50 kB: 0.9, 2 MB: 1) at the measured load 0.5.
    # E[S] = 10 000 x 1 + 40 000 x 0.3 + 1 950 000 x 0.05 = 119 500 B; the threshold
    # carries sigma_1 / rho = (1 - 0.5^0.5) / 0.5 = 0.5858 of it, 70 000 B, which the
    # truncated mean reaches in the last segment: 22 000 B at 50 kB, then 1 - F falls from
    # 0.1 to 0 over 1.95 MB, so t bytes further add 0.1 t - t^2 / 39e6. 22 000 + 0.1 t -
    # t^2 / 39e6 = 70 001 -> t^2 - 3.9e6 t + 1.872e12 = 0 -> t = (3.9e6 - 2.7789e6) / 2
    # = 560 575, threshold ~ 610 575 B.
    expected = demotion_thresholds(
        FlowSizeCdf(((10_000, 0.5), (50_000, 0.9), (2_000_000, 1.0))), 0.5, 2
    )
    assert change.proposed == tuple(expected)
    (threshold,) = expected
    assert 610_000 < threshold < 611_000
    assert change.evidence.outputs["nearest_workload"] in ("cache", "websearch", "datamining",
                                                           "hadoop")  # fmt: skip


def test_no_change_below_the_ks_threshold() -> None:
    # The websearch CDF sampled at its own points: D = 0 (up to rounding of the counts).
    cdf = load_workload("websearch")
    edges = sorted({size for size, _ in cdf.points})
    same = FlowSizeSample("rpc", tuple((e, round(cdf.cdf(e) * 5000)) for e in edges))
    change = tune_pias(
        IN_USE, same, ks_threshold=0.1, min_flows=1000, now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert not change.applies
    assert change.held is not None
    assert "no drift" in change.held


def test_too_few_flows_is_no_evidence() -> None:
    few = FlowSizeSample("rpc", ((10_000, 50), (math.inf, 100)))
    change = tune_pias(
        IN_USE, few, ks_threshold=0.1, min_flows=1000, now_s=0, last_changed={}, policy=POLICY
    )
    assert change is not None
    assert change.held is not None
    assert "fewer than 1000" in change.held


def test_minimum_interval_holds_a_drift() -> None:
    change = tune_pias(
        IN_USE, SMALL, ks_threshold=0.1, min_flows=1000, now_s=1000,
        last_changed={"pias/rpc": 500}, policy=POLICY,
    )  # fmt: skip
    assert change is not None
    assert change.held is not None
    assert "minimum interval" in change.held


def test_flows_above_the_last_finite_bucket_count_at_its_edge() -> None:
    sample = FlowSizeSample("rpc", ((1_000, 10), (100_000, 90), (math.inf, 100)))
    assert measured_cdf(sample).points == ((1_000, 0.1), (100_000, 0.9), (100_000, 1.0))


def test_a_histogram_without_finite_buckets_is_no_evidence() -> None:
    only_inf = FlowSizeSample("rpc", ((math.inf, 5000),))
    assert (
        tune_pias(
            IN_USE, only_inf, ks_threshold=0.1, min_flows=1, now_s=0, last_changed={},
            policy=POLICY,
        )
        is None
    )  # fmt: skip


def test_one_finite_bucket_holding_every_flow_is_a_step_at_its_edge() -> None:
    sample = FlowSizeSample("rpc", ((5_000, 100), (math.inf, 100)))
    assert measured_cdf(sample).points == ((5_000, 1.0), (5_000, 1.0))


def test_thresholds_in_force_are_the_current_ones_and_not_proposed_again() -> None:
    first = tune_pias(
        IN_USE, SMALL, ks_threshold=0.1, min_flows=1000, now_s=0, last_changed={}, policy=POLICY
    )
    assert first is not None
    assert isinstance(first.proposed, tuple)
    # The intent now carries them (pias.thresholds_bytes): the same sizes, long after the
    # minimum interval, still drift from websearch but ask for what already runs.
    tuned = PiasInUse("rpc", "websearch", 0.6, 2, first.proposed)
    again = tune_pias(
        tuned, SMALL, ks_threshold=0.1, min_flows=1000, now_s=1e6, last_changed={}, policy=POLICY
    )
    assert again is not None
    assert again.current == first.proposed
    assert not again.applies
    assert again.held == "the measured sizes' thresholds are already in force"
