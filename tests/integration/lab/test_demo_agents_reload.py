"""The data plane binary re-reads its traffic file on SIGHUP (what the agent demo relies on to
start traffic after the rollout): the classes in force stop, the new ones send, a file that
does not parse is logged and the traffic in force stays, and SIGTERM still stops it cleanly.
Real binary, real redis-server on 127.0.0.1 seeded as a booted vsonic switch; the only
deadlines are generous "eventually" ones."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.integration.dataplane.conftest import eventually
from vsonic.dataplane import DATAPLANE, ROOT, find_binary
from vsonic.db import COUNTERS_DB, RedisStore
from vsonic.redis_process import RedisProcess, free_port
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.tether import start_tethered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def counters(tmp_path: Path) -> Iterator[tuple[int, redis.Redis[str]]]:
    """A booted switch's Redis (1 port, Ethernet0 at 1 Gb/s): its port and COUNTERS_DB."""
    server = RedisProcess(port=free_port(), directory=tmp_path / "redis")
    server.start()
    store = RedisStore.connect(server.host, server.port)
    try:
        seed_store(store, SwitchSeed(hostname="vs1", ports=default_ports(1, speed_gbps=1)))
        yield server.port, store.client(COUNTERS_DB)
    finally:
        store.close()
        server.stop()


def _packets(db: redis.Redis[str], queue: int) -> int:
    oid = db.hget("COUNTERS_QUEUE_NAME_MAP", f"Ethernet0:{queue}")
    return int(db.hget(f"COUNTERS:{oid}", "SAI_QUEUE_STAT_PACKETS") or 0)


def _events(log: Path, name: str) -> list[dict[str, object]]:
    lines = log.read_text(errors="replace").splitlines()
    return [
        e for e in (json.loads(x) for x in lines if x.startswith("{")) if e.get("event") == name
    ]


def test_sighup_swaps_the_traffic_and_a_bad_file_keeps_it(
    counters: tuple[int, redis.Redis[str]], tmp_path: Path
) -> None:
    subprocess.run(DATAPLANE.build_command, cwd=ROOT, check=True, timeout=900)
    redis_port, db = counters
    traffic, log = tmp_path / "traffic.txt", tmp_path / "dataplane.log"
    traffic.write_text("first port=Ethernet0 queue=0 kind=dctcp\n")
    with log.open("wb") as out:
        process = start_tethered(
            [str(find_binary(build=False)), "--redis-port", str(redis_port),
             "--traffic", str(traffic), "--flex-interval-ms", "100"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        eventually(lambda: _packets(db, 0) > 1_000, "the first class sending on queue 0")
        assert _packets(db, 1) == 0

        traffic.write_text("second port=Ethernet0 queue=1 kind=dctcp\n")
        process.send_signal(signal.SIGHUP)
        eventually(lambda: _packets(db, 1) > 1_000, "the second class sending on queue 1")
        assert [e["classes"] for e in _events(log, "traffic_reloaded")] == [1]

        # Queue 0's senders stopped at the reload: its count settles (two flex publications,
        # 100 ms apart, equal) while queue 1's keeps growing.
        def queue0_settled() -> bool:
            before = _packets(db, 0)
            time.sleep(0.25)
            return _packets(db, 0) == before

        eventually(queue0_settled, "queue 0 no longer sending")

        traffic.write_text("oops port=Ethernet0 kind=dctcp\n")  # no queue or dscp
        process.send_signal(signal.SIGHUP)
        eventually(lambda: bool(_events(log, "traffic_reload_refused")), "the refusal logged")
        refused = _events(log, "traffic_reload_refused")[0]
        assert "traffic line 1" in str(refused["error"])
        at_refusal = _packets(db, 1)
        eventually(lambda: _packets(db, 1) > at_refusal + 1_000, "queue 1 still sending")
        assert process.poll() is None
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    assert code == 0
