"""PostgreSQL stopped for ~10 s under 20 concurrent clients (issue 12, "Database outages").

A real cluster of its own (the session one is shared), the API served by uvicorn, the worker
beside it. While the database is away every answer is 503 with ``Retry-After`` and a
problem+json body: no 500, no dropped connection. Every write the API acknowledged is there
afterwards, service comes back within 2 s of the database, and the worker logs the outage
once and the recovery once, not once per retry.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import Settings
from controller.store.migrate import upgrade
from controller.store.outage import Backoff
from controller.worker import build_worker
from lab.localpg import LocalPostgres, throwaway_postgres
from tests.integration.conftest import StepClock, issue_token
from tests.integration.served import served

CLIENTS = 20
OUTAGE_S = 10.0
RECOVERY_S = 2.0


@pytest.fixture
def own_pg() -> Iterator[LocalPostgres]:
    with throwaway_postgres("sluice-pg-outage-") as server:
        yield server


@dataclass
class Outcome:
    sent_at: float
    status: int | None  # None: the connection failed (refused, reset, no answer)
    retry_after: str | None = None
    content_type: str | None = None
    created: str | None = None  # the token name an acknowledged write made


@dataclass
class Load:
    url: str
    headers: dict[str, str]
    stop: threading.Event = field(default_factory=threading.Event)
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, index: int) -> None:
        """Alternate a write (a new token) and a read (the token list), recording each."""
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=30) as http:
            for step in range(1_000_000):
                if self.stop.is_set():
                    return
                name = f"c{index}-{step}"
                sent = time.monotonic()
                try:
                    if step % 2 == 0:
                        body = {"name": name, "role": "viewer"}
                        response = http.post("/api/v1/tokens", json=body)
                    else:
                        response = http.get("/api/v1/tokens", params={"limit": 5})
                except httpx.TransportError:
                    self.record(Outcome(sent, None))
                    continue
                self.record(
                    Outcome(
                        sent,
                        response.status_code,
                        response.headers.get("retry-after"),
                        response.headers.get("content-type"),
                        name if response.status_code == 201 else None,
                    )
                )
                time.sleep(0.05)

    def record(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)


def test_database_outage_answers_503_loses_nothing_and_recovers(
    own_pg: LocalPostgres, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="controller.worker")
    db_url = own_pg.url("postgres")
    upgrade(db_url)
    admin = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.ADMIN)}"}
    settings = Settings.for_database(db_url)
    stop_worker = threading.Event()
    with (
        settings.gnmi.session_pool() as pool,
        served(create_app(settings, clock=StepClock())) as url,
    ):
        worker, close = build_worker(settings, pool, environ=os.environ)
        worker_thread = threading.Thread(
            target=worker.run, args=(stop_worker, 0.05, Backoff(first_s=0.05, cap_s=0.5))
        )
        worker_thread.start()
        load = Load(url, admin)
        threads = [threading.Thread(target=load.client, args=(i,)) for i in range(CLIENTS)]
        try:
            for thread in threads:
                thread.start()
            _wait_for(lambda: len(load.outcomes) >= 3 * CLIENTS, "traffic before the outage")
            own_pg.stop()
            down_at = time.monotonic()
            time.sleep(OUTAGE_S)
            own_pg.start()
            back_at = time.monotonic()
            # Traffic after the return: enough requests sent past the recovery allowance.
            _wait_for(
                lambda: sum(o.sent_at > back_at + RECOVERY_S for o in load.outcomes) >= 2 * CLIENTS,
                "traffic after the return",
            )
        finally:
            load.stop.set()
            for thread in threads:
                thread.join(60)
            _wait_for(
                lambda: "database reachable again" in caplog.text, "the worker's recovery line"
            )
            stop_worker.set()
            worker_thread.join(60)
            close()

        outcomes = list(load.outcomes)
        during = [o for o in outcomes if down_at < o.sent_at < back_at]
        after = [o for o in outcomes if o.sent_at > back_at + RECOVERY_S]
        assert [o for o in outcomes if o.status is None] == [], "dropped connections"
        assert [
            o.status
            for o in outcomes
            if o.status is not None and o.status >= 500 and o.status != 503
        ] == []
        assert during, "no request was made while the database was away"
        unavailable = [o for o in during if o.status == 503]
        assert len(unavailable) >= CLIENTS  # every client met the outage
        assert all(o.retry_after == "2" for o in unavailable)
        assert all(o.content_type == "application/problem+json" for o in unavailable)
        assert {o.status for o in during} <= {200, 201, 503}
        assert [o.status for o in after if o.status not in (200, 201)] == []

        acknowledged = {o.created for o in outcomes if o.created is not None}
        stored = _token_names(url, admin)
        assert acknowledged - stored == set(), "acknowledged writes lost"

    worker_lines = [r.getMessage() for r in caplog.records if r.name == "controller.worker"]
    assert sum("database unreachable" in line for line in worker_lines) == 1
    assert sum("database reachable again" in line for line in worker_lines) == 1
    assert not any(
        "Traceback" in (r.exc_text or "") for r in caplog.records if r.name == "controller.worker"
    )


def _token_names(url: str, headers: dict[str, str]) -> set[str]:
    names: set[str] = set()
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        offset = 0
        while True:
            page = http.get("/api/v1/tokens", params={"limit": 500, "offset": offset}).json()
            names.update(item["name"] for item in page["items"])
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return names


def _wait_for(condition: object, what: str, timeout_s: float = 90.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
