"""``sluice health`` and ``sluice top`` against a real API server reading a real Prometheus."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from api.main import create_app
from controller.cli import CliDeps
from controller.cli.exit_codes import ExitCode
from controller.settings import PrometheusSettings, Settings
from lab.localpg import free_port
from lab.prometheus import LocalPrometheus
from tests.integration.cli.support import Cli, issue_tokens
from tests.integration.conftest import put_intent
from tests.integration.served import served
from tests.integration.telemetry.fabric_history import last_point, telemetry_intent

pytestmark = pytest.mark.integration


def serve_cli(db_url: str, prometheus_url: str, tokens: dict[str, str]) -> Iterator[Cli]:
    app = create_app(
        Settings.for_database(db_url, prometheus=PrometheusSettings(url=prometheus_url)),
    )
    with served(app) as url:
        yield Cli(base_url=url, db_url=db_url, tokens=tokens)


@pytest.fixture(scope="module")
def cli(module_db_url: str, history_prometheus: LocalPrometheus) -> Iterator[Cli]:
    for cli in serve_cli(module_db_url, history_prometheus.url, issue_tokens(module_db_url)):
        admin = {"Authorization": f"Bearer {cli.tokens['admin']}"}
        with httpx.Client(base_url=cli.base_url) as http:
            answer = put_intent(http, admin, telemetry_intent(), 0)  # type: ignore[arg-type]
            assert answer.status_code == 201, answer.text
        yield cli


def test_health_table(cli: Cli) -> None:
    result = cli.run("health", token="viewer")
    assert result.code == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "fabric: warn (1 ok, 1 warn, 0 critical)"
    assert "leaf1" in result.stdout
    assert "warn: leaf2 Ethernet4 queue 1: dropped packets/s 5 >= 1" in result.stdout
    assert "warn: leaf2: the agent runs on its static fallback" in result.stdout


def test_health_as_json(cli: Cli) -> None:
    result = cli.run("health", "-o", "json", token="viewer")
    assert result.code == ExitCode.OK
    doc = json.loads(result.stdout)
    assert [(s["switch"], s["state"]) for s in doc["switches"]] == [
        ("leaf1", "ok"),
        ("leaf2", "warn"),
    ]


def test_top_once_prints_one_frame(cli: Cli) -> None:
    result = cli.run("top", "leaf1", "--once", token="viewer")
    assert result.code == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "leaf1 | agent dynamic (mqecn), heartbeat 0.2 s, orders v3 | stream up, updated 1.0 s ago"
    )
    rows = [line for line in lines if "Ethernet" in line]
    assert len(rows) == 6  # 2 ports x 3 queues
    storage = next(r for r in rows if "Ethernet4" in r and " storage " in r)
    expected = last_point("leaf1", "Ethernet4", "3")
    assert f"{expected.tx_bytes / 1e9:.3g}GB" in storage
    assert expected.threshold is not None
    assert f"{expected.threshold / 1e3:.3g}kB" in storage
    assert "12.0" in storage  # mark %
    assert "computed" in storage


def test_top_refreshes_in_place_for_n_frames(cli: Cli) -> None:
    # Off a terminal rich shows the last frame only; the requests show each refresh.
    asked: list[str] = []

    def counting_http(base_url: str, timeout_s: float) -> httpx.Client:
        def record(request: httpx.Request) -> None:
            asked.append(request.url.path)

        return httpx.Client(base_url=base_url, timeout=timeout_s, event_hooks={"request": [record]})

    deps = CliDeps(make_http=counting_http)
    result = cli.run("top", "leaf2", "-n", "3", "--interval", "0.5", token="viewer", deps=deps)
    assert result.code == ExitCode.OK, result.stderr
    assert asked == ["/api/v1/telemetry/switches/leaf2"] * 3
    assert result.stdout.count("leaf2 | agent fallback (mqecn)") == 1
    assert "stale_fallback" in result.stdout


def test_top_of_an_unknown_switch_is_not_found(cli: Cli) -> None:
    result = cli.run("top", "spine9", "--once", token="viewer")
    assert result.code == ExitCode.NOT_FOUND
    assert "spine9" in result.stderr


def test_prometheus_down_exits_unreachable(module_db_url: str, cli: Cli) -> None:
    for down in serve_cli(module_db_url, f"http://127.0.0.1:{free_port()}", cli.tokens):
        result = down.run("health", token="viewer")
        assert result.code == ExitCode.UNREACHABLE
        assert "no answer from Prometheus" in result.stderr
        assert "Traceback" not in result.stderr
