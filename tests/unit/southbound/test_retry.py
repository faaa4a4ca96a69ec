"""Backoff and jitter with a fake clock and a seeded random source."""

from __future__ import annotations

import random

import pytest

from controller.southbound.retry import RetryPolicy, backoff_delay, run_with_retry


class FakeClock:
    """Records the sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


class FakeTransientError(Exception):
    pass


class FakeRefusalError(Exception):
    pass


def failing(times: int, error: Exception, value: str = "ok"):
    calls = {"n": 0}

    def call() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error
        return value

    return call, calls


def transient(error: BaseException) -> bool:
    return isinstance(error, FakeTransientError)


POLICY = RetryPolicy(attempts=5, base_delay_s=0.1, max_delay_s=0.3, multiplier=2.0)


def test_steps_double_and_are_capped() -> None:
    # unit 1.0 gives the full step: 0.1, 0.2, then 0.4 capped to 0.3, and 0.3 again.
    steps = [backoff_delay(POLICY, n, 1.0) for n in range(4)]
    assert steps == pytest.approx([0.1, 0.2, 0.3, 0.3])
    # unit 0.0 gives half the step: never a retry that fires at once.
    assert [backoff_delay(POLICY, n, 0.0) for n in range(4)] == pytest.approx(
        [0.05, 0.1, 0.15, 0.15]
    )


def test_jittered_delays_follow_the_seeded_draws() -> None:
    clock = FakeClock()
    call, calls = failing(3, FakeTransientError("UNAVAILABLE"))
    result = run_with_retry(
        call, policy=POLICY, is_retryable=transient, sleep=clock.sleep, rand=random.Random(7).random
    )
    assert result == "ok"
    assert calls["n"] == 4  # three failures, then success
    draws = random.Random(7)  # the same seed, drawn again by hand
    u = [draws.random() for _ in range(3)]
    # delay = step/2 + step/2 * u with steps 0.1, 0.2, 0.3 (0.4 capped)
    assert clock.sleeps == pytest.approx([0.05 + 0.05 * u[0], 0.1 + 0.1 * u[1], 0.15 + 0.15 * u[2]])


def test_gives_up_after_the_last_attempt_with_the_last_error() -> None:
    clock = FakeClock()
    error = FakeTransientError("DEADLINE_EXCEEDED")
    call, calls = failing(99, error)
    with pytest.raises(FakeTransientError) as raised:
        run_with_retry(
            call, policy=POLICY, is_retryable=transient, sleep=clock.sleep, rand=lambda: 0.5
        )
    assert raised.value is error
    assert calls["n"] == 5  # attempts
    assert len(clock.sleeps) == 4  # no sleep after the last try


def test_refusals_are_not_retried() -> None:
    clock = FakeClock()
    call, calls = failing(1, FakeRefusalError("INVALID_ARGUMENT"))
    with pytest.raises(FakeRefusalError):
        run_with_retry(
            call, policy=POLICY, is_retryable=transient, sleep=clock.sleep, rand=lambda: 0.5
        )
    assert calls["n"] == 1
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"attempts": 0}, "attempts"),
        ({"base_delay_s": 1.0, "max_delay_s": 0.5}, "max_delay_s"),
        ({"multiplier": 0.5}, "multiplier"),
    ],
)
def test_policy_refuses_nonsense(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
