"""The PromQL client against a real Prometheus (and, for answers a real one never gives, an
httpx MockTransport named as the fake it is)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from controller.errors import PrometheusBadAnswer, PrometheusQueryInvalid, PrometheusUnreachable
from controller.prometheus.promql import PromQL, make_promql
from lab.localpg import free_port
from lab.prometheus import LocalPrometheus
from tests.integration.telemetry.fabric_history import STEP_S, last_point

pytestmark = pytest.mark.integration


@pytest.fixture
def promql(history_prometheus: LocalPrometheus) -> Iterator[PromQL]:
    client = make_promql(history_prometheus.url, 10.0)
    yield client
    client.close()


def test_instant_vector(promql: PromQL, history_end: int) -> None:
    samples = promql.instant(
        'sluice_queue_tx_bytes_per_second{switch="leaf1",port="Ethernet4",queue="3"}'
    )
    (sample,) = samples
    assert sample.labels == {
        "__name__": "sluice_queue_tx_bytes_per_second",
        "switch": "leaf1",
        "port": "Ethernet4",
        "queue": "3",
        "class": "storage",
    }
    assert sample.value == pytest.approx(last_point("leaf1", "Ethernet4", "3").tx_bytes, rel=1e-5)


def test_instant_at_a_time_and_a_scalar(promql: PromQL, history_end: int) -> None:
    at = datetime.fromtimestamp(history_end, UTC)
    (count,) = promql.instant("count(sluice_switch_stream_up)", at)
    assert count.value == 2
    assert count.at == history_end
    (scalar,) = promql.instant("scalar(sum(sluice_agent_orders_version))", at)
    assert (scalar.labels, scalar.value) == ({}, 6.0)


def test_range_series_in_time_order(promql: PromQL, history_end: int) -> None:
    end = datetime.fromtimestamp(history_end, UTC)
    series = promql.range(
        "sum by (switch) (sluice_queue_dropped_packets_per_second)",
        end - timedelta(seconds=60),
        end,
        STEP_S,
    )
    by_switch = {s.labels["switch"]: s.points for s in series}
    assert set(by_switch) == {"leaf1", "leaf2"}
    assert len(by_switch["leaf2"]) == 13  # 60 s at 5 s, both ends included
    assert {v for _, v in by_switch["leaf2"]} == {5.0}
    times = [t for t, _ in by_switch["leaf2"]]
    assert times == sorted(times)
    assert times[-1] == history_end


def test_a_bad_query_is_query_invalid(promql: PromQL) -> None:
    with pytest.raises(PrometheusQueryInvalid, match="parse error"):
        promql.instant("sum(")


def test_nothing_listening_is_unreachable() -> None:
    client = make_promql(f"http://127.0.0.1:{free_port()}", 2.0)
    with pytest.raises(PrometheusUnreachable, match="no answer from Prometheus"):
        client.instant("up")


def fake_prometheus(status: int, body: bytes) -> PromQL:
    """A fake Prometheus (MockTransport) for answers a real one does not give."""
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body))
    return PromQL(httpx.Client(base_url="http://fake-prometheus", transport=transport))


def vector(result: list[dict[str, object]]) -> bytes:
    return json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": result}}
    ).encode()


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (200, b"<html>proxy login</html>", PrometheusBadAnswer),
        (200, b'{"status": "success"}', PrometheusBadAnswer),
        (
            200,
            b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
            PrometheusBadAnswer,
        ),
        (200, vector([{"metric": {}}]), PrometheusBadAnswer),
        (200, vector([{"metric": {}, "value": [1, "x"]}]), PrometheusBadAnswer),
        (500, b'{"status":"error","errorType":"internal","error":"boom"}', PrometheusBadAnswer),
        (503, b"Service Unavailable", PrometheusUnreachable),
        (
            422,
            b'{"status":"error","errorType":"execution","error":"too many samples"}',
            PrometheusQueryInvalid,
        ),
    ],
)
def test_answers_outside_the_api_are_typed_errors(
    status: int, body: bytes, error: type[Exception]
) -> None:
    with pytest.raises(error):
        fake_prometheus(status, body).instant("up")


def test_nan_and_infinities_are_read() -> None:
    body = vector(
        [{"metric": {"a": "1"}, "value": [5, "NaN"]}, {"metric": {}, "value": [5, "+Inf"]}]
    )
    values = [s.value for s in fake_prometheus(200, body).instant("x")]
    assert values[1] == float("inf")
    assert math.isnan(values[0])
