"""DWRR weight normalisation into SONiC's 1..100."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.scheduling import normalise_weights


def test_weights_that_fit_are_unchanged():
    # The stock SONiC template's 40/30/25/5 already lies in 1..100.
    weights = {"gold": 40, "silver": 30, "bronze": 25, "scavenger": 5}
    assert normalise_weights(weights) == weights


def test_largest_becomes_100_and_exact_ratios_survive():
    # 200 : 400 : 1000 x (100 / 1000) = 20 : 40 : 100, exactly.
    assert normalise_weights({"a": 200, "b": 400, "c": 1000}) == {"a": 20, "b": 40, "c": 100}


def test_rounds_half_up():
    # s = 100 / 200 = 0.5. 5 -> 2.5 rounds half-up to 3 (Python's round() would give 2);
    # 1 -> 0.5 rounds half-up to 1; 200 -> 100.
    assert normalise_weights({"a": 5, "b": 200}) == {"a": 3, "b": 100}
    assert normalise_weights({"a": 1, "b": 200}) == {"a": 1, "b": 100}


def test_tiny_weight_is_raised_to_one():
    # 1 : 1000 -> 0.1 would round to 0; SONiC has no weight 0, so it becomes 1.
    assert normalise_weights({"bulk": 1, "web": 1000}) == {"bulk": 1, "web": 100}


def test_uneven_ratio_by_hand():
    # 333 : 1000 : 667 with max 1000 -> 33.3, 100, 66.7 -> 33, 100, 67.
    assert normalise_weights({"a": 333, "b": 1000, "c": 667}) == {"a": 33, "b": 100, "c": 67}


def test_empty_is_empty():
    assert normalise_weights({}) == {}


@pytest.mark.parametrize("bad", [0, -3])
def test_rejects_non_positive_weights_naming_the_queue(bad):
    with pytest.raises(IntentInvalid) as caught:
        normalise_weights({"ok": 5, "broken": bad})
    assert caught.value.problems[0].path == "weights[broken]"


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(1, 10**9), min_size=1))
def test_result_in_range_and_within_error_bound(weights):
    result = normalise_weights(weights)
    assert result.keys() == weights.keys()
    assert all(1 <= w <= 100 for w in result.values())
    largest = max(weights.values())
    if largest <= 100:
        assert result == weights
        return
    assert max(result.values()) == 100
    for name, weight in weights.items():
        exact = weight * 100 / largest
        # documented bound: 0.5 from rounding, below 1 when raised from < 0.5 to 1.
        assert abs(result[name] - exact) <= (0.5 + 1e-9 if exact >= 0.5 else 1.0)


@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=8))
def test_order_of_weights_is_preserved(values):
    weights = {str(i): v for i, v in enumerate(values)}
    result = normalise_weights(weights)
    for a in weights:
        for b in weights:
            if weights[a] <= weights[b]:
                assert result[a] <= result[b]
