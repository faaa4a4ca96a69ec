"""The twin over the API: real PostgreSQL, the app, and the real worker running the real netsim
binary (``target/debug/netsim``) for the example intent; a few hundred flows, seconds."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.routes.twin_runs import DEPRECATED_PREFIX, DEPRECATED_SINCE
from controller.intent.loader import dump_intent, parse_intent, parse_yaml
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.twin_runs import TwinRunRunner, TwinRunService, run_twin_with
from controller.settings import TwinSettings
from controller.store.db import make_engine, make_sessions
from controller.store.models import TwinRun
from controller.twin.translate import Request
from tests.integration.conftest import put_intent
from tests.support.lossless import with_lossless_storage

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
CLASSES = ["control", "rpc", "storage", "analytics", "best-effort"]


def example() -> dict[str, Any]:
    data = parse_yaml(EXAMPLE.read_text())
    assert isinstance(data, dict)
    return data


def finished(client: TestClient, headers: dict[str, str], location: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(location, headers=headers).json()
        if body["state"] in ("completed", "error"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"{location} did not finish")


def post(client: TestClient, headers: dict[str, str], **body: Any) -> str:
    response = client.post("/api/v1/twin-runs", json=body, headers=headers)
    assert response.status_code == 202, response.text
    assert response.json()["state"] == "pending"
    location: str = response.headers["Location"]
    return location


def test_the_worker_runs_netsim_and_a_seed_repeats(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    assert put_intent(client, auth["operator"], example(), 0).status_code == 201
    first = finished(client, auth["viewer"], post(client, auth["operator"], flows=300, seed=3))
    assert first["state"] == "completed", first["message"]
    assert first["intent_version"] == 1
    assert first["progress"].startswith("v1: netsim: ")
    result = first["result"]["result"]
    assert [row["name"] for row in result["classes"]] == CLASSES
    assert all(row["flows"] == 60 and row["p99_us"] > 0 for row in result["classes"])
    assert {row["name"] for row in result["buckets"]} <= {"small", "medium", "large"}
    assert any("QJUMP" in note for note in result["not_modelled"])
    again = finished(client, auth["viewer"], post(client, auth["operator"], flows=300, seed=3))
    assert again["result"] == first["result"]


def test_a_lossless_class_reports_its_drops_pauses_and_cnps(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    intent = dump_intent(with_lossless_storage(parse_intent(example())))
    assert put_intent(client, auth["operator"], intent, 0).status_code == 201
    body = finished(client, auth["viewer"], post(client, auth["operator"], flows=300, seed=1))
    assert body["state"] == "completed", body["message"]
    result = body["result"]["result"]
    (storage,) = result["lossless"]["classes"]
    assert (storage["name"], storage["queue"]) == ("storage", 3)
    assert storage["drops"] == 0
    assert storage["pause_frames"] > 0
    assert storage["paused_us"] > 0
    assert storage["cnps"] > 0
    assert result["findings"] == []
    # The lossy example reports no lossless figures.
    assert put_intent(client, auth["operator"], example(), 1).status_code == 200
    lossy = finished(client, auth["viewer"], post(client, auth["operator"], flows=60, seed=1))
    assert lossy["result"]["result"]["lossless"] is None


def test_compare_two_versions_that_differ_in_a_weight(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    intent = example()
    assert put_intent(client, auth["operator"], intent, 0).status_code == 201
    heavier = copy.deepcopy(intent)
    storage = next(c for c in heavier["service_classes"] if c["name"] == "storage")
    storage["scheduling"]["weight"] = 400
    assert put_intent(client, auth["operator"], heavier, 1).status_code == 200
    location = post(
        client,
        auth["operator"],
        flows=400,
        load=0.8,
        seed=1,
        mix={"storage": 0.5, "best-effort": 0.5},
        version=1,
        compare_version=2,
    )
    body = finished(client, auth["viewer"], location)
    assert body["state"] == "completed", body["message"]
    delta = {row["name"]: row for row in body["result"]["delta"]["classes"]}
    # DWRR serves backlogged queues in proportion to their weights (Shreedhar & Varghese,
    # SIGCOMM 1995): with storage's weight raised from 50 to 400, storage gets most of every
    # contended host port and finishes sooner; best-effort's share shrinks, it finishes later.
    assert delta["storage"]["mean_us"] < 0
    assert delta["best-effort"]["mean_us"] > 0


def test_bad_requests_are_problems_not_runs(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    operator = auth["operator"]
    no_intent = client.post("/api/v1/twin-runs", json={}, headers=operator)
    assert no_intent.status_code == 404
    assert no_intent.headers["content-type"].startswith("application/problem+json")
    assert put_intent(client, operator, example(), 0).status_code == 201
    for body in ({"load": 1.5}, {"workload": "video"}, {"flows": 0}, {"mix": {"nosuch": 1}}):
        response = client.post("/api/v1/twin-runs", json=body, headers=operator)
        assert response.status_code == 422, (body, response.text)
    assert (
        client.post("/api/v1/twin-runs", json={"version": 9}, headers=operator).status_code == 404
    )
    assert client.get("/api/v1/twin-runs/77", headers=auth["viewer"]).status_code == 404
    assert client.post("/api/v1/twin-runs", json={}, headers=auth["viewer"]).status_code == 403


def test_the_old_path_is_a_deprecated_alias_with_the_same_checks(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    old = f"/api/v1{DEPRECATED_PREFIX}"
    operator = auth["operator"]
    assert client.post(old, json={}, headers=operator).status_code == 404  # no intent yet
    assert put_intent(client, operator, example(), 0).status_code == 201
    recorded = client.post(old, json={"flows": 100, "seed": 2}, headers=operator)
    assert recorded.status_code == 202, recorded.text
    assert recorded.headers["Deprecation"] == DEPRECATED_SINCE
    assert recorded.headers["Link"] == '</api/v1/twin-runs>; rel="successor-version"'
    run_id = recorded.json()["id"]
    assert recorded.headers["Location"] == f"/api/v1/twin-runs/{run_id}"
    read = client.get(f"{old}/{run_id}", headers=auth["viewer"])
    assert read.status_code == 200
    assert read.headers["Deprecation"] == DEPRECATED_SINCE
    assert read.json()["id"] == run_id
    assert read.json()["request"] == recorded.json()["request"]
    assert client.post(old, json={"load": 1.5}, headers=operator).status_code == 422
    assert client.post(old, json={}, headers=auth["viewer"]).status_code == 403
    assert client.post(old, json={}).status_code == 401
    assert client.get(f"{old}/77", headers=auth["viewer"]).status_code == 404
    assert not any(path.startswith(old) for path in client.get("/openapi.json").json()["paths"])


def test_a_run_left_running_by_a_stopped_worker_is_claimed_again(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        sessions = make_sessions(engine)
        now = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
        service = TwinRunService(sessions, clock=lambda: now)
        actor = Actor("t-operator", "req-1")
        IntentService(sessions, clock=lambda: now).replace(
            example(), expected=0, actor=actor, reason="test"
        )
        recorded = service.request(actor=actor, request=Request(flows=100, seed=2))
        with sessions.begin() as session:  # a worker claimed it at 08:00, then stopped
            row = session.get(TwinRun, recorded.id)
            assert row is not None
            row.state, row.started_at = "running", now
        run_twin = run_twin_with(TwinSettings().netsim, 120)

        def runner(at: datetime) -> TwinRunRunner:
            return TwinRunRunner(
                sessions, run_twin, clock=lambda: at, stale_after=timedelta(minutes=5)
            )

        assert runner(now + timedelta(minutes=4)).run_once() == 0  # may still be running
        assert runner(now + timedelta(minutes=6)).run_once() == 1
        done = service.get(recorded.id)
        assert done.state == "completed"
        assert done.result is not None
        assert done.started_at == now + timedelta(minutes=6)
    finally:
        engine.dispose()
