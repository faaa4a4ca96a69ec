"""What the collector's counter rule shares with its readers (pure): the unit of switch time,
the bound a counter may grow by, and a COUNTERS_DB count parsed without an exception.

A SONiC counter only grows until something clears it (``sonic-clear queuecounters``), the
switch or syncd restarts, or a 64-bit count wraps. A counter that goes backwards is therefore
a reset: it yields no rate for that interval (never a negative one) and exactly one reset
event, and the new value becomes the base of the next delta. So is a counter that grows by
more than its line rate allows (``grew_too_fast``): a count that jumps to near 2^64 went
below zero on the switch (a stat read as -1, a clear racing a read), and as a rate it would
read 1.7e19 B/s for an interval on a 25 Gb/s port. Rates are taken over a window of at least
``window_ns`` of switch time, so the time a sample waited before it was read (a flex-counter
poll, a SAMPLE tick) is a small part of the span the rate covers.

The rule itself runs in the compiled ingest core (``native/controller-core/src/table.rs``);
it is written plainly in Python, as the reference the core is tested against, in
``tests/support/reference_counters.py``.
"""

from __future__ import annotations

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


def parse_count(text: object) -> int | None:
    """A COUNTERS_DB decimal string; None for anything else (never an exception)."""
    if not isinstance(text, str) or not text.isdigit():
        return None
    return int(text)
