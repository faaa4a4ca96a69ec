"""GET /api/v1/telemetry/switches/{name}, its port series and GET /api/v1/health, read from a
real Prometheus holding a known history (fabric_history.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lab.localpg import free_port
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import put_intent
from tests.integration.telemetry.conftest import wall_clock_app
from tests.integration.telemetry.fabric_history import (
    MTU,
    POINTS,
    STEP_S,
    last_point,
    telemetry_intent,
)
from tests.integration.telemetry.fake_collector import fake_collector

pytestmark = pytest.mark.integration


def test_switch_telemetry_is_the_latest_sample_of_every_port_and_queue(
    telemetry_client: TestClient, viewer_headers: dict[str, str]
) -> None:
    answer = telemetry_client.get("/api/v1/telemetry/switches/leaf2", headers=viewer_headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["switch"] == "leaf2"
    assert body["stream_up"] is True
    assert body["agent"] == {
        "mode": "fallback",
        "algorithm": "mqecn",
        "heartbeat_age_s": 0.2,
        "orders_version": 3.0,
        "loop_s": 0.001,
    }
    assert [p["port"] for p in body["ports"]] == ["Ethernet0", "Ethernet4"]
    port = body["ports"][1]
    assert [q["queue"] for q in port["queues"]] == ["1", "3", "7"]
    storage = port["queues"][1]
    expected = last_point("leaf2", "Ethernet4", "3")
    assert storage["service_class"] == "storage"
    assert storage["tx_bytes_per_s"] == pytest.approx(expected.tx_bytes, rel=1e-5)
    assert storage["threshold_bytes"] == pytest.approx(expected.threshold, rel=1e-5)
    assert storage["mark_fraction"] == pytest.approx(0.12, rel=1e-5)
    assert storage["basis"] == "stale_fallback"
    bulk = port["queues"][0]
    assert bulk["dropped_bytes_per_s"] == pytest.approx(5 * MTU)
    ctrl = port["queues"][2]
    assert ctrl["threshold_bytes"] is None  # a STRICT queue without ECN has no threshold
    total = sum(last_point("leaf2", "Ethernet4", q).tx_bytes for q in ("1", "3", "7"))
    assert port["utilisation"] == pytest.approx(total * 8 / 25e9, rel=1e-5)


def test_port_series_has_each_queue_over_the_window(
    telemetry_client: TestClient, viewer_headers: dict[str, str]
) -> None:
    answer = telemetry_client.get(
        "/api/v1/telemetry/switches/leaf1/ports/Ethernet0/series",
        params={"window_s": 300},
        headers=viewer_headers,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["step_s"] == 2.0  # 300 s in at most 240 points
    assert [(q["queue"], q["service_class"]) for q in body["queues"]] == [
        ("1", "bulk"),
        ("3", "storage"),
        ("7", "ctrl"),
    ]
    storage = body["queues"][1]["series"]
    assert set(storage) == {
        "threshold_bytes",
        "occupancy_bytes",
        "tx_bytes_per_s",
        "ecn_marked_packets_per_s",
    }
    # Samples every 5 s, evaluated every 2 s over 300 s: ~150 points, each one of the history's.
    points = storage["threshold_bytes"]
    assert len(points) >= 140
    assert all(60_000 - 1 <= value <= 120_000 + 1 for _, value in points)
    assert "threshold_bytes" not in body["queues"][2]["series"]
    assert POINTS * STEP_S > 300


def test_health_grades_the_fabric_from_prometheus_and_the_intent(
    telemetry_client: TestClient, viewer_headers: dict[str, str]
) -> None:
    answer = telemetry_client.get("/api/v1/health", headers=viewer_headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["state"] == "warn"
    assert body["counts"] == {"ok": 1, "warn": 1, "critical": 0}
    assert body["reasons"] == []
    leaf1, leaf2 = body["switches"]
    assert (leaf1["switch"], leaf1["state"], leaf1["reasons"]) == ("leaf1", "ok", [])
    checks = [(r["check"], r["where"]) for r in leaf2["reasons"]]
    assert ("agent_fallback", "leaf2") in checks
    assert ("drops", "leaf2 Ethernet4 queue 1") in checks
    drops = next(r for r in leaf2["reasons"] if r["check"] == "drops")
    assert drops == {
        "check": "drops",
        "state": "warn",
        "where": "leaf2 Ethernet4 queue 1",
        "detail": "dropped packets/s 5 >= 1",
    }


def test_health_follows_the_intents_thresholds(
    telemetry_client: TestClient, viewer_headers: dict[str, str], admin_headers: dict[str, str]
) -> None:
    admin = admin_headers
    version = int(telemetry_client.get("/api/v1/intent", headers=admin).headers["etag"].strip('"'))
    relaxed = telemetry_intent()
    relaxed["fabric"]["health"] = {"drops_per_s_warn": 10, "drops_per_s_critical": 20}
    assert put_intent(telemetry_client, admin, relaxed, version).status_code == 200
    try:
        leaf2 = telemetry_client.get("/api/v1/health", headers=viewer_headers).json()["switches"][1]
        assert "drops" not in [r["check"] for r in leaf2["reasons"]]
    finally:
        put_intent(telemetry_client, admin, telemetry_intent(), version + 1)


def test_unknown_switch_and_port_are_404_and_bad_names_422(
    telemetry_client: TestClient, viewer_headers: dict[str, str]
) -> None:
    get = telemetry_client.get
    assert get("/api/v1/telemetry/switches/spine9", headers=viewer_headers).status_code == 404
    missing_port = get(
        "/api/v1/telemetry/switches/leaf1/ports/Ethernet8/series", headers=viewer_headers
    )
    assert missing_port.status_code == 404
    assert "Ethernet8" in missing_port.json()["detail"]
    injected = get(
        '/api/v1/telemetry/switches/leaf1"}or{x="/ports/Ethernet0/series', headers=viewer_headers
    )
    assert injected.status_code in (404, 422)
    assert (
        get(
            "/api/v1/telemetry/switches/leaf1/ports/eth0/series", headers=viewer_headers
        ).status_code
        == 422
    )
    short = get(
        "/api/v1/telemetry/switches/leaf1/ports/Ethernet0/series",
        params={"window_s": 5},
        headers=viewer_headers,
    )
    assert short.status_code == 422
    assert short.json()["errors"][0]["field"] == "window_s"


def test_telemetry_needs_a_token(telemetry_client: TestClient) -> None:
    for path in ("/api/v1/health", "/api/v1/telemetry/switches/leaf1"):
        answer = telemetry_client.get(path)
        assert answer.status_code == 401
        assert answer.headers["content-type"] == "application/problem+json"


def test_prometheus_down_is_a_specific_503_not_a_500(
    module_db_url: str, telemetry_client: TestClient, viewer_headers: dict[str, str]
) -> None:
    # telemetry_client stored the intent; this app reads the same database, and a port where
    # nothing listens.
    with wall_clock_app(module_db_url, f"http://127.0.0.1:{free_port()}") as client:
        for path in ("/api/v1/health", "/api/v1/telemetry/switches/leaf1"):
            answer = client.get(path, headers=viewer_headers)
            assert answer.status_code == 503, answer.text
            assert answer.headers["content-type"] == "application/problem+json"
            body = answer.json()
            assert body["type"] == "urn:sluice:problem:prometheus-unreachable"
            assert "no answer from Prometheus" in body["detail"]
        assert client.get("/healthz").status_code == 200  # liveness does not need Prometheus


SCRAPED_FABRIC = """\
# TYPE sluice_switch_stream_up gauge
sluice_switch_stream_up{switch="leaf1"} 0
sluice_switch_stream_up{switch="leaf2"} 1
# TYPE sluice_switch_last_update_age_seconds gauge
sluice_switch_last_update_age_seconds{switch="leaf1"} 45
sluice_switch_last_update_age_seconds{switch="leaf2"} 0.5
# TYPE sluice_agent_heartbeat_age_seconds gauge
sluice_agent_heartbeat_age_seconds{switch="leaf2"} 0.1
# TYPE sluice_agent_mode_info gauge
sluice_agent_mode_info{switch="leaf2",mode="dynamic",algorithm="mqecn"} 1
# TYPE sluice_queue_occupancy_bytes gauge
sluice_queue_occupancy_bytes{switch="leaf2",port="Ethernet0",queue="3",class="storage"} 1900000
sluice_queue_occupancy_bytes{switch="leaf2",port="Ethernet0",queue="1",class="bulk"} 1000
# TYPE sluice_collector_lag_seconds gauge
sluice_collector_lag_seconds{collector="0"} 0.2
"""


def test_health_of_a_fabric_prometheus_scrapes_live(
    module_db_url: str,
    telemetry_client: TestClient,
    viewer_headers: dict[str, str],
    prometheus_scraping: Callable[[Sequence[str]], LocalPrometheus],
) -> None:
    # leaf1's stream is down and its counters 45 s old; leaf2's storage queue holds 1.9 MB of
    # its port's 2 MB (95 %: critical). Swap the fake for the collector to test the real chain.
    with fake_collector(SCRAPED_FABRIC) as target:
        server = prometheus_scraping([target])
        with wall_clock_app(module_db_url, server.url) as client:
            body = eventually_health(client, viewer_headers)
    assert body["state"] == "critical"
    assert body["reasons"] == []
    leaf1, leaf2 = body["switches"]
    assert [(r["check"], r["state"]) for r in leaf1["reasons"]] == [
        ("stream_down", "critical"),
        ("counters_stale", "warn"),
    ]
    assert leaf2["reasons"] == [
        {
            "check": "occupancy",
            "state": "critical",
            "where": "leaf2 Ethernet0 queue 3",
            "detail": "occupancy % of the 2000000 B port buffer 95 >= 90",
        }
    ]


def eventually_health(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    """GET /health once Prometheus has scraped the collector (until then no switch has
    telemetry and the collector reports no lag)."""
    deadline = time.monotonic() + 30
    while True:
        body: dict[str, Any] = client.get("/api/v1/health", headers=headers).json()
        scraped = not any(r["check"] == "no_collector" for r in body.get("reasons", []))
        if scraped or time.monotonic() > deadline:
            return body
        time.sleep(0.2)
