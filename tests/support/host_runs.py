"""Host runs in tests: the four-host intent, control-node settings that run the harmless local
test play with real ansible-playbook, and reading a run until the worker has finished it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from controller.settings import HostsSettings
from tests.integration.conftest import small_intent

UNFINISHED = ("pending", "running", "rolling_back")
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
    """The test play as site.yml, the sluice.fabric.events callback enabled (the runner puts
    the collection on the path), local connection."""
    playbooks = tmp_path / "playbooks"
    playbooks.mkdir()
    shutil.copy(LOCAL_PLAY, playbooks / "site.yml")
    (playbooks / "ansible.cfg").write_text(
        "[defaults]\n"
        "gathering = explicit\n"
        "retry_files_enabled = false\n"
        "callbacks_enabled = sluice.fabric.events\n"
    )
    return HostsSettings(
        playbook_dir=playbooks,
        workdir=tmp_path / "runs",
        inventory_vars={"ansible_connection": "local", "check_vars": True, **inventory_vars},
    )


def finished(
    client: TestClient, headers: dict[str, str], run_id: int, hang_guard_s: float = 300
) -> dict[str, Any]:
    """Poll the run until the worker has finished it (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + hang_guard_s
    while True:
        run: dict[str, Any] = client.get(f"/api/v1/hosts/runs/{run_id}", headers=headers).json()
        if run["state"] not in UNFINISHED:
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)
