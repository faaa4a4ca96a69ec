"""Host runs over the API on a real PostgreSQL with real ansible-playbook, no root needed.

The hosts are reached with Ansible's local connection (an inventory var from the control
node's settings) and the playbook is the harmless test play, so plan, apply in batches, the
failure budget, the one-apply-at-a-time rule and the records are exercised for real without
touching this machine's network settings. The real site.yml over real SSH to namespaced
hosts is tests/e2e/test_hosts_controller.py.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.errors import Conflict
from controller.services.common import Actor
from controller.services.hosts_rollout import HostRolloutService
from controller.settings import HostsSettings, Settings
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import host_runs
from controller.store.repositories.host_runs import NewHostRun
from tests.integration.conftest import T0, StepClock, put_intent, small_intent

REPO = Path(__file__).resolve().parents[2]
LOCAL_PLAY = REPO / "tests" / "unit" / "hosts" / "playbooks" / "local_batch.yml"
HOSTS = ["host1", "host2", "host3", "host4"]


def four_host_intent() -> dict[str, Any]:
    intent = small_intent()
    intent["hosts"] = [
        {"name": name, "address": f"10.0.1.{11 + i}", "nic_gbps": 25}
        for i, name in enumerate(HOSTS)
    ]
    return intent


def local_config(tmp_path: Path, **inventory_vars: Any) -> HostsSettings:
    """The test play as site.yml, the sluice_events callback enabled, local connection."""
    playbooks = tmp_path / "playbooks"
    playbooks.mkdir()
    shutil.copy(LOCAL_PLAY, playbooks / "site.yml")
    (playbooks / "ansible.cfg").write_text(
        "[defaults]\n"
        "gathering = explicit\n"
        "retry_files_enabled = false\n"
        f"callback_plugins = {REPO / 'playbooks' / 'callback_plugins'}\n"
        "callbacks_enabled = sluice_events\n"
    )
    return HostsSettings(
        playbook_dir=playbooks,
        workdir=tmp_path / "runs",
        inventory_vars={"ansible_connection": "local", "check_vars": True, **inventory_vars},
    )


@pytest.fixture
def hosts_app(db_url: str, tmp_path: Path, auth: Any) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(**inventory_vars: Any) -> TestClient:
        app = create_app(
            Settings.for_database(db_url, hosts=local_config(tmp_path, **inventory_vars)),
            clock=StepClock(),
        )
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        assert put_intent(client, auth["operator"], four_host_intent(), 0).status_code == 201
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def finished(
    client: TestClient, headers: dict[str, str], run_id: int, hang_guard_s: float = 300
) -> dict[str, Any]:
    """Poll the run until it leaves ``running`` (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + hang_guard_s
    while True:
        run: dict[str, Any] = client.get(f"/api/v1/hosts/runs/{run_id}", headers=headers).json()
        if run["state"] != "running":
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


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


# --- the service itself: one apply at a time, stale runs ------------------------------------


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


def test_a_second_apply_while_one_runs_is_a_conflict(service_parts: Any) -> None:
    sessions, config = service_parts
    held: list[threading.Thread] = []

    def hold(work: Callable[[], None]) -> threading.Thread:
        # The first run's thread is made but not started yet, so the run stays ``running``.
        thread = threading.Thread(target=work)
        held.append(thread)
        return thread

    service = HostRolloutService(sessions, clock=StepClock(), config=config, spawn=hold)
    actor = Actor(name="op", request_id="r1")
    first = service.start_apply(actor=actor)
    assert first.state == "running"
    # Owned by this very pid, but this service runs it: not taken for a dead run.
    assert service.interrupt_stale() == []
    with pytest.raises(Conflict):
        service.start_apply(actor=actor)
    held[0].start()
    held[0].join(300)
    assert service.run(first.id).state == "completed"
    # Once it has finished, the next apply may start.
    second = service.start_apply(actor=actor)
    held[1].start()
    held[1].join(300)
    assert service.run(second.id).state == "completed"


def test_runs_of_a_dead_process_are_interrupted_before_an_apply(service_parts: Any) -> None:
    sessions, config = service_parts
    me = f"{socket.gethostname()}:{os.getpid()}"
    runs = {
        # this pid, not run by this service: a previous life of the process (container pid 1);
        # an apply, so without the clean-up every later apply would be a conflict
        "mine": ("apply", me),
        "dead": ("plan", f"{socket.gethostname()}:{2**22 + 7}"),  # above pid_max: never alive
        "replica": ("plan", "another-machine:1"),
    }
    ids = {}
    with sessions.begin() as session:
        for label, (mode, owner) in runs.items():
            new = NewHostRun(
                mode=mode,
                intent_version=1,
                hosts=HOSTS,
                batch_size=4,
                failure_budget=0,
                batches_total=1,
                requested_by="op",
                request_id=label,
                owner=owner,
                started_at=T0,
            )
            ids[label] = host_runs.create_run(session=session, run=new).id
    service = HostRolloutService(sessions, clock=StepClock(), config=config)
    started = service.start_apply(actor=Actor(name="op", request_id="r2"))
    service.wait(300)
    assert service.run(started.id).state == "completed"
    assert service.run(ids["mine"]).state == "interrupted"
    assert service.run(ids["dead"]).state == "interrupted"
    assert service.run(ids["replica"]).state == "running"
