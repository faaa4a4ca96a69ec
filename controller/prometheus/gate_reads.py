"""The edge of the health gates: one gate expression read from Prometheus as one number.

An expression that answers several series counts by its largest value (a gate is a ceiling);
one that answers nothing, or a Prometheus that does not answer, reads as no value, which the
gate judges a failure (``controller/rollout/gates.py``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from controller.errors import PrometheusError
from controller.prometheus.promql import PromQL

log = logging.getLogger(__name__)


def promql_reader(promql: PromQL) -> Callable[[str], float | None]:
    """A ``controller.rollout.gates.Reader`` over ``promql`` (the gates name the shape they
    read through; this edge does not import them)."""

    def read(expression: str) -> float | None:
        try:
            samples = promql.instant(expression)
        except PrometheusError as error:
            log.warning("gate query %r: %s", expression, error)
            return None
        values = [s.value for s in samples if not math.isnan(s.value)]
        return max(values) if values else None

    return read
