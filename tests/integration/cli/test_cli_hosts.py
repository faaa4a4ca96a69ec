"""``sluice hosts plan|apply|status`` against a real API (uvicorn on 127.0.0.1, PostgreSQL)
and the worker running real ansible-playbook on the harmless local test play
(tests/support/host_runs.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.main import create_app
from controller.cli.exit_codes import ExitCode
from controller.settings import Settings
from tests.integration.cli.support import Cli, issue_tokens
from tests.integration.served import served
from tests.support.host_runs import four_host_intent, local_config
from tests.support.worker import running_worker


@pytest.fixture
def hosts_cli(db_url: str, tmp_path: Path) -> Iterator[Cli]:
    tokens = issue_tokens(db_url)
    config = local_config(tmp_path, fail_hosts=["host3"], change_hosts=["host1"])
    settings = Settings.for_database(db_url, hosts=config)
    with running_worker(settings), served(create_app(settings), stop_wait_s=120) as url:
        cli = Cli(base_url=url, db_url=db_url, tokens=tokens)
        intent = tmp_path / "intent.json"  # JSON is YAML: the CLI reads it as a YAML file
        intent.write_text(json.dumps(four_host_intent()))
        assert cli.run("apply", "-f", str(intent), token="operator").code == 0
        yield cli


def test_plan_shows_each_host_and_fails_with_the_failed_host(hosts_cli: Cli) -> None:
    done = hosts_cli.run("hosts", "plan", token="operator")
    assert done.code == ExitCode.HOSTS_FAILED, done.stderr
    assert "told to fail on host3" in done.stdout
    assert "Host plan run 1 completed (1 would change, 2 ok, 1 failed)." in done.stdout
    as_json = json.loads(hosts_cli.run("hosts", "status", "1", "-o", "json", token="viewer").stdout)
    assert {r["host"]: r["status"] for r in as_json["results"]} == {
        "host1": "changed",
        "host2": "ok",
        "host3": "failed",
        "host4": "ok",
    }


def test_apply_follows_the_batches_until_the_budget_stops_it(hosts_cli: Cli) -> None:
    done = hosts_cli.run("hosts", "apply", "--batch-size", "2", "--poll", "0.2", token="operator")
    assert done.code == ExitCode.HOSTS_FAILED, done.stderr
    assert "Started host apply run 1 (2 batches)." in done.stderr
    lines = done.stdout.splitlines()
    # Batch [host1, host2] passes; batch [host3, host4] has host3 failing: 1 > budget 0.
    assert "batch 1/2: host1 changed" in lines
    assert "batch 1/2: host2 ok" in lines
    assert "batch 2/2: host3 failed (told to fail on host3)" in lines
    assert "batch 2/2: host4 ok" in lines
    assert lines[-1].startswith("Host apply run 1 halted (")
    listing = hosts_cli.run("hosts", "status", token="viewer")
    assert listing.code == 0
    assert "halted" in listing.stdout


def test_a_viewer_cannot_apply(hosts_cli: Cli) -> None:
    done = hosts_cli.run("hosts", "apply", token="viewer")
    assert done.code == ExitCode.AUTH
    assert hosts_cli.run("hosts", "status", token="viewer").stdout.count("apply") == 0
