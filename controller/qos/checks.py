"""Argument checks shared by the QoS algorithms.

The algorithms are called with values that come from the operator's intent, so a bad value is
reported the same way intent validation reports it: an ``IntentInvalid`` naming the argument
and the reason. Nothing is computed from a value that failed a check.
"""

from __future__ import annotations

import math

from controller.errors import FieldProblem, IntentInvalid


def invalid(path: str, reason: str) -> IntentInvalid:
    """One-problem ``IntentInvalid`` for argument ``path``."""
    return IntentInvalid([FieldProblem(path=path, reason=reason)])


def require_positive(path: str, value: float) -> None:
    """``value`` must be a finite number greater than zero."""
    if not math.isfinite(value) or value <= 0:
        raise invalid(path, f"must be a finite number > 0, got {value!r}")


def require_non_negative(path: str, value: float) -> None:
    """``value`` must be a finite number of zero or more."""
    if not math.isfinite(value) or value < 0:
        raise invalid(path, f"must be a finite number >= 0, got {value!r}")


def require_fraction(path: str, value: float) -> None:
    """``value`` must lie strictly between 0 and 1 (an EWMA gain, a load)."""
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise invalid(path, f"must be strictly between 0 and 1, got {value!r}")


def require_int_at_least(path: str, value: int, minimum: int) -> None:
    """``value`` must be an integer (not a bool) no smaller than ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise invalid(path, f"must be an integer >= {minimum}, got {value!r}")


def snap(value: float) -> float:
    """Remove binary floating-point noise before rounding to an integer.

    ``1.25e9 * 85.2e-6`` is ``106500.00000000001``; taking the ceiling of that would add a
    byte nobody asked for. Rounding to 6 decimals first (micro-bytes, far below anything a
    switch can express) makes floor/ceil act on the value the arithmetic meant.
    """
    return round(value, 6)
