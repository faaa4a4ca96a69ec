"""The rollout, drift and reconcile endpoints on the real app, with the rollout runner
in-process (standing in for the worker) and real virtual switches behind both."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.intent.loader import dump_intent
from controller.services.reconcile import ReconcileService
from controller.services.tokens import AccessRole
from controller.settings import Settings
from tests.integration.conftest import StepClock, issue_token, put_intent

from .conftest import Controller

ALL = ("leaf1", "leaf2", "spine1", "spine2")


@pytest.fixture
def api(
    controller: Controller, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    # The app resolves env: credential references from its process environment.
    monkeypatch.setenv("SLUICE_GNMI_PASSWORD", controller.fabric.password)
    app = create_app(Settings.for_database(db_url), clock=StepClock())
    with TestClient(app) as client:
        yield client


@contextmanager
def answering_reconcile_requests(controller: Controller) -> Iterator[None]:
    """The worker's part of reconcile-now (``ReconcileService.answer_requests``) on a thread,
    over the test's switches; the test drives rollouts itself, so not the whole worker."""
    reconciler = ReconcileService(controller.sessions, clock=controller.clock)
    loop = reconciler.loop(controller.access())
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            if not reconciler.answer_requests(loop):
                stop.wait(0.05)

    thread = threading.Thread(target=answer, name="test-reconcile-requests", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(300)


def bearer(db_url: str, role: AccessRole) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(db_url, role, f'api-{role.value}')}"}


def test_start_watch_reconcile_and_roll_back_through_the_api(
    api: TestClient, controller: Controller, db_url: str
) -> None:
    operator, viewer = bearer(db_url, AccessRole.OPERATOR), bearer(db_url, AccessRole.VIEWER)
    assert put_intent(api, operator, dump_intent(controller.fabric.intent), 0).status_code == 201

    started = api.post(
        "/api/v1/rollouts", json={"canary": ["leaf1"], "batch_size": 2}, headers=operator
    )
    assert started.status_code == 201, started.text
    body: dict[str, Any] = started.json()
    assert (body["state"], body["to_version"], body["from_version"]) == ("pending", 1, 0)
    assert {r["switch"]: r["batch"] for r in body["results"]} == {
        "leaf1": 0,
        "leaf2": 1,
        "spine1": 1,
        "spine2": 2,
    }
    again = api.post("/api/v1/rollouts", json={}, headers=operator)
    assert again.status_code == 409
    assert again.headers["content-type"] == "application/problem+json"

    controller.runner().run_until_idle()
    rollout = api.get(f"/api/v1/rollouts/{body['id']}", headers=viewer).json()
    assert rollout["state"] == "completed"
    assert rollout["counts"] == {"applied_verified": 4}
    assert all(r["detail"]["status"] == "applied_verified" for r in rollout["results"])
    listed = api.get("/api/v1/rollouts", headers=viewer).json()
    assert (listed["total"], listed["items"][0]["id"]) == (1, body["id"])
    assert "results" not in listed["items"][0]
    assert api.post(f"/api/v1/rollouts/{body['id']}/pause", headers=operator).status_code == 409

    redis = controller.fabric.switches["leaf1"].store.client(4)
    redis.hset("SCHEDULER|SLUICE_SCHED_3", "weight", "99")
    with answering_reconcile_requests(controller):
        ran = api.post("/api/v1/reconcile/run", headers=operator)
    assert ran.status_code == 200, ran.text
    runs = {r["switch"]: r for r in ran.json()["items"]}
    assert set(runs) == set(ALL)
    assert (runs["leaf1"]["status"], runs["leaf1"]["drift_count"]) == ("corrected", 1)
    assert (
        redis.hget("SCHEDULER|SLUICE_SCHED_3", "weight")
        == (controller.fabric.desired()["leaf1"][("SCHEDULER", "SLUICE_SCHED_3")]["weight"])
    )
    drift = api.get("/api/v1/drift", params={"switch": "leaf1"}, headers=viewer).json()
    assert drift["total"] == 1
    assert (drift["items"][0]["field"], drift["items"][0]["observed"]) == ("weight", "99")
    assert api.get("/api/v1/drift", params={"switch": "leaf2"}, headers=viewer).json()["total"] == 0
    last = api.get("/api/v1/reconcile", headers=viewer).json()["items"]
    assert [r["switch"] for r in last] == sorted(ALL)

    rolled = api.post(f"/api/v1/rollouts/{body['id']}/rollback", headers=operator)
    assert rolled.json()["state"] == "rolling_back"
    controller.runner().run_until_idle()
    final = api.get(f"/api/v1/rollouts/{body['id']}", headers=viewer).json()
    assert final["state"] == "rolled_back"
    assert final["counts"]["rollback_applied_verified"] == 4
    # Rolled back to version 0: nothing sluice wrote is left on the switches.
    for name in ALL:
        left = controller.fabric.switches[name].config_db()
        assert not [key for key in left if "SLUICE" in key], name

    audit = api.get("/api/v1/audit", params={"resource_type": "rollout"}, headers=viewer).json()
    assert [a["action"] for a in audit["items"]] == ["rollback", "start"]


def test_unknown_rollout_is_404_and_bad_policy_is_422(
    api: TestClient, controller: Controller, db_url: str
) -> None:
    operator = bearer(db_url, AccessRole.OPERATOR)
    assert api.get("/api/v1/rollouts/999", headers=operator).status_code == 404
    put_intent(api, operator, dump_intent(controller.fabric.intent), 0)
    for bad in ({"batch_size": 0}, {"failure_budget": -1}, {"canary": ["no such!"]}):
        assert api.post("/api/v1/rollouts", json=bad, headers=operator).status_code == 422
    unknown = api.post("/api/v1/rollouts", json={"canary": ["leaf9"]}, headers=operator)
    assert unknown.status_code == 422
    assert "leaf9" in unknown.text
