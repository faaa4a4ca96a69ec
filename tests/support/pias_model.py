"""The PIAS model's mean flow completion time for given demotion thresholds (the M/M/1 chain
of PIAS, ToN 2017, in the byte-weighted form ``controller/qos/pias.py`` documents).

The controller computes the thresholds (``demotion_thresholds``) and never needs this figure:
it is the oracle the tests judge those thresholds by (optimal, and no nudge helps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from controller.qos.checks import invalid, require_fraction, require_positive
from controller.qos.pias import FlowSizeCdf


def expected_fct(
    cdf: FlowSizeCdf,
    load: float,
    thresholds: Sequence[float],
    *,
    capacity_bytes_per_s: float = 1.0,
) -> float:
    """The model's mean flow completion time: sum_m b_m / (C (1 - sigma_m)).

    In seconds when ``capacity_bytes_per_s`` is given; with the default 1.0 it is in "byte
    times", which is enough to compare thresholds. No thresholds (one queue) gives the M/M/1
    value E[S] / (C (1 - rho)).
    """
    require_fraction("load", load)
    require_positive("capacity_bytes_per_s", capacity_bytes_per_s)
    for index, threshold in enumerate(thresholds):
        if not threshold > (thresholds[index - 1] if index else 0):
            raise invalid(f"thresholds[{index}]", "thresholds must be > 0 and strictly increasing")
    mean = cdf.mean_bytes()
    total, sent_before, sigma = 0.0, 0.0, 0.0
    for edge in [*thresholds, math.inf]:
        sent = cdf.truncated_mean(edge)
        band = sent - sent_before
        sigma += load * band / mean
        total += band / (1.0 - sigma)
        sent_before = sent
    return total / capacity_bytes_per_s
