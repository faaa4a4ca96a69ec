"""A host apply survives a restart of the API process and of the worker process.

Real parts: PostgreSQL, ``python -m api`` and ``python -m controller.worker`` as processes,
real ansible-playbook over SSH to three namespaced hosts (``lab.netns``). The worker's
ansible-playbook is a wrapper that logs the hosts of every batch it is started for (its
``--limit``) and then runs the real one, so "each host applied once" is counted from what
was actually started, not from what sluice recorded.

- The API is stopped (SIGKILL: no chance to clean up) while the worker is part-way through
  an apply, and a new API process started: the run goes on and completes, each host once.
- The worker is stopped (SIGTERM: it finishes the batch in progress) part-way through an
  apply, the run is left with hosts not yet done, and a new worker finishes it: each host
  once over both workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import Settings
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import host_runs
from lab import netns
from lab.demo_common import stop_process
from lab.localpg import free_port
from tests.integration.conftest import StepClock, issue_token, put_intent
from tests.support.namespaced_hosts import e2e_intent
from vsonic.tether import start_tethered

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
HOSTS = ["r1", "r2", "r3"]
HANG_GUARD_S = 600  # guards against a hang, never a timing assertion
UNFINISHED = ("pending", "running")

WRAPPER = """#!/bin/sh
# Log the hosts of this batch (the value after --limit), then run the real ansible-playbook.
prev=""
for arg in "$@"; do
  if [ "$prev" = "--limit" ]; then echo "$arg" >> {log}; fi
  prev="$arg"
done
exec {real} "$@"
"""


@dataclass
class Stack:
    db_url: str
    workdir: Path
    env: dict[str, str]
    api_port: int
    headers: dict[str, str]
    batches_log: Path
    engine: Engine  # PostgreSQL read without the API, one pooled connection for the module
    http: httpx.Client  # the API asked every 0.1 s while waiting; see http_client()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}/api/v1"

    def api(self) -> subprocess.Popen[bytes]:
        return self._start([str(BIN / "python"), "-m", "api"], "api")

    def worker(self) -> subprocess.Popen[bytes]:
        return self._start([str(BIN / "python"), "-m", "controller.worker"], "worker")

    def _start(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        log = (self.workdir / f"{name}.log").open("ab")
        try:
            return start_tethered(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()

    def wait_healthy(self, proc: subprocess.Popen[bytes]) -> None:
        until(lambda: proc.poll() is None and self.healthy(), "the API to answer")

    def healthy(self) -> bool:
        try:
            answer = self.http.get(f"http://127.0.0.1:{self.api_port}/healthz", timeout=2)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def get(self, path: str) -> Any:
        return self.http.get(f"{self.url}{path}", headers=self.headers).json()

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.http.post(f"{self.url}{path}", json=body, headers=self.headers)

    def applied_hosts(self) -> Counter[str]:
        """How often ansible-playbook was started for each host (batch by batch)."""
        if not self.batches_log.exists():
            return Counter()
        lines = self.batches_log.read_text().split()
        return Counter(host for line in lines for host in line.split(","))


def http_client() -> httpx.Client:
    """One client for the module: ``httpx.get`` makes a client per call, and a client's TLS
    context cost about 28 ms of CPU, ten times a second while a run was waited for. No kept
    connections, so a request after an API restart never meets the killed process's socket."""
    return httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def done_hosts(run: dict[str, Any]) -> list[str]:
    return [r["host"] for r in run["results"]]


