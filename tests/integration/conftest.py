"""Fixtures for the API tests: an app on a fresh migrated database, one token per role."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.services.common import Actor
from controller.services.tokens import AccessRole, TokenService
from controller.settings import Settings
from controller.store.db import make_engine, make_sessions
from tests.integration.served import served
from tests.support.worker import running_worker

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class StepClock:
    """A deterministic clock: each reading is one second after the previous one."""

    def __init__(self, start: datetime = T0) -> None:
        self._ticks = itertools.count()
        self._start = start

    def __call__(self) -> datetime:
        return self._start + timedelta(seconds=next(self._ticks))


_SMALL_INTENT: dict[str, Any] = {
    "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 2_000_000},
    "switches": [
        {
            "name": "leaf1",
            "role": "leaf",
            "gnmi": {"address": "127.0.0.1", "port": 50051},
            "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "ports": [{"name": "Ethernet0", "speed_gbps": 25}],
        },
        {
            "name": "spine1",
            "role": "spine",
            "gnmi": {"address": "127.0.0.1", "port": 50052},
            "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "ports": [{"name": "Ethernet0", "speed_gbps": 100}],
        },
    ],
    "hosts": [{"name": "host1", "address": "10.0.1.11", "nic_gbps": 25}],
    "service_classes": [
        {"name": "bulk", "dscp": [10], "queue": 1, "scheduling": {"type": "DWRR", "weight": 30}},
        {"name": "web", "dscp": [18], "queue": 2, "scheduling": {"type": "DWRR", "weight": 70}},
        {
            "name": "ctrl",
            "dscp": [48],
            "queue": 7,
            "scheduling": {"type": "STRICT"},
            "ecn": "off",
        },
    ],
}


def small_intent() -> dict[str, Any]:
    """Two switches (one 25G port, one 100G port), a host and three classes; valid."""
    return copy.deepcopy(_SMALL_INTENT)


def issue_token(db_url: str, role: AccessRole, name: str | None = None) -> str:
    engine = make_engine(db_url, pool_size=1)
    try:
        service = TokenService(make_sessions(engine), clock=StepClock())
        actor = Actor(name="test-bootstrap", request_id="test")
        return service.create(name=name or f"t-{role.value}", role=role, actor=actor).secret
    finally:
        engine.dispose()


@contextmanager
def _client(db_url: str) -> Iterator[TestClient]:
    """The app and, beside it, the worker that does what the app records."""
    settings = Settings.for_database(db_url)
    with running_worker(settings), TestClient(create_app(settings, clock=StepClock())) as client:
        yield client


def _auth_headers(db_url: str) -> dict[str, dict[str, str]]:
    return {
        role.value: {"Authorization": f"Bearer {issue_token(db_url, role)}"} for role in AccessRole
    }


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    """The app on a fresh migrated database."""
    with _client(db_url) as test_client:
        yield test_client


@pytest.fixture
def auth(db_url: str) -> dict[str, dict[str, str]]:
    """Authorization headers per role name (tokens named t-viewer, t-operator, t-admin)."""
    return _auth_headers(db_url)


@pytest.fixture(scope="module")
def module_client(module_db_url: str) -> Iterator[TestClient]:
    """The app on a database shared by one module: for tests that leave it as they found it."""
    with _client(module_db_url) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def module_auth(module_db_url: str) -> dict[str, dict[str, str]]:
    return _auth_headers(module_db_url)


def with_if_match(headers: dict[str, str], version: int) -> dict[str, str]:
    return {**headers, "If-Match": f'"{version}"'}


def put_intent(
    client: TestClient, headers: dict[str, str], intent: dict[str, Any], version: int
) -> Any:
    return client.put(
        "/api/v1/intent",
        json={"intent": intent, "reason": "test"},
        headers=with_if_match(headers, version),
    )


@pytest.fixture
def live_api_url(db_url: str) -> Iterator[str]:
    """The app served by uvicorn in a thread on 127.0.0.1 (a free port); stopped after."""
    app = create_app(Settings.for_database(db_url), clock=StepClock())
    with served(app) as url:
        yield url
