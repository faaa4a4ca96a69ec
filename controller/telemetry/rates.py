"""Counter deltas to rates over the switch's own timestamps (pure).

A SONiC counter only grows until something clears it (``sonic-clear queuecounters``), the
switch or syncd restarts, or a 64-bit count wraps. A counter that goes backwards is therefore
a reset: it yields no rate for that interval (never a negative one) and exactly one reset
event, and the new value becomes the base of the next delta. Rates are taken over a window of
at least ``window_ns`` of switch time, so the time a sample waited before it was read (a
flex-counter poll, a SAMPLE tick) is a small part of the span the rate covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

NS_PER_S = 1_000_000_000


class Step(NamedTuple):
    """What one new sample of a counter gave: a rate per second (None until two samples span
    the window, or right after a reset) and whether this sample was a reset. (A tuple: one
    is made per counter field per update.)"""

    rate: float | None
    reset: bool


NO_RATE = Step(None, reset=False)
RESET = Step(None, reset=True)


@dataclass(slots=True)
class CounterTrack:
    """The recent samples ``(timestamp_ns, value)`` of one counter, oldest first (a list:
    it holds two or a few samples, and a switch has thousands of these)."""

    window_ns: int = 0
    samples: list[tuple[int, int]] = field(default_factory=list)

    def add(self, ts_ns: int, value: int) -> Step:
        """Record ``value`` seen at switch time ``ts_ns``; a sample not newer than the last one
        (a duplicate or reordered notification) changes nothing."""
        if self.window_ns == 0 and len(self.samples) == 1:
            return self._add_to_last(ts_ns, value)
        if self.samples:
            last_ts, last_value = self.samples[-1]
            if ts_ns <= last_ts:
                return Step(None, reset=False)
            if value < last_value:
                self.samples.clear()
                self.samples.append((ts_ns, value))
                return Step(None, reset=True)
        self.samples.append((ts_ns, value))
        return Step(self._rate(), reset=False)

    def _add_to_last(self, ts_ns: int, value: int) -> Step:
        """The common case (rate over the last interval): one sample kept, replaced."""
        last_ts, last_value = self.samples[0]
        if ts_ns <= last_ts:
            return NO_RATE
        self.samples[0] = (ts_ns, value)
        if value < last_value:
            return RESET
        return Step((value - last_value) * NS_PER_S / (ts_ns - last_ts), False)

    def _rate(self) -> float | None:
        newest_ts, newest = self.samples[-1]
        # Drop samples older than needed: keep the newest one that still spans the window.
        while len(self.samples) > 2 and newest_ts - self.samples[1][0] >= self.window_ns:
            del self.samples[0]
        if len(self.samples) < 2:
            return None
        oldest_ts, oldest = self.samples[0]
        span = newest_ts - oldest_ts
        if span <= 0 or span < self.window_ns:
            return None
        return (newest - oldest) * NS_PER_S / span


def fraction(part: float | None, whole: float | None) -> float | None:
    """``part / whole`` clamped to 0..1; None without both, 0 when nothing was sent."""
    if part is None or whole is None:
        return None
    if whole <= 0:
        return 0.0
    return min(1.0, max(0.0, part / whole))


def parse_count(text: object) -> int | None:
    """A COUNTERS_DB decimal string; None for anything else (never an exception)."""
    if not isinstance(text, str) or not text.isdigit():
        return None
    return int(text)
