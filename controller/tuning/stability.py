"""The guards that keep the tuner from flapping, applied to every numeric change.

* Hysteresis: a new value within ``hysteresis_pct`` of the current one is not proposed (the
  measurement's noise must not move the config).
* Minimum interval: a parameter changed less than ``min_interval_s`` ago is held, so
  oscillating inputs give at most one change per interval.
* Maximum step: one change moves a value by at most ``max_step_pct`` of it; the rest waits for
  the next interval, when the telemetry has seen the effect of this step.

Time is passed in (``now_s``, Unix seconds); nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from controller.intent.models import Tuning


@dataclass(frozen=True, slots=True)
class StabilityPolicy:
    hysteresis_pct: float = 10.0
    min_interval_s: float = 900.0
    max_step_pct: float = 25.0

    @classmethod
    def from_intent(cls, tuning: Tuning) -> StabilityPolicy:
        return cls(tuning.hysteresis_pct, tuning.min_interval_s, tuning.max_step_pct)


@dataclass(frozen=True, slots=True)
class Guarded:
    """The value after the guards; ``held`` says why the current value stays (None: it may
    change); ``bounds`` lists the guards that moved the value."""

    value: float
    held: str | None
    bounds: tuple[str, ...]


# When each parameter last changed (Unix seconds), from the stored tuner history.
ChangeTimes = Mapping[str, float]


def guard(
    parameter: str,
    current: float,
    wanted: float,
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
    integer: bool = False,
) -> Guarded:
    """Apply hysteresis, the minimum interval and the maximum step to one proposed value.

    Worked example (policy 10 %, 900 s, 25 %): current 100, wanted 105 -> held (5 % < 10 %);
    wanted 200, last change 1000 s ago -> 125 (the 25 % step); wanted 200, last change 60 s
    ago -> held (60 s < 900 s).
    """
    if wanted == current:
        return Guarded(current, "no change", ())
    relative_pct = _relative_pct(current, wanted)
    if relative_pct < policy.hysteresis_pct:
        return Guarded(
            current,
            f"inside the hysteresis band ({relative_pct:.1f}% < {policy.hysteresis_pct:g}%)",
            (),
        )
    since = last_changed.get(parameter)
    if since is not None and now_s - since < policy.min_interval_s:
        return Guarded(
            current,
            f"changed {now_s - since:.0f} s ago, minimum interval {policy.min_interval_s:g} s",
            (),
        )
    value, bounds = _limit_step(current, wanted, policy.max_step_pct)
    if integer:
        value = _round_towards(current, value)
    return Guarded(value, None, bounds)


def _relative_pct(current: float, wanted: float) -> float:
    if current == 0:
        return math.inf
    return abs(wanted - current) / abs(current) * 100.0


def _limit_step(
    current: float, wanted: float, max_step_pct: float
) -> tuple[float, tuple[str, ...]]:
    if current == 0:
        return wanted, ()
    largest = abs(current) * max_step_pct / 100.0
    if abs(wanted - current) <= largest:
        return wanted, ()
    limited = current + math.copysign(largest, wanted - current)
    return limited, (f"max step {max_step_pct:g}%: {wanted:g} limited to {limited:g}",)


def _round_towards(current: float, value: float) -> float:
    """An integer parameter moves by whole units, rounding towards the current value so the
    step limit is never exceeded (but at least one unit when any move is allowed)."""
    rounded = float(math.floor(value) if value > current else math.ceil(value))
    if rounded == current:
        rounded = current + (1.0 if value > current else -1.0)
    return rounded
