"""Real playbooks through ``ansible-playbook`` and ``ansible-inventory``, using the sluice.fabric
collection from this repository, against the API served on 127.0.0.1 over a fresh migrated
PostgreSQL database, a thread that runs rollouts as the worker does, and the four vsonic
switches of the rollout tests (real Redis, real gNMI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.intent.loader import dump_intent
from controller.services.discoveries import DiscoveryService
from controller.services.tokens import AccessRole
from tests.integration.conftest import issue_token
from tests.integration.rollout import conftest as rollout

from ..rollout.conftest import Controller

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
PLAYBOOK_TIMEOUT_S = 300

# The rollout tests' parts, shared as fixtures of this folder too.
fabric = rollout.fabric
redis_servers = rollout.redis_servers
controller = rollout.controller
switch_tls = rollout.switch_tls


class WorkerThread:
    """Steps rollouts and answers discoveries until stopped, as ``python -m
    controller.worker`` would."""

    def __init__(self, controller: Controller) -> None:
        self._runner = controller.runner()
        self._discoveries = DiscoveryService(controller.sessions, clock=controller.clock)
        self._access = controller.access()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            steps = self._runner.run_until_idle() + self._discoveries.answer(self._access)
            if not steps:
                self._stop.wait(0.05)

    def __enter__(self) -> WorkerThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


@dataclass(frozen=True)
class PlaybookRun:
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]  # the collection's sluice.fabric.events callback

    def task(self, name: str) -> dict[str, Any]:
        (found,) = [e for e in self.events if e["event"] == "task" and e["task"] == name]
        return found

    def output(self) -> str:
        return self.stdout[-4000:] + self.stderr[-2000:]


@dataclass
class Operator:
    """An operator's control node: a folder with playbooks, the API's address and a token
    in the environment (as AWX would inject them), and the collection on the path."""

    workdir: Path
    env: dict[str, str]

    def write(self, name: str, content: Any) -> Path:
        path = self.workdir / name
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        path.write_text(text)
        return path

    def playbook(self, play: list[dict[str, Any]], *args: str) -> PlaybookRun:
        path = self.write("play.yml", play)
        events = self.workdir / "events.jsonl"
        events.unlink(missing_ok=True)
        argv = [str(BIN / "ansible-playbook"), "-i", str(self.inventory()), str(path), *args]
        env = {**self.env, "SLUICE_EVENTS_FILE": str(events)}
        done = subprocess.run(
            argv,
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=PLAYBOOK_TIMEOUT_S,
            check=False,
        )
        lines = events.read_text().splitlines() if events.exists() else []
        decoded = [json.loads(line) for line in lines]
        return PlaybookRun(done.returncode, done.stdout, done.stderr, decoded)

    def inventory(self) -> Path:
        return self.write(
            "control.yml",
            {
                "all": {
                    "hosts": {
                        "localhost": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": sys.executable,
                        }
                    }
                }
            },
        )

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / argv[0]), *argv[1:]],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=PLAYBOOK_TIMEOUT_S,
            check=False,
        )


def operator_env(url: str, token: str) -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/root"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO),
        "ANSIBLE_CALLBACKS_ENABLED": "sluice.fabric.events",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "false",
        "SLUICE_API_URL": url,
        "SLUICE_API_TOKEN": token,
    }


@pytest.fixture
def operator(controller: Controller, live_api_url: str, db_url: str, tmp_path: Path) -> Operator:
    token = issue_token(db_url, AccessRole.OPERATOR, "ansible-operator")
    return Operator(tmp_path, operator_env(live_api_url, token))


def intent_file(operator: Operator, controller: Controller, **fabric: Any) -> Path:
    """The fabric's intent as YAML in the operator's folder (``fabric`` overrides fields)."""
    data: dict[str, Any] = dump_intent(controller.fabric.intent)
    data["fabric"] = {**data["fabric"], **fabric}
    return operator.write("intent.yaml", data)
