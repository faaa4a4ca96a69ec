"""sluice.fabric.health_info against the API reading a real Prometheus that holds a known
history (tests/integration/telemetry/fabric_history.py): leaf1 quiet, leaf2 dropping 5
packets/s on Ethernet4 queue 1 and its agent on the static fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab.prometheus import LocalPrometheus
from tests.integration.conftest import issue_token, put_intent
from tests.integration.served import served
from tests.integration.telemetry.conftest import history_end, history_prometheus
from tests.integration.telemetry.fabric_history import telemetry_intent

from .conftest import Operator, operator_env

pytestmark = pytest.mark.integration
__all__ = ["history_end", "history_prometheus"]  # fixtures this module uses

READ = "Health"


@pytest.fixture
def telemetry_operator(
    db_url: str, history_prometheus: LocalPrometheus, tmp_path: Path
) -> Iterator[Operator]:
    settings = Settings.for_database(
        db_url, prometheus=PrometheusSettings(url=history_prometheus.url)
    )
    admin = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.ADMIN)}"}
    with served(create_app(settings)) as url, httpx.Client(base_url=url) as http:
        assert put_intent(http, admin, telemetry_intent(), 0).status_code == 201  # type: ignore[arg-type]
        token = issue_token(db_url, AccessRole.VIEWER, "ansible-viewer")
        yield Operator(tmp_path, operator_env(url, token))


def read_health(out: Path) -> list[dict[str, object]]:
    """Read the health, keep what the module returned in ``out`` (JSON)."""
    return [
        {
            "name": "Read the fabric's health",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {"name": READ, "sluice.fabric.health_info": {}, "register": "health"},
                {
                    "name": "Keep it",
                    "ansible.builtin.copy": {
                        "content": "{{ health | to_json }}",
                        "dest": str(out),
                        "mode": "0600",
                    },
                },
            ],
        }
    ]


def test_health_info_reports_the_telemetry_verdict(telemetry_operator: Operator) -> None:
    out = telemetry_operator.workdir / "health.json"
    run = telemetry_operator.playbook(read_health(out))
    assert run.returncode == 0, run.output()
    assert run.task(READ)["status"] == "ok"
    facts = json.loads(out.read_text())
    assert (facts["state"], facts["healthy"], facts["telemetry"]) == ("warn", False, True)
    assert "leaf2 Ethernet4 queue 1: drops warn (dropped packets/s 5 >= 1)" in facts["problems"]
    assert not [p for p in facts["problems"] if p.startswith("leaf1")]
    switches = {s["switch"]: s["state"] for s in facts["health"]["switches"]}
    assert switches == {"leaf1": "ok", "leaf2": "warn"}
