"""DWRR weights for SONiC's SCHEDULER table.

SONiC's ``SCHEDULER`` ``weight`` is a uint8 in 1..100 (sonic-scheduler.yang,
sonic-scheduler.yang); intent may state weights on any positive scale
(e.g. bytes of quantum, or 1 : 1000 ratios). ``normalise_weights`` maps them into 1..100.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.qos.checks import require_int_at_least

SONIC_WEIGHT_MIN = 1
SONIC_WEIGHT_MAX = 100


def normalise_weights(weights: Mapping[str, int]) -> dict[str, int]:
    """Map positive DWRR weights into 1..100, keeping their ratios as closely as possible.

    * If every weight already lies in 1..100 the weights are returned unchanged: they are
      exact, and rescaling could only add rounding error.
    * Otherwise every weight is multiplied by s = 100 / max(w), so the largest becomes 100 (the
      most resolution 1..100 offers), and rounded half-up to an integer; a weight that would
      round to 0 becomes 1, because SONiC has no weight 0 and the queue must still be served.

    Error bound: for each queue |w'_i - s x w_i| <= 0.5 (rounding), except raised weights
    where s x w_i < 0.5 and the error is below 1. So a queue's share relative to the largest
    queue is off by at most 0.5 / 100 = 0.5 percentage points (1 point if raised), and the
    relative error of the ratio w_i / w_j is at most about 0.5 / (s x w_i) + 0.5 / (s x w_j):
    large weights keep their ratios well, tiny ones cannot (1 : 1000 has no 1..100 image).
    """
    for name, weight in weights.items():
        require_int_at_least(f"weights[{name}]", weight, 1)
    if not weights:
        return {}
    largest = max(weights.values())
    if largest <= SONIC_WEIGHT_MAX:
        return dict(weights)
    # Integer arithmetic: round-half-up of w * 100 / largest is floor((2 * w * 100 + largest)
    # / (2 * largest)); exact for any size of weight, unlike float round() (banker's rounding).
    return {
        name: max(
            SONIC_WEIGHT_MIN,
            (2 * weight * SONIC_WEIGHT_MAX + largest) // (2 * largest),
        )
        for name, weight in weights.items()
    }
