"""lab.prometheus: a real Prometheus on loopback that scrapes its targets, loads sluice's rules
and stops when done. The scraped target here is a fake collector (a few lines of the
collector's exposition served by http.server); the real one is controller.telemetry.collector."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lab.prometheus import LocalPrometheus, LocalPrometheusError

pytestmark = pytest.mark.integration

FAKE_COLLECTOR_METRICS = b"""\
# TYPE sluice_switch_stream_up gauge
sluice_switch_stream_up{switch="leaf1"} 1
# TYPE sluice_agent_heartbeat_age_seconds gauge
sluice_agent_heartbeat_age_seconds{switch="leaf1"} 0.4
# TYPE sluice_queue_dropped_packets_per_second gauge
sluice_queue_dropped_packets_per_second{switch="leaf1",port="Ethernet0",queue="3",class="storage"} 7
"""


class FakeCollectorHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(FAKE_COLLECTOR_METRICS)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def fake_collector() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeCollectorHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def eventually_query(url: str, query: str, deadline_s: float = 30.0) -> list[dict[str, object]]:
    """The query's result once it is not empty (Prometheus scrapes every second)."""
    deadline = time.monotonic() + deadline_s
    while True:
        result = httpx.get(f"{url}/api/v1/query", params={"query": query}).json()["data"]["result"]
        if result or time.monotonic() > deadline:
            return list(result)
        time.sleep(0.2)


def test_it_scrapes_its_targets_and_loads_the_rules(tmp_path: Path, fake_collector: str) -> None:
    with LocalPrometheus(tmp_path, targets=[fake_collector]) as server:
        (up,) = eventually_query(server.url, 'up{job="sluice-collector"} == 1')
        assert up["metric"]["instance"] == fake_collector  # type: ignore[index]
        (recorded,) = eventually_query(
            server.url, "switch:sluice_queue_dropped_packets_per_second:sum"
        )
        assert recorded["value"][1] == "7"  # type: ignore[index]
        groups = httpx.get(f"{server.url}/api/v1/rules").json()["data"]["groups"]
        assert {g["name"] for g in groups} == {"sluice.recording", "sluice.alerts"}
        url = server.url
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/-/ready", timeout=2)


def test_a_server_that_cannot_start_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.rules.yml"
    broken.write_text("groups: [{name: x, rules: [{record: y, expr: 'sum('}]}]\n")
    server = LocalPrometheus(tmp_path / "srv", rules_file=broken)
    with pytest.raises(LocalPrometheusError, match="prometheus exited"):
        server.start()
