"""A real Prometheus holding ten minutes of a two-leaf fabric's telemetry (fabric_history.py,
backfilled with promtool), and the API reading it on a fresh migrated database.

To run these tests against the real collector instead, start ``LocalPrometheus`` with the
collector's ``host:port`` as its target (``lab.prometheus.running_prometheus(root, targets)``)
and let it scrape for a while instead of backfilling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab.prometheus import LocalPrometheus, running_prometheus
from tests.integration.conftest import issue_token, put_intent
from tests.integration.telemetry.fabric_history import telemetry_intent, write_history


# Package scope, not session: the tests read the history at the wall clock's now, so it must
# end just before they run. Under pytest-xdist (scripts/test.sh) a worker runs other files
# between this package's; leaving the package stops this Prometheus and coming back makes
# a fresh one, where a session-wide one would have aged by minutes.
@pytest.fixture(scope="package")
def history_end() -> int:
    """The Unix second of the history's last sample: just before the package's tests start."""
    return int(time.time()) - 2


@pytest.fixture(scope="package")
def history_prometheus(
    tmp_path_factory: pytest.TempPathFactory, history_end: int
) -> Iterator[LocalPrometheus]:
    root = tmp_path_factory.mktemp("prometheus")
    history = write_history(root / "history.om", history_end)
    with running_prometheus(root / "server", history=history) as server:
        yield server


@pytest.fixture
def prometheus_scraping(tmp_path: Path) -> Iterator[Callable[[Sequence[str]], LocalPrometheus]]:
    """Start a Prometheus scraping the given ``host:port`` targets (a collector) every second,
    sluice's rules loaded; every one started is stopped after the test."""
    started: list[LocalPrometheus] = []

    def start(targets: Sequence[str]) -> LocalPrometheus:
        server = LocalPrometheus(tmp_path / f"prometheus-{len(started)}", targets=targets)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def wall_clock_app(db_url: str, prometheus_url: str) -> TestClient:
    """The app on ``db_url`` reading ``prometheus_url``, on the wall clock: the history
    Prometheus holds ends now."""
    settings = Settings.for_database(db_url, prometheus=PrometheusSettings(url=prometheus_url))
    return TestClient(create_app(settings))


@pytest.fixture(scope="module")
def viewer_headers(module_db_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(module_db_url, AccessRole.VIEWER)}"}


@pytest.fixture(scope="module")
def admin_headers(module_db_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(module_db_url, AccessRole.ADMIN)}"}


@pytest.fixture(scope="module")
def telemetry_client(
    module_db_url: str, history_prometheus: LocalPrometheus, admin_headers: dict[str, str]
) -> Iterator[TestClient]:
    """The API with the telemetry intent stored, reading the history Prometheus."""
    with wall_clock_app(module_db_url, history_prometheus.url) as client:
        answer = put_intent(client, admin_headers, telemetry_intent(), 0)
        assert answer.status_code in (200, 201), answer.text
        yield client
