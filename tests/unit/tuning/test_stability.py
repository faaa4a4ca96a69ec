"""The stability guards, worked by hand (policy: band 10 %, interval 900 s, step 25 %)."""

from __future__ import annotations

from controller.tuning.stability import StabilityPolicy, guard

POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def test_no_change_inside_the_hysteresis_band() -> None:
    # 100 -> 105 is 5 %, under the 10 % band: the current value stays.
    result = guard("p", 100.0, 105.0, now_s=10_000, last_changed={}, policy=POLICY)
    assert result.value == 100.0
    assert result.held is not None
    assert "hysteresis" in result.held


def test_the_band_edge_itself_is_a_change() -> None:
    # 100 -> 110 is exactly 10 %: not inside the band, and within the 25 % step.
    result = guard("p", 100.0, 110.0, now_s=10_000, last_changed={}, policy=POLICY)
    assert (result.value, result.held, result.bounds) == (110.0, None, ())


def test_max_step_limits_a_large_move() -> None:
    # 100 -> 200 wants +100 %; the step allows 25 % of 100 = 25: 125.
    result = guard("p", 100.0, 200.0, now_s=10_000, last_changed={"p": 0.0}, policy=POLICY)
    assert result.value == 125.0
    assert result.held is None
    assert result.bounds
    assert "max step" in result.bounds[0]
    # Downwards alike: 100 -> 10 gives 75.
    down = guard("p", 100.0, 10.0, now_s=10_000, last_changed={}, policy=POLICY)
    assert down.value == 75.0


def test_minimum_interval_holds_a_recent_parameter_only() -> None:
    # Changed at 9 400, now 10 000: 600 s < 900 s, held; another parameter is free.
    times = {"p": 9_400.0}
    assert guard("p", 100.0, 200.0, now_s=10_000, last_changed=times, policy=POLICY).held
    assert guard("q", 100.0, 200.0, now_s=10_000, last_changed=times, policy=POLICY).held is None
    # At exactly 900 s the interval has passed.
    assert guard("p", 100.0, 200.0, now_s=10_300, last_changed=times, policy=POLICY).held is None


def test_integer_steps_round_towards_the_current_value() -> None:
    # 30 -> 12: the step allows 30 - 7.5 = 22.5, rounded towards 30: 23 (never past the step).
    result = guard("w", 30, 12, now_s=0, last_changed={}, policy=POLICY, integer=True)
    assert result.value == 23.0
    # 70 -> 88: 70 + 17.5 = 87.5, rounded towards 70: 87.
    assert guard("w", 70, 88, now_s=0, last_changed={}, policy=POLICY, integer=True).value == 87.0
