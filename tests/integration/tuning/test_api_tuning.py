"""Tuning proposals through the API: real PostgreSQL (migrated), real Prometheus holding the
backfilled history of history.py, the app on the wall clock (the history ends now)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings, WorkerSettings
from lab.localpg import free_port
from lab.prometheus import LocalPrometheus, running_prometheus
from tests.integration.conftest import issue_token, put_intent
from tests.integration.tuning.history import tuner_intent, write_history
from tests.integration.tuning.test_tuning_search_queue import settled
from tests.support.worker import running_worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPrometheus]:
    root: Path = tmp_path_factory.mktemp("tuner-api-prometheus")
    history = write_history(root / "history.om", int(time.time()) - 2)
    with running_prometheus(root / "server", history=history) as server:
        yield server


@pytest.fixture
def client(db_url: str, prometheus: LocalPrometheus) -> Iterator[TestClient]:
    settings = Settings.for_database(db_url, prometheus=PrometheusSettings(url=prometheus.url))
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def operator(db_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(db_url, AccessRole.OPERATOR)}"}


@pytest.fixture
def admin(db_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(db_url, AccessRole.ADMIN)}"}


def store(client: TestClient, admin: dict[str, str], intent: dict[str, Any], version: int) -> None:
    answer = put_intent(client, admin, intent, version)
    assert answer.status_code in (200, 201), answer.text


def test_propose_explain_approve_then_the_interval_holds(
    client: TestClient, operator: dict[str, str], admin: dict[str, str]
) -> None:
    store(client, admin, tuner_intent(), 0)
    made = client.post("/api/v1/tuning/proposals", headers=operator)
    assert made.status_code == 201, made.text
    proposal = made.json()
    assert (proposal["state"], proposal["base_version"]) == ("pending", 1)
    # storage marks 0.15 at utilisation 0.5: lambda 1 -> 1.25 (25 % step), storage's own
    # lambda (it ran the fabric's until now).
    assert proposal["diff"] == [
        {"path": "service_classes[storage].ecn_lambda", "before": None, "after": 1.25}
    ]
    (change,) = proposal["changes"]
    assert change["parameter"] == "ecn_lambda/storage/25gbps"
    assert change["evidence"]["rule"] == "ecn.lambda"
    # The window ends at the app's clock, seconds after the last sample: the first 0.1
    # samples may fall out of it, so the mean is 0.15 or a little above.
    assert change["evidence"]["inputs"]["mark_fraction_mean"] == pytest.approx(0.15, abs=0.005)
    assert change["evidence"]["outputs"]["standard_threshold_bytes"] == 156_250
    # The switch plan: the compiler's agent bounds for storage's queue on the 25 Gb/s port
    # are the rule's outputs (floor 70/100 x 156 250 = 109 375 B, ceiling K), and the
    # agent's orders for that queue carry the class's new lambda.
    (plan,) = proposal["plans"]
    ops = {(op["table"], op["key"]): op for op in plan["ops"]}
    queue = ops["SLUICE_AGENT_QUEUE", "Ethernet0|3"]["fields"]
    assert (queue["floor_bytes"], queue["ceiling_bytes"]) == ("109375", "156250")
    assert change["evidence"]["outputs"]["agent_floor_bytes"] == 109_375
    assert queue["lambda"] == "1.25"
    # bulk would move to DynaQ alone, but the fabric runs one dynamic algorithm: held.
    held = {h["parameter"]: h["held"] for h in proposal["held"]}
    assert held["algorithm/bulk"] == "not expressible in the intent"

    explained = client.get(f"/api/v1/tuning/proposals/{proposal['id']}", headers=operator)
    assert explained.json()["changes"] == proposal["changes"]

    approved = client.post(
        f"/api/v1/tuning/proposals/{proposal['id']}/approve", headers=operator
    ).json()
    assert (approved["state"], approved["new_version"]) == ("approved", 2)
    version = client.get("/api/v1/intent", headers=operator).json()
    assert version["version"]["number"] == 2
    assert version["version"]["author"] == "tuner"
    assert "mark_fraction_mean=0.15" in version["version"]["reason"]
    classes = {c["name"]: c for c in version["intent"]["service_classes"]}
    assert classes["storage"]["ecn_lambda"] == 1.25
    assert version["intent"]["fabric"]["ecn_lambda"] == 1.0

    # At once again: lambda 1.25 would go further (the telemetry is unchanged) but it changed
    # less than min_interval_s (900 s) ago: nothing to approve.
    again = client.post("/api/v1/tuning/proposals", headers=operator).json()
    assert again["state"] == "no_change"
    held = {h["parameter"]: h["held"] for h in again["held"]}
    assert "minimum interval" in held["ecn_lambda/storage/25gbps"]

    twice = client.post(f"/api/v1/tuning/proposals/{proposal['id']}/approve", headers=operator)
    assert twice.status_code == 409
    assert twice.headers["content-type"].startswith("application/problem+json")


def test_a_proposal_the_intent_moved_past_is_stale(
    client: TestClient, operator: dict[str, str], admin: dict[str, str]
) -> None:
    store(client, admin, tuner_intent(), 0)
    proposal = client.post("/api/v1/tuning/proposals", headers=operator).json()
    moved = tuner_intent()
    moved["fabric"]["base_rtt_us"] = 50
    store(client, admin, moved, 1)
    answer = client.post(f"/api/v1/tuning/proposals/{proposal['id']}/approve", headers=operator)
    assert answer.status_code == 409
    assert "run the tuner again" in answer.json()["detail"]
    listed = client.get("/api/v1/tuning/proposals", headers=operator).json()
    assert listed[0]["state"] == "stale"
    intent = client.get("/api/v1/intent", headers=operator).json()
    assert intent["version"]["number"] == 2
    assert intent["intent"]["fabric"]["ecn_lambda"] == 1.0


def test_tuning_off_refuses_and_a_viewer_cannot_run_it(
    client: TestClient, operator: dict[str, str], admin: dict[str, str], db_url: str
) -> None:
    intent = tuner_intent()
    intent["fabric"]["tuning"]["mode"] = "off"
    store(client, admin, intent, 0)
    assert client.post("/api/v1/tuning/proposals", headers=operator).status_code == 409
    viewer = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.VIEWER)}"}
    assert client.post("/api/v1/tuning/proposals", headers=viewer).status_code == 403
    assert client.get("/api/v1/tuning/proposals/99", headers=viewer).status_code == 404


def test_auto_mode_writes_the_version_at_once(
    client: TestClient, operator: dict[str, str], admin: dict[str, str]
) -> None:
    intent = tuner_intent()
    intent["fabric"]["tuning"]["mode"] = "auto"
    store(client, admin, intent, 0)
    proposal = client.post("/api/v1/tuning/proposals", headers=operator).json()
    assert (proposal["state"], proposal["new_version"], proposal["decided_by"]) == (
        "approved",
        2,
        "tuner",
    )


def test_prometheus_down_is_a_problem_not_a_500(db_url: str, admin: dict[str, str]) -> None:
    nowhere = PrometheusSettings(url=f"http://127.0.0.1:{free_port()}", timeout_s=2)
    settings = Settings.for_database(db_url, prometheus=nowhere)
    with TestClient(create_app(settings)) as down:
        store(down, admin, tuner_intent(), 0)
        answer = down.post("/api/v1/tuning/proposals", headers=admin)
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert down.get("/api/v1/tuning/proposals", headers=admin).json() == []


def test_with_search_twin_the_reason_the_search_proposed_nothing_is_in_the_api(
    client: TestClient,
    operator: dict[str, str],
    admin: dict[str, str],
    db_url: str,
    prometheus: LocalPrometheus,
) -> None:
    # The history's storage marks would raise its lambda (above); under search: twin that is
    # the search's to move, and the search has no traffic: the hosts report finished flows
    # for rpc alone, whose queues the history does not carry (no measured load).
    intent = tuner_intent()
    intent["fabric"]["tuning"]["search"] = "twin"
    intent["service_classes"][1]["objective"] = {"p99_fct_us_small": 5000}
    store(client, admin, intent, 0)
    made = client.post("/api/v1/tuning/proposals", headers=operator)
    # The search is the worker's: the API answers at once, and the real worker runs it.
    assert made.status_code == 202, made.text
    assert made.json()["state"] == "queued"
    settings = Settings.for_database(
        db_url,
        prometheus=PrometheusSettings(url=prometheus.url),
        worker=WorkerSettings(poll_s=0.05, watch_drift=False),
    )
    with running_worker(settings):
        proposal = settled(lambda: client.get(made.headers["Location"], headers=operator).json())
    assert proposal["state"] == "no_change"
    assert proposal["reason"] == (
        "tuner: no change [search: no traffic for the twin: the summary measured no load for "
        "any class]"
    )
    held = {h["parameter"]: h for h in proposal["held"]}
    assert held["search/twin"]["held"] == proposal["reason"].split("[search: ")[1][:-1]
    assert held["search/twin"]["evidence"]["rule"] == "search.twin"
    lam = held["ecn_lambda/storage/25gbps"]
    assert (lam["current"], lam["proposed"]) == (1.0, 1.25)
    assert lam["held"] == "fabric.tuning.search is twin: lambdas and weights move by the search"
