"""lab.prometheus: a real Prometheus on loopback that scrapes its targets, loads sluice's rules
and stops when done. The scraped target here is a fake collector (a few lines of the
collector's exposition, fake_collector.py); the real one is controller.collector."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from lab.prometheus import LocalPrometheus, LocalPrometheusError
from tests.integration.telemetry.fake_collector import fake_collector

pytestmark = pytest.mark.integration

FAKE_COLLECTOR_METRICS = """\
# TYPE sluice_switch_stream_up gauge
sluice_switch_stream_up{switch="leaf1"} 1
# TYPE sluice_agent_heartbeat_age_seconds gauge
sluice_agent_heartbeat_age_seconds{switch="leaf1"} 0.4
# TYPE sluice_queue_dropped_packets_per_second gauge
sluice_queue_dropped_packets_per_second{switch="leaf1",port="Ethernet0",queue="3",class="storage"} 7
"""


@pytest.fixture
def collector() -> Iterator[str]:
    with fake_collector(FAKE_COLLECTOR_METRICS) as target:
        yield target


def eventually_query(url: str, query: str, deadline_s: float = 30.0) -> list[dict[str, object]]:
    """The query's result once it is not empty (Prometheus scrapes every second)."""
    deadline = time.monotonic() + deadline_s
    while True:
        result = httpx.get(f"{url}/api/v1/query", params={"query": query}).json()["data"]["result"]
        if result or time.monotonic() > deadline:
            return list(result)
        time.sleep(0.2)


def test_it_scrapes_its_targets_and_loads_the_rules(
    prometheus_scraping: Callable[[Sequence[str]], LocalPrometheus], collector: str
) -> None:
    server = prometheus_scraping([collector])
    (up,) = eventually_query(server.url, 'up{job="sluice-collector"} == 1')
    assert up["metric"]["instance"] == collector  # type: ignore[index]
    (recorded,) = eventually_query(server.url, "switch:sluice_queue_dropped_packets_per_second:sum")
    assert recorded["value"][1] == "7"  # type: ignore[index]
    groups = httpx.get(f"{server.url}/api/v1/rules").json()["data"]["groups"]
    assert {g["name"] for g in groups} == {"sluice.recording", "sluice.alerts"}
    server.stop()  # the fixture's stop after the test is then a no-op
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/-/ready", timeout=2)


def test_a_server_that_cannot_start_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.rules.yml"
    broken.write_text("groups: [{name: x, rules: [{record: y, expr: 'sum('}]}]\n")
    server = LocalPrometheus(tmp_path / "srv", rules_file=broken)
    with pytest.raises(LocalPrometheusError, match="prometheus exited"):
        server.start()
