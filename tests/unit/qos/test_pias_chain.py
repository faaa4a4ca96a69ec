"""PIAS thresholds from the paper's M/M/1-chain formulation (NSDI'15 §4.2, ToN'17 §IV-B),
checked by hand on a small CDF and then against the thresholds the PIAS authors published
(HKUST-SING/PIAS-NS2 scripts/run_pias_dctcp.py, run_pias_vl2.py). The published table is not
reproduced within 2x everywhere; these tests pin the account of docs/algorithms.md §6
("The paper's formulation against the published table") so it fails if either side moves."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.pias import FlowSizeCdf, load_workload
from controller.qos.pias_chain import chain_fct, chain_thresholds, stage_sojourn

PKT = 1460
PUBLISHED = Path(__file__).with_name("pias_thresholds_published.csv")
# Half the flows 1000 B, half 3000 B: E[S] = 2000 B.
TWO_SIZES = FlowSizeCdf(points=((1000, 0.0), (1000, 0.5), (3000, 0.5), (3000, 1.0)))


def published(workload: str) -> list[tuple[float, list[int]]]:
    """(load, alpha_1..alpha_7 in packets of 1460 B) for one workload."""
    with PUBLISHED.open(newline="") as handle:
        return [
            (float(row["load"]), [int(row[f"a{i}"]) for i in range(1, 8)])
            for row in csv.DictReader(handle)
            if row["workload"] == workload
        ]


def ratios(workload: str, load: float, alphas: list[int]) -> list[float]:
    ours = chain_thresholds(load_workload(workload), load, 8)
    return [mine / PKT / theirs for mine, theirs in zip(ours, alphas, strict=True)]


# --- the formulation by hand -------------------------------------------------------------------


def test_two_queue_chain_by_hand():
    # alpha = 1500 B, rho = 0.5: every flow sends min(S, 1500) = 1000 or 1500 in queue 1,
    # E = 1250, sigma_1 = 0.5 x 1250 / 2000 = 0.3125 -> T_1 = 1 / 0.6875; queue 2 holds all the
    # load: T_2 = 1 / 0.5 = 2. theta_1 = F(1500) = 0.5 (the 1000 B flows), theta_2 = 0.5.
    t1, t2 = 1 / 0.6875, 2.0
    assert chain_fct(TWO_SIZES, 0.5, [1500]) == pytest.approx(0.5 * t1 + 0.5 * (t1 + t2))
    assert stage_sojourn(TWO_SIZES, 0.5, 1500) == pytest.approx(t1)


def test_one_queue_is_mm1():
    assert chain_fct(load_workload("websearch"), 0.6, []) == pytest.approx(1 / 0.4)
    assert chain_thresholds(load_workload("websearch"), 0.6, 1) == []


def test_double_sum_equals_the_regrouped_chain():
    # sum_l theta_l sum_{m<=l} T_m = sum_m (1 - F(alpha_{m-1})) T_m(alpha_m)
    cdf = load_workload("datamining")
    alphas = [p * PKT for p in (805, 1106, 1401, 10693, 11970, 21162, 22272)]
    edges = [0.0, *alphas]
    regrouped = sum(
        (1 - cdf.cdf(low)) * stage_sojourn(cdf, 0.5, high)
        for low, high in zip(edges, [*alphas, float("inf")], strict=True)
    )
    assert chain_fct(cdf, 0.5, alphas) == pytest.approx(regrouped)


@pytest.mark.parametrize(("load", "n_queues"), [(0.0, 8), (1.0, 8), (0.5, 0), (0.5, 9)])
def test_bad_arguments_are_refused(load, n_queues):
    with pytest.raises(IntentInvalid):
        chain_thresholds(load_workload("websearch"), load, n_queues)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(["websearch", "datamining"]),
    load=st.sampled_from([0.5, 0.7, 0.9]),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7, unique=True),
)
def test_no_other_thresholds_do_better(name, load, fractions):
    cdf = load_workload(name)
    low, high = cdf.min_bytes, cdf.max_bytes
    others = sorted(low * (high / low) ** f for f in fractions)
    assume(all(a < b for a, b in itertools.pairwise(others)) and others[-1] < high)
    best = chain_thresholds(cdf, load, 8)
    assert chain_fct(cdf, load, best) <= chain_fct(cdf, load, others) * (1 + 1e-9)


# --- against the published table ----------------------------------------------------------------


@pytest.mark.parametrize(("load", "alphas"), published("websearch"))
def test_websearch_first_threshold_within_2x_the_others_4_to_14x_above(load, alphas):
    first, *rest = ratios("websearch", load, alphas)
    assert 0.5 <= first <= 2.0
    assert all(4.0 <= r <= 14.0 for r in rest), rest


@pytest.mark.parametrize(("load", "alphas"), published("datamining"))
def test_datamining_no_threshold_within_2x(load, alphas):
    first, *rest = ratios("datamining", load, alphas)
    assert 2.0 < first <= 3.0
    assert all(20.0 <= r <= 500.0 for r in rest), rest


@pytest.mark.parametrize(("load", "alphas"), [r for r in published("websearch") if r[0] <= 0.7])
def test_published_websearch_loses_to_one_queue_under_the_formulation(load, alphas):
    # Why the table cannot be this objective's optimum: at these loads it scores worse than
    # not demoting at all (one FIFO queue, 1 / (1 - rho)).
    cdf = load_workload("websearch")
    assert chain_fct(cdf, load, [a * PKT for a in alphas]) > 1 / (1 - load)


@pytest.mark.parametrize(("load", "alphas"), published("datamining"))
def test_published_datamining_tail_thresholds_are_not_pinned_by_the_objective(load, alphas):
    # alpha_4..alpha_7 anywhere in the public genetic search's initial ranges (packets:
    # 2500-12500, 5000-15000, 10000-20000, 20000-40000) moves the objective by under 4 %:
    # the flat tail of the data-mining CDF leaves them wherever a search starts them.
    cdf = load_workload("datamining")
    base = chain_fct(cdf, load, [a * PKT for a in alphas])
    for tail in ([2501, 5001, 10001, 20001], [12500, 15000, 20000, 40000]):
        moved = chain_fct(cdf, load, [a * PKT for a in [*alphas[:3], *tail]])
        assert abs(moved / base - 1) < 0.04
