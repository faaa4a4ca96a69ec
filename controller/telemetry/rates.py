"""What the collector's counter rule shares with its readers (pure): the unit of switch time,
a clamped fraction, and a COUNTERS_DB count parsed without an exception.

The rule itself (deltas to rates over the switch's own timestamps, a counter that goes
backwards is one reset and no rate) runs in the compiled ingest core
(``native/controller-core/src/table.rs``); it is written plainly in Python, as the reference
the core is tested against, in ``tests/support/reference_counters.py``.
"""

from __future__ import annotations

NS_PER_S = 1_000_000_000


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