@pytest.fixture(scope="module")
def stack(
    fabric: netns.Fabric, module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("restarts")
    batches_log = workdir / "batches.log"
    wrapper = workdir / "ansible-playbook"
    wrapper.write_text(WRAPPER.format(log=batches_log, real=BIN / "ansible-playbook"))
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        "DATABASE_URL": module_db_url,
        "SLUICE_API_PORT": str(free_port()),
        "SLUICE_WORKER_POLL_S": "0.2",
        "SLUICE_HOSTS_ANSIBLE_PLAYBOOK": str(wrapper),
        "SLUICE_HOSTS_COMMAND_PREFIX": json.dumps(fabric.control_exec([])),
        "SLUICE_HOSTS_SSH_COMMON_ARGS": " ".join(fabric.ssh_options()),
        "SLUICE_HOSTS_CONTROL_PATH_DIR": str(fabric.workdir / "cp"),
        "SLUICE_HOSTS_WORKDIR": str(workdir / "runs"),
    }
    token = issue_token(module_db_url, AccessRole.OPERATOR)
    headers = {"Authorization": f"Bearer {token}"}
    engine = make_engine(module_db_url, pool_size=1)
    http = http_client()
    port = int(env["SLUICE_API_PORT"])
    made = Stack(module_db_url, workdir, env, port, headers, batches_log, engine, http)
    try:
        # The intent is set-up, not under test: put through the app in this process rather
        # than a process of its own (an API process costs seconds of CPU to import and start).
        app = create_app(Settings.for_database(module_db_url), clock=StepClock())
        with TestClient(app) as client:
            put = put_intent(client, headers, e2e_intent(fabric), 0)
        assert put.status_code == 201, put.text
        yield made
    finally:
        http.close()
        engine.dispose()


def start_apply(stack: Stack) -> int:
    response = stack.post("/hosts/apply", {"batch_size": 1, "failure_budget": 0})
    assert response.status_code == 202, response.text
    assert response.json()["state"] == "pending"
    run_id: int = response.json()["id"]
    return run_id


def recorded(stack: Stack, run_id: int) -> dict[str, str]:
    """Each host's status in PostgreSQL, read without the API (polled every 0.1 s: over the
    module's one pooled connection, not a new engine and backend each time)."""
    with make_sessions(stack.engine)() as session:
        results = host_runs.results_of(session=session, run_id=run_id)
        return {r.host_name: r.status for r in results}


def finished_run(stack: Stack, run_id: int) -> dict[str, Any]:
    until(lambda: stack.get(f"/hosts/runs/{run_id}")["state"] not in UNFINISHED, "the run")
    run: dict[str, Any] = stack.get(f"/hosts/runs/{run_id}")
    return run


def test_an_api_restart_during_a_host_apply(stack: Stack) -> None:
    api, worker = stack.api(), stack.worker()
    try:
        stack.wait_healthy(api)
        before = stack.applied_hosts()
        run_id = start_apply(stack)
        until(lambda: any(s != "pending" for s in recorded(stack, run_id).values()), "batch 1")
        api.kill()  # SIGKILL: the API gets no chance to hand anything over
        api.wait(timeout=60)
        assert "pending" in recorded(stack, run_id).values(), "the apply ended before the kill"
        api = stack.api()
        stack.wait_healthy(api)
        run = finished_run(stack, run_id)
    finally:
        stop_process(api, signal.SIGINT, timeout_s=30)
        stop_process(worker, signal.SIGTERM, timeout_s=HANG_GUARD_S)
    assert run["state"] == "completed", run
    assert {r["host"]: r["status"] for r in run["results"]} == dict.fromkeys(HOSTS, "changed")
    assert stack.applied_hosts() - before == Counter(HOSTS)  # each host once


def test_a_worker_restart_during_a_host_apply(stack: Stack) -> None:
    api, worker = stack.api(), stack.worker()
    try:
        stack.wait_healthy(api)
        before = stack.applied_hosts()
        run_id = start_apply(stack)
        until(lambda: any(s != "pending" for s in recorded(stack, run_id).values()), "batch 1")
        # SIGTERM: the worker finishes the batch in progress, records it and stops.
        stop_process(worker, signal.SIGTERM, timeout_s=HANG_GUARD_S)
        assert worker.returncode == 0
        left = recorded(stack, run_id)
        assert "pending" in left.values(), "the apply ended before the worker stopped"
        assert stack.get(f"/hosts/runs/{run_id}")["state"] == "running"
        worker = stack.worker()
        run = finished_run(stack, run_id)
    finally:
        stop_process(api, signal.SIGINT, timeout_s=30)
        stop_process(worker, signal.SIGTERM, timeout_s=HANG_GUARD_S)
    assert run["state"] == "completed", run
    # The second apply of the same intent: every host already is what it says.
    assert {r["host"]: r["status"] for r in run["results"]} == dict.fromkeys(HOSTS, "ok")
    assert stack.applied_hosts() - before == Counter(HOSTS)  # each host once, over both workers
