"""Buffer alpha (dynamic_th), per sonic-buffer-profile.yang and SAI saibuffer.h."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.buffers import (
    alpha_of,
    dynaq_bounds,
    select_dynamic_th,
    steady_share,
)
from controller.qos.ecn import ThresholdBounds


@pytest.mark.parametrize(
    ("dynamic_th", "alpha"),
    [(0, 1.0), (3, 8.0), (-3, 0.125), (-8, 1 / 256), (7, 128.0)],
)
def test_alpha_is_two_to_the_dynamic_th(dynamic_th, alpha):
    assert alpha_of(dynamic_th) == alpha


@pytest.mark.parametrize("bad", [-9, 8, 1.5, True])
def test_alpha_rejects_out_of_range(bad):
    with pytest.raises(IntentInvalid) as caught:
        alpha_of(bad)
    assert caught.value.problems[0].path == "dynamic_th"


def test_steady_share_by_hand():
    # one queue: alpha/(1+alpha): 1/2 at alpha 1, 8/9 at alpha 8, (1/8)/(9/8) = 1/9 at 1/8.
    assert steady_share(1.0, 1) == pytest.approx(0.5)
    assert steady_share(8.0, 1) == pytest.approx(8 / 9)
    assert steady_share(0.125, 1) == pytest.approx(1 / 9)
    # four queues at alpha 2: 2 / (1 + 8) = 2/9 each, 8/9 of the pool in use.
    assert steady_share(2.0, 4) == pytest.approx(2 / 9)


def test_steady_share_is_a_fixed_point_of_the_dt_rule():
    # q = alpha x (B - N q) must hold for q = share x B.
    alpha, n, pool = 4.0, 3, 1.0
    q = steady_share(alpha, n) * pool
    assert q == pytest.approx(alpha * (pool - n * q))


@pytest.mark.parametrize(
    ("n", "target", "expected"),
    [
        (1, 0.5, 0),  # th 0 -> 1/2 fits; th 1 -> 2/3 does not
        (1, 0.89, 3),  # th 3 -> 8/9 = 0.8889 fits; th 4 -> 16/17 = 0.941 does not
        (1, 0.6, 0),  # 1/2 fits, 2/3 does not
        (4, 0.2, 0),  # alpha 1: 1/5 = 0.2 exactly fits; alpha 2: 2/9 = 0.222 does not
        (1, 1.0, 6),  # everything fits: the top of the portable range
    ],
)
def test_select_dynamic_th_by_hand(n, target, expected):
    assert select_dynamic_th(n, target) == expected


def test_select_dynamic_th_can_use_full_range():
    # 128/129 = 0.99225 <= 0.995 at dynamic_th 7 once the caller widens the range.
    assert select_dynamic_th(1, 0.995, lowest=-8, highest=7) == 7


def test_select_dynamic_th_refuses_impossible_target():
    # lowest portable alpha 2^-7: share 1/129 = 0.00775 > 0.001.
    with pytest.raises(IntentInvalid) as caught:
        select_dynamic_th(1, 0.001)
    assert caught.value.problems[0].path == "max_single_queue_share"


@given(n=st.integers(1, 64), target=st.floats(0.01, 1.0))
def test_selected_is_the_largest_that_fits(n, target):
    try:
        chosen = select_dynamic_th(n, target)
    except IntentInvalid:
        assert steady_share(alpha_of(-7), n) > target
        return
    assert steady_share(alpha_of(chosen), n) <= target + 1e-12
    if chosen < 6:
        assert steady_share(alpha_of(chosen + 1), n) > target


# --- DynaQ bounds from the port buffer (DynaQ slides, Kim and Lee) --------------------------


def test_dynaq_bounds_weighted_share_to_whole_buffer():
    # The slides' 10 Gb/s port buffer, 192 KB, weights 4:3:2:1: 192 000 x 4 / 10 = 76 800 B.
    assert dynaq_bounds(192_000, 4, 10, 1500) == ThresholdBounds(76_800, 192_000, 76_800)
    # 192 000 x 1 / 10 = 19 200 B.
    assert dynaq_bounds(192_000, 1, 10, 1500) == ThresholdBounds(19_200, 192_000, 19_200)


def test_dynaq_bounds_do_not_depend_on_k_so_a_deep_bdp_fits():
    # 1 ms flows at 10 Gb/s need a 1.25 MB BDP; with 2 MB of buffer a lone queue may take it
    # all, where K for a 100 us fabric (125 000 B) would cap it.
    assert dynaq_bounds(2_000_000, 1, 4, 1500).ceiling_bytes == 2_000_000


def test_dynaq_bounds_floor_one_mtu_and_strict_queue():
    # 10 000 x 1 / 100 = 100 B, raised to one MTU.
    assert dynaq_bounds(10_000, 1, 100, 1500) == ThresholdBounds(1500, 10_000, 1500)
    assert dynaq_bounds(10_000, 0, 10, 1500) == ThresholdBounds(1500, 10_000, 10_000)
    with pytest.raises(IntentInvalid):
        dynaq_bounds(10_000, 11, 10, 1500)
