"""Host runs over the API on a real PostgreSQL with real ansible-playbook, no root needed.

The hosts are reached with Ansible's local connection (an inventory var from the control
node's settings) and the playbook is the harmless test play, so plan, apply in batches, the
failure budget, the one-apply-at-a-time rule and the records are exercised for real without
touching this machine's network settings. The real site.yml over real SSH to namespaced
hosts is tests/e2e/test_hosts_controller.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.errors import Conflict
from controller.hosts.runner import HostResult
from controller.rollout.ansible import AnsibleBatches
from controller.rollout.hosts import HostRunRunner, HostRunState
from controller.services.common import Actor, WorkerWait
from controller.services.host_runs import HostRunService
from controller.settings import HostsSettings, Settings
from controller.store.db import make_engine, make_sessions
from controller.store.host_run_store import SqlHostRunStore
from tests.integration.conftest import StepClock, put_intent
from tests.support.host_runs import HOSTS, finished, four_host_intent, local_config
from tests.support.worker import running_worker


@pytest.fixture
def hosts_app(db_url: str, tmp_path: Path, auth: Any) -> Iterator[Callable[..., TestClient]]:

    with ExitStack() as stack:

        def make(**inventory_vars: Any) -> TestClient:
            hosts = local_config(tmp_path, **inventory_vars)
            settings = Settings.for_database(db_url, hosts=hosts)
            stack.enter_context(running_worker(settings))
            client = stack.enter_context(TestClient(create_app(settings, clock=StepClock())))
            assert put_intent(client, auth["operator"], four_host_intent(), 0).status_code == 201
            return client

        yield make


def statuses(run: dict[str, Any]) -> dict[str, tuple[int, str]]:
    return {r["host"]: (r["batch"], r["status"]) for r in run["results"]}


def test_plan_reports_every_host_in_one_check_mode_batch(
    hosts_app: Callable[..., TestClient], auth: Any
) -> None:
    client = hosts_app(fail_hosts=["host2"], change_hosts=["host3"])
    response = client.post("/api/v1/hosts/plan", headers=auth["operator"])
    assert response.status_code == 200, response.text
    run = response.json()
    assert (run["mode"], run["state"], run["intent_version"]) == ("plan", "completed", 1)
    assert (run["batch_size"], run["batches_total"], run["batches_done"]) == (4, 1, 1)
    assert statuses(run) == {
        "host1": (1, "ok"),
        "host2": (1, "failed"),
        "host3": (1, "changed"),
        "host4": (1, "ok"),
    }
    host2 = next(r for r in run["results"] if r["host"] == "host2")
    assert host2["message"] == "told to fail on host2"
    assert [t["task"] for t in host2["failed_tasks"]] == ["Fail where told"]
    host3 = next(r for r in run["results"] if r["host"] == "host3")
    assert [t["task"] for t in host3["changed_tasks"]] == ["Report a change where told"]
    assert run["counts"] == {"ok": 2, "failed": 1, "changed": 1, "pending": 0}
    assert run["requested_by"] == "t-operator"


def test_apply_stops_after_the_batch_that_exceeds_the_budget(
    hosts_app: Callable[..., TestClient], auth: Any
) -> None:
    client = hosts_app(fail_hosts=["host2"])
    response = client.post(
        "/api/v1/hosts/apply",
        json={"batch_size": 1, "failure_budget": 0},
        headers=auth["operator"],
    )
    assert response.status_code == 202, response.text
    started = response.json()
    assert response.headers["Location"] == f"/api/v1/hosts/runs/{started['id']}"
    assert started["mode"] == "apply"
    run = finished(client, auth["viewer"], started["id"])
    assert run["state"] == "halted"
    # Batch 1 (host1) ok; batch 2 (host2) fails: 1 > budget 0, so batches 3 and 4 never run.
    assert statuses(run) == {
        "host1": (1, "ok"),
        "host2": (2, "failed"),
        "host3": (3, "not_run"),
        "host4": (4, "not_run"),
    }
    assert (run["batches_total"], run["batches_done"], run["failures"]) == (4, 2, 1)
    assert run["finished_at"] is not None
    assert "above the failure budget" in run["message"]


def test_apply_within_budget_runs_every_batch_and_the_list_shows_it(
    hosts_app: Callable[..., TestClient], auth: Any
) -> None:
    client = hosts_app(fail_hosts=["host4"])
    response = client.post(
        "/api/v1/hosts/apply", json={"batch_size": 3, "failure_budget": 1}, headers=auth["operator"]
    )
    run = finished(client, auth["viewer"], response.json()["id"])
    assert run["state"] == "completed"
    # Batches [host1, host2, host3] and [host4]: one failure, within the budget of 1.
    assert statuses(run) == {
        "host1": (1, "ok"),
        "host2": (1, "ok"),
        "host3": (1, "ok"),
        "host4": (2, "failed"),
    }
    client.post("/api/v1/hosts/plan", headers=auth["operator"])
    listing = client.get("/api/v1/hosts/runs", headers=auth["viewer"]).json()
    assert listing["total"] == 2
    assert [item["mode"] for item in listing["items"]] == ["plan", "apply"]  # newest first
    assert listing["items"][1]["counts"]["failed"] == 1


def test_bad_requests_and_unknown_runs(hosts_app: Callable[..., TestClient], auth: Any) -> None:
    client = hosts_app()
    for body in ({"batch_size": 0}, {"failure_budget": -1}, {"surprise": 1}):
        refused = client.post("/api/v1/hosts/apply", json=body, headers=auth["operator"])
        assert refused.status_code == 422, body
    assert client.get("/api/v1/hosts/runs/424242", headers=auth["viewer"]).status_code == 404
    assert client.get("/api/v1/hosts/runs", headers=auth["viewer"]).json()["total"] == 0


def test_an_intent_with_a_dscp_clash_never_reaches_ansible(
    hosts_app: Callable[..., TestClient], auth: Any
) -> None:
    client = hosts_app()
    clashing = four_host_intent()
    clashing["service_classes"][1]["dscp"] = [10]  # bulk already uses 10
    refused = put_intent(client, auth["operator"], clashing, 1)
    assert refused.status_code == 422
    assert "service_classes[1].dscp[0]" in refused.text
    # The stored intent is still version 1; nothing was run for the refused one.
    assert client.get("/api/v1/hosts/runs", headers=auth["viewer"]).json()["total"] == 0


# --- the service and the worker's runner, without the API -----------------------------------


@pytest.fixture
def service_parts(db_url: str, tmp_path: Path, auth: Any) -> Iterator[tuple[Any, HostsSettings]]:
    # ``auth`` stores an intent-free database's tokens; the intent comes through the API.
    app = create_app(Settings.for_database(db_url), clock=StepClock())
    with TestClient(app) as client:
        assert put_intent(client, auth["operator"], four_host_intent(), 0).status_code == 201
    engine = make_engine(db_url, pool_size=2)
    try:
        yield make_sessions(engine), local_config(tmp_path)
    finally:
        engine.dispose()


def runner_over(sessions: Any, config: HostsSettings, ran: list[str]) -> HostRunRunner:
    """A fresh worker-side runner (as a restarted worker builds one); ``ran`` collects the
    hosts of every batch Ansible was started for."""
    store = SqlHostRunStore(sessions, clock=StepClock())
    ansible = AnsibleBatches(config, store.intent)

    def run_batch(run: HostRunState, hosts: Sequence[str], batch: int) -> list[HostResult]:
        ran.extend(hosts)
        return ansible(run, hosts, batch)

    return HostRunRunner(store, run_batch)


def test_a_second_apply_while_one_is_pending_is_a_conflict(service_parts: Any) -> None:
    sessions, config = service_parts
    service = HostRunService(sessions, clock=StepClock(), wait=WorkerWait())
    actor = Actor(name="op", request_id="r1")
    first = service.start_apply(actor=actor)
    assert first.state == "pending"
    assert first.counts == {"pending": 4}
    with pytest.raises(Conflict):
        service.start_apply(actor=actor)
    ran: list[str] = []
    while runner_over(sessions, config, ran).run_once():
        pass
    assert service.run(first.id).state == "completed"
    # Once it has finished, the next apply may be recorded.
    assert service.start_apply(actor=actor).state == "pending"


def test_a_run_resumes_with_the_hosts_not_yet_done_each_host_once(service_parts: Any) -> None:
    sessions, config = service_parts
    service = HostRunService(sessions, clock=StepClock(), wait=WorkerWait())
    run = service.start_apply(actor=Actor(name="op", request_id="r1"), batch_size=1)
    ran: list[str] = []
    first = runner_over(sessions, config, ran)
    assert first.step(run.id)  # pending -> running
    assert first.step(run.id)  # batch 1: host1
    assert first.step(run.id)  # batch 2: host2
    # The worker stops here; a new one (a new runner, a new store) takes over.
    assert service.run(run.id).counts == {"ok": 2, "pending": 2}
    second = runner_over(sessions, config, ran)
    while second.run_once():
        pass
    done = service.run(run.id)
    assert done.state == "completed"
    assert ran == HOSTS  # every host exactly once, in order
    assert [(r.host, r.batch, r.status) for r in done.results] == [
        (host, n, "ok") for n, host in enumerate(HOSTS, start=1)
    ]


def test_exporter_targets_follow_the_intent(
    hosts_app: Callable[..., TestClient], auth: Any
) -> None:
    client = hosts_app()
    url = "/api/v1/hosts/exporter-targets"
    assert client.get(url, headers=auth["viewer"]).json() == []  # no fabric.host_exporter
    intent = four_host_intent()
    intent["fabric"]["host_exporter"] = {"port": 9200}
    assert put_intent(client, auth["operator"], intent, 1).status_code == 200
    groups = client.get(url, headers=auth["viewer"]).json()
    assert groups == [
        {"targets": [f"10.0.1.{11 + i}:9200"], "labels": {"host": name}}
        for i, name in enumerate(HOSTS)
    ]
    assert client.get(url).status_code == 401
