"""Retries with exponential backoff and jitter. Pure: the clock's sleep and the random source
are passed in, so a test replays a run exactly with a seeded ``random.Random``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all (1 = no retry). Before retry ``n`` (0-based) the step is
    ``min(max_delay_s, base_delay_s * multiplier**n)``; the delay is half of it plus a random
    part of the other half ("equal jitter")."""

    attempts: int = 4
    base_delay_s: float = 0.1
    max_delay_s: float = 2.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < self.base_delay_s:
            raise ValueError("need 0 <= base_delay_s <= max_delay_s")
        if self.multiplier < 1:
            raise ValueError("multiplier must be at least 1")


def backoff_delay(policy: RetryPolicy, retry_index: int, unit: float) -> float:
    """Seconds to wait before retry ``retry_index`` given ``unit`` drawn from [0, 1).

    Why jitter: after a switch or a fleet server restarts, hundreds of sessions would
    otherwise retry in lockstep and knock it over again. Why only half random: a retry that
    fires almost at once (full jitter can draw ~0) learns nothing new about the switch."""
    step = min(policy.max_delay_s, policy.base_delay_s * policy.multiplier**retry_index)
    return step / 2 + (step / 2) * unit


def run_with_retry(
    call: Callable[[], T],
    *,
    policy: RetryPolicy,
    is_retryable: Callable[[BaseException], bool],
    sleep: Callable[[float], None],
    rand: Callable[[], float],
) -> T:
    """``call()`` until it returns, raises a non-retryable error, or runs out of attempts
    (then the last error is raised as it was)."""
    for retry_index in range(policy.attempts):
        try:
            return call()
        except Exception as error:
            if not is_retryable(error) or retry_index == policy.attempts - 1:
                raise
        sleep(backoff_delay(policy, retry_index, rand()))
    raise AssertionError("unreachable: the last attempt returns or raises")
