"""``sluice.fabric.hosts_apply`` in an operator's playbook, end to end: ansible-playbook on the
control node asks the live API to run sluice's host playbook over real SSH into two
namespaced hosts. Check mode shows the would-be changes and changes nothing; a first run
configures the hosts; a second changes nothing; a host whose sshd is down fails the task by
name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import Settings
from lab import netns
from tests.e2e.playbook import root_qdisc
from tests.integration.ansible.conftest import Operator, operator_env
from tests.integration.conftest import StepClock, issue_token
from tests.integration.served import served
from tests.support.namespaced_hosts import e2e_intent, hosts_settings
from tests.support.worker import running_worker

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2"]
TASK = "Configure the hosts"


def hosts_play(**options: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": "Configure sluice's hosts",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": TASK,
                    "sluice.fabric.hosts_apply": {"poll_interval": 0.2, **options},
                }
            ],
        }
    ]


@pytest.fixture
def fabric() -> Iterator[netns.Fabric]:
    with netns.running(len(HOSTS), names=HOSTS) as made:
        yield made


@pytest.fixture
def operator(fabric: netns.Fabric, db_url: str, tmp_path: Path) -> Iterator[Operator]:
    config = hosts_settings(fabric, tmp_path / "host-runs")
    # The API records host runs; the worker runs them (over SSH into the namespaces).
    settings = Settings.for_database(db_url, hosts=config)
    app = create_app(settings, clock=StepClock())
    token = issue_token(db_url, AccessRole.OPERATOR, "ansible-hosts")
    with running_worker(settings), served(app) as url:
        answer = httpx.put(
            f"{url}/api/v1/intent",
            json={"intent": e2e_intent(fabric), "reason": "e2e"},
            headers={"Authorization": f"Bearer {token}", "If-Match": '"0"'},
        )
        assert answer.status_code == 201, answer.text
        workdir = tmp_path / "operator"
        workdir.mkdir()
        yield Operator(workdir, operator_env(url, token))


def qdiscs(fabric: netns.Fabric) -> dict[str, str]:
    return {host: str(root_qdisc(fabric, host)["kind"]) for host in HOSTS}


def test_check_mode_then_apply_then_nothing_to_change_then_a_host_down_is_named(
    operator: Operator, fabric: netns.Fabric
) -> None:
    before = qdiscs(fabric)
    assert "htb" not in before.values()

    check = operator.playbook(hosts_play(), "--check", "--diff")
    assert check.returncode == 0, check.output()
    planned = check.task(TASK)
    assert planned["status"] == "changed"
    assert "class 1:17" in planned["diff"]["prepared"]  # QJUMP level 7's HTB class
    assert qdiscs(fabric) == before

    first = operator.playbook(hosts_play(batch_size=1))
    assert first.returncode == 0, first.output()
    assert first.task(TASK)["status"] == "changed"
    assert qdiscs(fabric) == dict.fromkeys(HOSTS, "htb")

    again = operator.playbook(hosts_play())
    assert again.returncode == 0, again.output()
    assert again.task(TASK)["status"] == "ok"

    fabric.stop_sshd("h2")
    down = operator.playbook(hosts_play())
    assert down.returncode != 0
    failed = down.task(TASK)
    assert failed["status"] == "failed"
    assert "h2 (unreachable" in failed["msg"], failed["msg"]
    assert "h1 (" not in failed["msg"]
