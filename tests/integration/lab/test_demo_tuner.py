"""The demo's tuner step (lab/demo_tuner.py) on a real one-switch lab: leaf1 from
``vsonic up`` with its data plane and qos-agent, the controller worker, the telemetry
collector, a real Prometheus scraping it, the API and PostgreSQL; the step runs the real
``sluice`` commands. The tuner must read the traffic the data plane carries (storage
backlogged, analytics light, best-effort idle), move the weights towards storage, and its
auto-mode rollout must pass its gates on measured values and change the switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import yaml

from controller.services.tokens import AccessRole
from controller.sonic.context import scheduler_name
from lab.demo_common import controller_process, controller_worker, run, say
from lab.demo_switches import demo_intent
from lab.demo_tuner import SOAK_S, tuner_step
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import issue_token
from vsonic.dataplane import AGENT, DATAPLANE, ROOT, find_binary
from vsonic.redis_process import free_port
from vsonic.tether import CleanupGuard
from vsonic.tls import tls_files

pytestmark = pytest.mark.integration

EXAMPLE = ROOT / "docs" / "example-intent.yaml"
SWITCH = "leaf1"
STORAGE_QUEUE = 3
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Lab:
    env: dict[str, str]
    intent: Path
    state_dir: Path
    traffic: Path


def _one_leaf_intent(tmp_path: Path) -> Path:
    document = demo_intent(EXAMPLE, 3.0, lambda port: False)  # leaf1 on a free port
    document["switches"] = [s for s in document["switches"] if s["name"] == SWITCH]
    path = tmp_path / "intent-switches.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def _wait_healthy(url: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"the API at {url} did not become healthy")


@pytest.fixture
def lab(tmp_path: Path, db_url: str) -> Iterator[Lab]:
    """leaf1 rolled out and running, with the worker, collector, Prometheus and API."""
    for binary in (DATAPLANE, AGENT):
        subprocess.run(binary.build_command, cwd=ROOT, check=True, timeout=900)
    intent = _one_leaf_intent(tmp_path)
    state_dir, traffic = tmp_path / "vsonic", tmp_path / "traffic.txt"
    traffic.write_text("# nothing yet\n")
    metrics_port, api_port = free_port(), free_port()
    prometheus = LocalPrometheus(tmp_path / "prometheus", targets=[f"127.0.0.1:{metrics_port}"])
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "SLUICE_API_URL": f"http://127.0.0.1:{api_port}",
        "SLUICE_API_PORT": str(api_port),
        "SLUICE_API_TOKEN": issue_token(db_url, AccessRole.ADMIN),
        "SLUICE_PROMETHEUS_URL": prometheus.url,
        "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port),
        "SLUICE_TELEMETRY_REFRESH_S": "2",
        "SLUICE_WORKER_POLL_S": "0.5",
        "SLUICE_GNMI_PASSWORD": "demo-tuner-test",
        "VSONIC_PASSWORD": "demo-tuner-test",
        "SLUICE_GNMI_TLS_CA": str(tls_files(state_dir).cert),
        DATAPLANE.env: str(find_binary(build=False)),
        AGENT.env: str(find_binary(build=False, binary=AGENT)),
    }
    sluice = str(BIN / "sluice")
    with ExitStack() as stack:
        stack.enter_context(prometheus)
        stack.enter_context(controller_process("api", env, tmp_path / "api.log", False))
        _wait_healthy(env["SLUICE_API_URL"])
        # Should the test run be killed, ``vsonic down`` still stops what ``up`` forks off.
        guard = CleanupGuard([BIN / "vsonic", "down", "--state-dir", state_dir], env=env)
        stack.callback(guard.dismiss)
        run([str(BIN / "vsonic"), "up", "--inventory", str(intent), "--state-dir",
             str(state_dir), "--traffic", str(traffic), "--base-port", str(free_port())],
            env)  # fmt: skip
        stack.callback(run, [str(BIN / "vsonic"), "down", "--state-dir", str(state_dir)], env)
        stack.enter_context(controller_worker(env, tmp_path / "worker.log", False))
        stack.enter_context(
            controller_process("controller.collector", env, tmp_path / "collector.log", False)
        )
        run([sluice, "apply", "-f", str(intent), "--reason", "test"], env)
        # The switch's first rollout takes its ports down and up once: allowed.
        run([sluice, "rollout", "start", "--watch", "--interval", "0.5", "--allow-port-flaps"],
            env)  # fmt: skip
        yield Lab(env, intent, state_dir, traffic)


def _storage_weight(state_dir: Path) -> int:
    (redis_port,) = json.loads((state_dir / "state.json").read_text())["redis_ports"]
    db = redis.Redis(host="127.0.0.1", port=redis_port, db=4, decode_responses=True)
    try:
        return int(db.hget(f"SCHEDULER|{scheduler_name(STORAGE_QUEUE)}", "weight") or 0)
    finally:
        db.close()


def _changes(proposal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c["parameter"]): c for c in proposal["changes"]}


def test_the_tuner_step_moves_weights_to_the_backlogged_class_through_a_gated_rollout(
    lab: Lab,
) -> None:
    before = _storage_weight(lab.state_dir)
    proposal, rollout = tuner_step(
        lab.env, lab.intent, lab.state_dir, lab.traffic, switch=SWITCH, run=run, say=say
    )
    changes = _changes(proposal)
    storage, idle = changes["weight/storage"], changes["weight/best-effort"]
    assert storage["proposed"] > storage["current"]  # backlogged: it borrows
    assert idle["proposed"] < idle["current"]  # idle: it lends
    assert "storage" in storage["evidence"]["inputs"]["backlogged"]
    assert rollout["state"] == "completed"
    assert rollout["created_by"] == "tuner"
    assert rollout["gate_policy"]["soak_s"] == SOAK_S  # fabric.tuning.rollout, not a constant
    soaks = [e for e in rollout["evaluations"] if e["stage"] == "soak"]
    assert {e["gate"] for e in soaks} == {"drops", "agent_fallback"}
    assert all(e["verdict"] == "pass" and e["value"] is not None for e in soaks)
    assert _storage_weight(lab.state_dir) > before  # the switch runs the tuned weights
