"""Counter deltas to rates over the switch's own timestamps (pure).

A SONiC counter only grows until something clears it (``sonic-clear queuecounters``), the
switch or syncd restarts, or a 64-bit count wraps. A counter that goes backwards is therefore
a reset: it yields no rate for that interval (never a negative one) and exactly one reset
event, and the new value becomes the base of the next delta. So is a counter that grows by
more than its line rate allows (``grew_too_fast``): a count that jumps to near 2^64 went
below zero on the switch (a stat read as -1, a clear racing a read), and as a rate it would
read 1.7e19 B/s for an interval on a 25 Gb/s port. Rates are taken over a window of at least
``window_ns`` of switch time, so the time a sample waited before it was read (a flex-counter
poll, a SAMPLE tick) is a small part of the span the rate covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

NS_PER_S = 1_000_000_000
# The fewest bytes a packet takes on the wire: a 64-byte minimum frame, 8 bytes of preamble
# and a 12-byte inter-frame gap (IEEE 802.3): b bytes a second are at most b / 84 packets.
MIN_WIRE_BYTES = 84
# How far past its line rate a counter may grow before the growth is a reset: JUMP_FACTOR
# times the rate over the time since the counter last changed plus JUMP_SLACK_NS. The
# timestamps are when the switch's gNMI server sent a value, not when syncd read it (a SAMPLE
# re-sends the last value written, so it can hold up to a tick more of traffic than its
# timestamp says), and a declared port speed may round the real one; a wrapped or corrupt
# count is many orders of magnitude past either.
JUMP_FACTOR = 4
JUMP_SLACK_NS = NS_PER_S


def grew_too_fast(grown: int, since_ns: int, limit_per_s: int | None) -> bool:
    """True when ``grown`` counts in ``since_ns`` of switch time is more than a line rate of
    ``limit_per_s`` allows (None: no bound known)."""
    if limit_per_s is None or grown <= 0:
        return False
    return grown * NS_PER_S > limit_per_s * JUMP_FACTOR * max(0, since_ns + JUMP_SLACK_NS)


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
    it holds two or a few samples, and a switch has thousands of these). ``limit_per_s``:
    the most it can grow a second at line rate (None: unbounded but for going backwards);
    ``changed_ns``: when the newest value first arrived."""

    window_ns: int = 0
    samples: list[tuple[int, int]] = field(default_factory=list)
    limit_per_s: int | None = None
    changed_ns: int = 0

    def add(self, ts_ns: int, value: int) -> Step:
        """Record ``value`` seen at switch time ``ts_ns``; a sample not newer than the last one
        (a duplicate or reordered notification) changes nothing."""
        if self.window_ns == 0 and len(self.samples) == 1:
            return self._add_to_last(ts_ns, value)
        if self.samples:
            last_ts, last_value = self.samples[-1]
            if ts_ns <= last_ts:
                return Step(None, reset=False)
            if self._is_reset(ts_ns, value, last_value):
                self.samples.clear()
                self.samples.append((ts_ns, value))
                return Step(None, reset=True)
        else:
            self.changed_ns = ts_ns
        self.samples.append((ts_ns, value))
        return Step(self._rate(), reset=False)

    def _is_reset(self, ts_ns: int, value: int, last_value: int) -> bool:
        """Backwards, or past the line rate since the last value first arrived; moves
        ``changed_ns`` when the value moved."""
        since_ns = ts_ns - self.changed_ns
        if value != last_value:
            self.changed_ns = ts_ns
        return value < last_value or grew_too_fast(value - last_value, since_ns, self.limit_per_s)

    def _add_to_last(self, ts_ns: int, value: int) -> Step:
        """The common case (rate over the last interval): one sample kept, replaced."""
        last_ts, last_value = self.samples[0]
        if ts_ns <= last_ts:
            return NO_RATE
        self.samples[0] = (ts_ns, value)
        if self._is_reset(ts_ns, value, last_value):
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
