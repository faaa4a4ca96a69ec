"""PIAS demotion thresholds: the model worked by hand on small CDFs, optimality checked as
a property, and the comparison with the published thresholds in data/pias_thresholds.csv."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.pias import (
    WORKLOADS,
    FlowSizeCdf,
    demotion_thresholds,
    load_workload,
    optimal_load_split,
    size_at_truncated_mean,
)
from tests.support.pias_model import expected_fct

PKT = 1460
PUBLISHED = Path(__file__).with_name("pias_thresholds_published.csv")


def published_rows() -> list[tuple[str, float, list[int]]]:
    """The PIAS ns-2 thresholds (packets of 1460 B) from the PIAS-NS2 scripts
    (HKUST-SING/PIAS-NS2), kept next to this test."""
    with PUBLISHED.open(newline="") as handle:
        return [
            (row["workload"], float(row["load"]), [int(row[f"a{i}"]) * PKT for i in range(1, 8)])
            for row in csv.DictReader(handle)
        ]


# Half the flows are 1000 B, half 3000 B: E[S] = 2000 B.
TWO_SIZES = FlowSizeCdf(points=((1000, 0.0), (1000, 0.5), (3000, 0.5), (3000, 1.0)))


# --- the CDF ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mean_packets"),
    # workloads/README.md: means under linear interpolation 1141 / 5117 / 624 / 2832 packets.
    [("websearch", 1141), ("datamining", 5117), ("cache", 624), ("hadoop", 2832)],
)
def test_workload_means_match_the_published_means(name, mean_packets):
    assert load_workload(name).mean_bytes() / PKT == pytest.approx(mean_packets, abs=0.5)


def test_websearch_cdf_by_hand():
    cdf = load_workload("websearch")
    assert cdf.cdf(5 * PKT) == 0.0  # below the first point
    assert cdf.cdf(6 * PKT) == 0.15  # the step at 6 packets counts its upper value
    # between (6, 0.15) and (13, 0.2): 0.15 + 0.05 x 3.5 / 7 = 0.175
    assert cdf.cdf(9.5 * PKT) == pytest.approx(0.175)
    assert cdf.cdf(20000 * PKT) == 1.0
    assert cdf.cdf(10**12) == 1.0


def test_truncated_mean_by_hand():
    # E[min(S, x)]: x itself below 1000; 1000 + 0.5 (x - 1000) between; 2000 at the top.
    assert TWO_SIZES.truncated_mean(400) == 400
    assert TWO_SIZES.truncated_mean(1500) == pytest.approx(1250)
    assert TWO_SIZES.truncated_mean(3000) == pytest.approx(2000)
    assert TWO_SIZES.mean_bytes() == pytest.approx(2000)
    assert size_at_truncated_mean(TWO_SIZES, 1250) == pytest.approx(1500, abs=1e-6)


@pytest.mark.parametrize(
    "points",
    [
        ((1000, 0.0),),  # one point
        ((1000, 0.0), (2000, 0.9)),  # does not reach 1
        ((1000, 0.5), (500, 1.0)),  # size decreases
        ((1000, 0.6), (2000, 0.5), (3000, 1.0)),  # probability decreases
        ((0, 0.0), (2000, 1.0)),  # zero size
    ],
)
def test_bad_cdfs_are_refused(points):
    with pytest.raises(IntentInvalid):
        FlowSizeCdf(points=points)


def test_unknown_workload_is_refused():
    with pytest.raises(IntentInvalid) as caught:
        load_workload("video")
    assert caught.value.problems[0].path == "workload"


# --- the model worked by hand -------------------------------------------------------------------


def test_two_queue_example_by_hand():
    # K = 2, rho = 0.75: sigma_1 = 1 - 0.25^(1/2) = 0.5, so queue 1 carries 0.5 / 0.75 = 2/3
    # of the bytes: E[min(S, a)] = 2/3 x 2000 = 1333.3 -> 1000 + 0.5 (a - 1000) -> a = 1666.7.
    assert optimal_load_split(0.75, 2) == pytest.approx([0.5])
    assert demotion_thresholds(TWO_SIZES, 0.75, 2) == [1667]


def test_expected_fct_matches_per_flow_sum_by_hand():
    # theta form, threshold 1666.67 B, C = 1: queue 1 carries bytes 0..1666.67 of every flow,
    # sigma_1 = 0.75 x 1333.33 / 2000 = 0.5; queue 2 the rest, sigma_2 = 0.75.
    # 1000 B flows (theta_1 = 0.5): 1000 / (1 - 0.5) = 2000.
    # 3000 B flows (theta_2 = 0.5): 1666.67 / 0.5 + 1333.33 / 0.25 = 3333.3 + 5333.3 = 8666.7.
    # mean = (2000 + 8666.7) / 2 = 5333.3, which is also K((1-rho)^(-1/K) - 1) E[S] / rho
    # = 2 x (2 - 1) x 2000 / 0.75 = 5333.3.
    assert expected_fct(TWO_SIZES, 0.75, [5000 / 3]) == pytest.approx(16000 / 3)


def test_single_queue_is_mm1():
    # no thresholds: E[S] / (1 - rho); websearch at 0.5 -> 2 x E[S]; in seconds at 10 Gb/s
    cdf = load_workload("websearch")
    assert expected_fct(cdf, 0.5, []) == pytest.approx(2 * cdf.mean_bytes())
    seconds = expected_fct(cdf, 0.5, [], capacity_bytes_per_s=1.25e9)
    assert seconds == pytest.approx(2 * cdf.mean_bytes() / 1.25e9)


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize("load", [0.3, 0.5, 0.9])
def test_minimum_equals_closed_form(name, load):
    # AM-GM optimum: T_min = K ((1 - rho)^(-1/K) - 1) x E[S] / rho, K = 8.
    cdf = load_workload(name)
    thresholds = demotion_thresholds(cdf, load, 8)
    closed_form = 8 * ((1 - load) ** (-1 / 8) - 1) * cdf.mean_bytes() / load
    assert expected_fct(cdf, load, thresholds) == pytest.approx(closed_form, rel=1e-6)


@pytest.mark.parametrize("name", WORKLOADS)
def test_thresholds_strictly_increase_inside_the_distribution(name):
    cdf = load_workload(name)
    thresholds = demotion_thresholds(cdf, 0.6, 8)
    assert len(thresholds) == 7
    assert all(a < b for a, b in itertools.pairwise(thresholds))
    assert thresholds[0] > 0
    assert thresholds[-1] < cdf.max_bytes


def test_one_queue_has_no_thresholds():
    assert demotion_thresholds(load_workload("cache"), 0.5, 1) == []


@pytest.mark.parametrize(
    ("load", "n_queues", "field"), [(1.0, 8, "load"), (0.0, 8, "load"), (0.5, 9, "n_queues")]
)
def test_bad_arguments_are_refused(load, n_queues, field):
    with pytest.raises(IntentInvalid) as caught:
        demotion_thresholds(load_workload("websearch"), load, n_queues)
    assert caught.value.problems[0].path == field


def test_expected_fct_refuses_unordered_thresholds():
    with pytest.raises(IntentInvalid) as caught:
        expected_fct(TWO_SIZES, 0.5, [1500, 1200])
    assert caught.value.problems[0].path == "thresholds[1]"


# --- optimality as a property ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(WORKLOADS),
    load=st.floats(0.05, 0.95),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7, unique=True),
)
def test_no_other_thresholds_do_better(name, load, fractions):
    cdf = load_workload(name)
    low, high = cdf.min_bytes, cdf.max_bytes
    # any strictly increasing thresholds spread (log-uniformly) over the size range
    others = sorted(low * (high / low) ** f for f in fractions)
    assume(all(a < b for a, b in itertools.pairwise(others)) and others[-1] < high)
    best = demotion_thresholds(cdf, load, 8)
    assert expected_fct(cdf, load, best) <= expected_fct(cdf, load, others) * (1 + 1e-9)


@pytest.mark.parametrize("name", ["websearch", "datamining"])
def test_nudging_any_threshold_does_not_help(name):
    cdf = load_workload(name)
    best = demotion_thresholds(cdf, 0.7, 8)
    base = expected_fct(cdf, 0.7, best)
    for index in range(len(best)):
        for factor in (0.99, 1.01):
            nudged = [float(value) for value in best]
            nudged[index] = best[index] * factor
            assert expected_fct(cdf, 0.7, nudged) >= base * (1 - 1e-9)


def test_thresholds_grow_with_load():
    # sigma_m / rho = (1 - (1 - rho)^(m/K)) / rho grows with rho (1 - (1-rho)^a is convex in rho
    # and 0 at rho = 0), so every threshold is non-decreasing in the load.
    cdf = load_workload("websearch")
    previous = demotion_thresholds(cdf, 0.1, 8)
    for load in (0.3, 0.5, 0.7, 0.9):
        current = demotion_thresholds(cdf, load, 8)
        assert all(c >= p for c, p in zip(current, previous, strict=True))
        previous = current


# --- the published thresholds ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "load", "published"), published_rows())
def test_ours_are_no_worse_than_published_under_the_model(name, load, published):
    cdf = load_workload(name)
    ours = demotion_thresholds(cdf, load, 8)
    assert expected_fct(cdf, load, ours) <= expected_fct(cdf, load, published)


@pytest.mark.parametrize(
    ("name", "load", "published"), [row for row in published_rows() if row[0] == "websearch"]
)
def test_websearch_thresholds_within_an_order_of_magnitude_of_published(name, load, published):
    ours = demotion_thresholds(load_workload(name), load, 8)
    for mine, theirs in zip(ours, published, strict=True):
        assert theirs / 10 <= mine <= theirs * 10
