"""Schemathesis (every check) against the live API: uvicorn on 127.0.0.1, a real PostgreSQL
seeded with a small intent, the worker beside it (host runs, reconcile-now) and a real,
empty Prometheus (telemetry). Fails on any 5xx, any answer the OpenAPI document does not
describe, and any data the document calls valid that is refused otherwise than it allows.

Bounded in time: a few examples per operation (``SLUICE_FUZZ_EXAMPLES`` raises it for a
longer local run).

Expected statuses beyond schemathesis' defaults, and why:
- positive data: 412/428 (If-Match is a precondition on the stored version, which no schema
  can predict) and 422 (an intent's cross-object rules, docs/intent.md, are checked by its
  parser, not by JSON Schema);
- invalid data: 412 too, since a malformed If-Match is refused (412) before the path and
  body are read, and a request with both is rejected all the same;
- a missing required header: 428 is the status RFC 6585 gives for a missing If-Match.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab.prometheus import running_prometheus
from tests.integration.conftest import StepClock, issue_token, small_intent
from tests.integration.served import served
from tests.support.worker import running_worker

EXAMPLES = int(os.environ.get("SLUICE_FUZZ_EXAMPLES", "8"))

CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "422", "428"]

[checks.negative_data_rejection]
expected-statuses = [
    "400", "401", "403", "404", "405", "406", "409", "412", "415", "422", "428", "429",
]

[checks.missing_required_header]
expected-statuses = ["400", "401", "403", "406", "415", "422", "428"]
"""


@pytest.fixture
def fuzz_target(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """The served API's URL and an admin token; switches answer nothing, so gNMI deadlines
    and the worker wait are short (each reconcile-now or host plan still completes)."""
    monkeypatch.setenv("SLUICE_GNMI_DEADLINE_S", "1")
    monkeypatch.setenv("SLUICE_GNMI_SET_DEADLINE_S", "1")
    monkeypatch.setenv("SLUICE_HOSTS_BATCH_TIMEOUT_S", "30")
    token = issue_token(db_url, AccessRole.ADMIN, name="fuzzer")
    with running_prometheus(tmp_path / "prometheus") as prometheus:
        prometheus_settings = PrometheusSettings(url=prometheus.url)
        settings = Settings.for_database(db_url, prometheus=prometheus_settings)
        app = create_app(settings, clock=StepClock())
        with running_worker(settings), served(app) as url:
            seeded = httpx.put(
                f"{url}/api/v1/intent",
                json={"intent": small_intent(), "reason": "fuzz seed"},
                headers={"Authorization": f"Bearer {token}", "If-Match": '"0"'},
                timeout=60,
            )
            assert seeded.status_code == 201, seeded.text
            yield url, token


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    fuzz_target: tuple[str, str], tmp_path: Path
) -> None:
    url, token = fuzz_target
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    # Revoking tokens last and apart: fuzzing it first would revoke the fuzzer's own token
    # (ids are small) and leave every other operation answering 401.
    _schemathesis(url, token, config, tmp_path / "all", "--exclude-operation-id", "revoke_token")
    _schemathesis(url, token, config, tmp_path / "revoke", "--include-operation-id", "revoke_token")
    # The service is still whole afterwards.
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200


def _schemathesis(url: str, token: str, config: Path, report: Path, *selection: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(config),
            "run",
            f"{url}/openapi.json",
            *selection,
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(EXAMPLES),
            "--phases",
            "examples,coverage,fuzzing",
            "--workers",
            "2",
            "--request-timeout",
            "120",
            # Host plans run Ansible and reconcile-now waits for the worker: seconds, not ms.
            "--max-response-time",
            "120",
            "--seed",
            "12",
            "--report",
            "junit",
            "--report-dir",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-20_000:]
    assert "Server error" not in output
