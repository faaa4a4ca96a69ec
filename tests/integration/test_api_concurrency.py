"""Two writers with the same If-Match: exactly one wins, the loser gets 412/409 and can retry.

The writers are real HTTP clients against uvicorn. To be sure both requests are in flight at
once (not merely started together), the test holds the intent-writer lock itself until
PostgreSQL shows both requests waiting on it, then lets them go.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
from sqlalchemy.engine import make_url

from controller.store.db import INTENT_WRITE_LOCK_KEY
from tests.integration.conftest import small_intent

WAITERS = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"


def _dsn(db_url: str) -> str:
    return make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _intent(rtt_us: int) -> dict[str, Any]:
    intent = small_intent()
    intent["fabric"]["base_rtt_us"] = rtt_us
    return intent


def _put(base: str, headers: dict[str, str], rtt_us: int, version: int) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=60) as http:
        return http.put(
            "/api/v1/intent",
            json={"intent": _intent(rtt_us), "reason": f"rtt {rtt_us}"},
            headers={**headers, "If-Match": f'"{version}"'},
        )


def _wait_for_waiters(conn: psycopg.Connection[Any], count: int) -> None:
    """Poll until ``count`` sessions wait on an advisory lock (readiness, not a time bound)."""
    while True:
        row = conn.execute(WAITERS).fetchone()
        if row is not None and row[0] >= count:
            return
        time.sleep(0.02)


def test_same_if_match_from_two_clients_one_wins_nothing_lost(
    live_api_url: str, auth: Any, db_url: str
) -> None:
    headers = auth["operator"]
    assert _put(live_api_url, headers, 40, 0).status_code == 201

    with (
        psycopg.connect(_dsn(db_url)) as holder,
        psycopg.connect(_dsn(db_url), autocommit=True) as watcher,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (INTENT_WRITE_LOCK_KEY,))
        futures = {rtt: pool.submit(_put, live_api_url, headers, rtt, 1) for rtt in (50, 60)}
        _wait_for_waiters(watcher, 2)
        holder.commit()  # releases the lock: the two writers now race for it
        responses = {rtt: future.result() for rtt, future in futures.items()}

    statuses = sorted(r.status_code for r in responses.values())
    assert statuses[0] == 200
    assert statuses[1] in (409, 412)
    winner = next(rtt for rtt, r in responses.items() if r.status_code == 200)
    loser = next(rtt for rtt, r in responses.items() if r.status_code != 200)
    assert responses[loser].headers["content-type"] == "application/problem+json"

    with httpx.Client(base_url=live_api_url, timeout=60) as http:
        current = http.get("/api/v1/intent", headers=headers)
        assert current.headers["ETag"] == '"2"'
        assert current.json()["intent"]["fabric"]["base_rtt_us"] == winner

    # The loser reads again and retries: its change lands as version 3, the winner's stays 2.
    assert _put(live_api_url, headers, loser, 2).status_code == 200
    with httpx.Client(base_url=live_api_url, timeout=60) as http:
        versions = http.get("/api/v1/intent/versions", headers=headers).json()
        assert [v["number"] for v in versions["items"]] == [3, 2, 1]
        v2 = http.get("/api/v1/intent/versions/2", headers=headers).json()
        v3 = http.get("/api/v1/intent/versions/3", headers=headers).json()
    assert v2["intent"]["fabric"]["base_rtt_us"] == winner
    assert v3["intent"]["fabric"]["base_rtt_us"] == loser


def test_many_racing_writers_never_share_a_version_number(
    live_api_url: str, auth: Any, db_url: str
) -> None:
    """Eight writers, each retrying on 412 until it lands: eight new versions, no gaps."""
    headers = auth["operator"]
    assert _put(live_api_url, headers, 40, 0).status_code == 201
    start = threading.Barrier(8)

    def writer(rtt: int) -> int:
        start.wait()
        with httpx.Client(base_url=live_api_url, timeout=60) as http:
            while True:
                head = http.get("/api/v1/intent", headers=headers).headers["ETag"]
                response = http.put(
                    "/api/v1/intent",
                    json={"intent": _intent(rtt), "reason": f"rtt {rtt}"},
                    headers={**headers, "If-Match": head},
                )
                if response.status_code == 200:
                    return int(response.json()["version"]["number"])
                assert response.status_code in (409, 412), response.text

    rtts = list(range(41, 49))
    with ThreadPoolExecutor(max_workers=8) as pool:
        numbers = sorted(pool.map(writer, rtts))
    assert numbers == list(range(2, 10))
    with httpx.Client(base_url=live_api_url, timeout=60) as http:
        stored = {
            http.get(f"/api/v1/intent/versions/{n}", headers=headers).json()["intent"]["fabric"][
                "base_rtt_us"
            ]
            for n in numbers
        }
    assert stored == set(rtts)
