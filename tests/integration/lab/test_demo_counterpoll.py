"""The demo's ``counterpoll`` (``lab.demo_agents.poll_counters_every``) on a real redis: it
writes a flex counter group only when it differs, since on SONiC's own software every write is
a keyspace event orchagent acts on (docs/demo.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from lab.demo_agents import CONFIG_DB, COUNTERS_DB, STATE_DB, SwitchLink, poll_counters_every
from vsonic.redis_process import RedisProcess, free_port


@pytest.fixture
def link(tmp_path: Path) -> Iterator[SwitchLink]:
    server = RedisProcess(port=free_port(), directory=tmp_path / "redis")
    server.start()

    def db(n: int) -> redis.Redis[str]:
        return redis.Redis(host="127.0.0.1", port=server.port, db=n, decode_responses=True)

    switch = SwitchLink("leaf1", db(CONFIG_DB), db(COUNTERS_DB), db(STATE_DB), 0, tmp_path / "x")
    try:
        yield switch
    finally:
        switch.close()
        server.stop()


def writes(link: SwitchLink, act: Callable[[], None]) -> list[str]:
    """The FLEX_COUNTER_TABLE keys written while ``act()`` ran, from keyspace events."""
    events = link.config.pubsub(ignore_subscribe_messages=True)
    events.psubscribe(f"__keyspace@{CONFIG_DB}__:FLEX_COUNTER_TABLE|*")
    try:
        act()
        seen: list[str] = []
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            message = events.get_message(timeout=0.05)
            if message is not None:
                seen.append(str(message["channel"]).split(":", 1)[1])
        return seen
    finally:
        events.close()


def test_a_group_is_written_only_when_it_differs(link: SwitchLink) -> None:
    first = writes(link, lambda: poll_counters_every(link, 100))
    assert sorted(first) == ["FLEX_COUNTER_TABLE|QUEUE", "FLEX_COUNTER_TABLE|WRED_ECN_QUEUE"]
    for group in ("QUEUE", "WRED_ECN_QUEUE"):
        assert link.config.hgetall(f"FLEX_COUNTER_TABLE|{group}") == {
            "FLEX_COUNTER_STATUS": "enable",
            "POLL_INTERVAL": "100",
        }
    assert writes(link, lambda: poll_counters_every(link, 100)) == []
    link.config.hset("FLEX_COUNTER_TABLE|QUEUE", "POLL_INTERVAL", "1000")  # counterpoll's default
    assert writes(link, lambda: poll_counters_every(link, 100)) == ["FLEX_COUNTER_TABLE|QUEUE"]
    assert link.config.hget("FLEX_COUNTER_TABLE|QUEUE", "POLL_INTERVAL") == "100"
