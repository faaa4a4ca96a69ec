"""The controller's one client for Prometheus' HTTP API: instant and range PromQL queries.

Prometheus documents the API at https://prometheus.io/docs/prometheus/latest/querying/api/:
``GET /api/v1/query`` (``query``, ``time``) answers ``{"status": "success", "data":
{"resultType": "vector" | "scalar" | ..., "result": [...]}}``, ``GET /api/v1/query_range``
(``query``, ``start``, ``end``, ``step``) answers a ``matrix``; failures answer
``{"status": "error", "errorType": "bad_data", "error": "..."}`` with 400 or 422, and 503 while
the server is not ready. Sample values are strings (``"NaN"``, ``"+Inf"`` included).

The ``httpx.Client`` is passed in (tests point it at a real Prometheus; the API builds one from
its settings). Every failure is one of three typed errors, never an httpx or KeyError:
``PrometheusUnreachable`` (no answer, or 503), ``PrometheusQueryInvalid`` (the query was
refused) and ``PrometheusBadAnswer`` (an answer the API does not allow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from controller.errors import PrometheusBadAnswer, PrometheusQueryInvalid, PrometheusUnreachable

Labels = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of an instant query: the series' labels, the value, its Unix time."""

    labels: Labels
    value: float
    at: float


@dataclass(frozen=True, slots=True)
class Series:
    """One series of a range query: labels and ``(unix_time, value)`` points in time order."""

    labels: Labels
    points: tuple[tuple[float, float], ...]


class PromQL:
    def __init__(self, http: httpx.Client) -> None:
        self._http = http

    def __repr__(self) -> str:
        return f"PromQL(base_url={str(self._http.base_url)!r})"

    def close(self) -> None:
        self._http.close()

    def instant(self, query: str, at: datetime | None = None) -> list[Sample]:
        """The query's value now (or ``at``); a scalar comes back as one unlabelled sample."""
        params = {"query": query}
        if at is not None:
            params["time"] = f"{at.timestamp():.3f}"
        data = self._get("/api/v1/query", params)
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar":
            return [Sample({}, *_point(result)[::-1])]
        if kind != "vector" or not isinstance(result, list):
            raise PrometheusBadAnswer(f"an instant query answered {kind!r}, not a vector")
        return [Sample(_labels(item), *_point(_field(item, "value"))[::-1]) for item in result]

    def range(self, query: str, start: datetime, end: datetime, step_s: float) -> list[Series]:
        """The query evaluated every ``step_s`` seconds from ``start`` to ``end``."""
        params = {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{step_s:g}",
        }
        data = self._get("/api/v1/query_range", params)
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusBadAnswer(
                f"a range query answered {data.get('resultType')!r}, not a matrix"
            )
        return [
            Series(_labels(item), tuple(_point(p) for p in _list(_field(item, "values"))))
            for item in result
        ]

    def _get(self, path: str, params: Mapping[str, str]) -> Mapping[str, Any]:
        try:
            response = self._http.get(path, params=params)
        except httpx.TransportError as error:
            raise PrometheusUnreachable(
                f"no answer from Prometheus at {self._http.base_url}: {type(error).__name__}"
            ) from error
        if response.status_code == 503:
            raise PrometheusUnreachable(f"Prometheus at {self._http.base_url} is not ready (503)")
        body = _json_object(response)
        if body.get("status") == "error" or response.is_error:
            message = str(body.get("error") or response.reason_phrase)
            if body.get("errorType") == "bad_data" or response.status_code in (400, 422):
                raise PrometheusQueryInvalid(f"Prometheus refused the query: {message}")
            raise PrometheusBadAnswer(f"Prometheus answered {response.status_code}: {message}")
        data = body.get("data")
        if body.get("status") != "success" or not isinstance(data, dict):
            raise PrometheusBadAnswer("Prometheus answered without status success and data")
        return data


def _json_object(response: httpx.Response) -> Mapping[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise PrometheusBadAnswer(
            f"Prometheus answered {response.status_code} with a body that is not JSON"
        ) from None
    if not isinstance(body, dict):
        raise PrometheusBadAnswer("Prometheus answered JSON that is not an object")
    return body


def _field(item: Any, name: str) -> Any:
    if not isinstance(item, dict) or name not in item:
        raise PrometheusBadAnswer(f"a result item has no {name!r}")
    return item[name]


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise PrometheusBadAnswer("a result item's values are not a list")
    return value


def _labels(item: Any) -> dict[str, str]:
    metric = _field(item, "metric")
    if not isinstance(metric, dict):
        raise PrometheusBadAnswer("a result item's metric is not an object")
    return {str(key): str(value) for key, value in metric.items()}


def _point(raw: Any) -> tuple[float, float]:
    """``[1700000000.5, "12.5"]`` -> ``(1700000000.5, 12.5)``."""
    if not isinstance(raw, list) or len(raw) != 2:
        raise PrometheusBadAnswer(f"a sample is not [time, value]: {raw!r:.60}")
    try:
        return float(raw[0]), float(raw[1])
    except (TypeError, ValueError):
        raise PrometheusBadAnswer(f"a sample value is not a number: {raw!r:.60}") from None


def finite(value: float) -> float | None:
    """The value, or None for NaN and infinities (JSON has no spelling for them)."""
    return value if math.isfinite(value) else None


def make_promql(
    base_url: str, timeout_s: float, transport: httpx.BaseTransport | None = None
) -> PromQL:
    """A client on its own ``httpx.Client``; the caller closes it (``PromQL.close``)."""
    return PromQL(httpx.Client(base_url=base_url, timeout=timeout_s, transport=transport))
