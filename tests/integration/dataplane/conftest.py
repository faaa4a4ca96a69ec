"""Fixtures for the data plane: the real binary, a real redis-server on 127.0.0.1 seeded as a
booted vsonic switch, and helpers to read COUNTERS_DB the way a collector would."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from vsonic.dataplane import AGENT, BUILD_COMMAND, ROOT, find_binary
from vsonic.db import COUNTERS_DB, RedisStore
from vsonic.redis_process import RedisProcess, free_port
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.tether import start_tethered

Fields = dict[str, str]


@pytest.fixture(scope="session")
def dataplane_binary() -> Path:
    # Built once per session, so the tests run what the working tree holds.
    subprocess.run(BUILD_COMMAND, cwd=ROOT, check=True, timeout=900)
    return find_binary(build=False)


@pytest.fixture(scope="session")
def agent_binary() -> Path:
    """The qos-agent as the working tree builds it by default (the build with feature ``sai``
    has a target directory of its own, ``target/sai``: scripts/test-rust.sh)."""
    subprocess.run(AGENT.build_command, cwd=ROOT, check=True, timeout=900)
    agent = find_binary(build=False, binary=AGENT)
    shown = subprocess.run([agent, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, f"{agent} --help: {shown.stderr}"
    assert "--sai-lib" not in shown.stdout, f"{agent} is the qos-agent with feature sai"
    return agent


@dataclass
class SeededSwitch:
    """A booted switch's Redis: 2 ports at 1 Gb/s (Ethernet0, Ethernet4), oids from the seed."""

    port: int
    store: RedisStore
    server: RedisProcess

    def seed(self) -> None:
        seed_store(self.store, SwitchSeed(hostname="vs1", ports=default_ports(2, speed_gbps=1)))

    def restart_empty(self) -> None:
        """Redis stops and comes back on the same port, empty (no persistence), as after a
        crash; the caller seeds and configures it again."""
        self.server.stop()
        eventually(lambda: self.server.pid() is None or not _alive(self.server), "redis stopped")
        self.server.start()

    def config(self) -> redis.Redis[str]:
        return self.store.client(4)

    def counters(self) -> redis.Redis[str]:
        return self.store.client(COUNTERS_DB)

    def state(self) -> redis.Redis[str]:
        return self.store.client(6)

    def write_config(self, entries: dict[str, Fields]) -> None:
        pipe = self.config().pipeline(transaction=True)
        for key, fields in entries.items():
            pipe.delete(key)
            stored: dict[str | bytes, bytes | float | int | str] = {}
            stored.update(fields)
            pipe.hset(key, mapping=stored)
        pipe.execute()

    def queue_counters(self, prefix: str, names: list[str]) -> list[Fields]:
        """The counter hashes of ``Ethernet0:3``-style queue names, read in one MULTI so they
        come from the same publication."""
        oids = self.counters().hgetall("COUNTERS_QUEUE_NAME_MAP")
        pipe = self.counters().pipeline(transaction=True)
        for name in names:
            pipe.hgetall(f"{prefix}:{oids[name]}")
        result: list[Fields] = pipe.execute()
        return result


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[SeededSwitch]:
    server = RedisProcess(port=free_port(), directory=tmp_path / "redis")
    server.start()
    store = RedisStore.connect(server.host, server.port)
    try:
        seeded = SeededSwitch(server.port, store, server)
        seeded.seed()
        yield seeded
    finally:
        store.close()
        server.stop()


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> int:
        """SIGTERM, then the exit code (a hang fails the test after 30 s)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def start_dataplane(
    dataplane_binary: Path, switch: SeededSwitch, tmp_path: Path
) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(traffic: str, *flags: str) -> Running:
        traffic_file = tmp_path / f"traffic-{len(started)}.txt"
        traffic_file.write_text(traffic)
        log = tmp_path / f"dataplane-{len(started)}.log"
        with log.open("wb") as out:
            process = start_tethered(
                [
                    str(dataplane_binary),
                    "--redis-port",
                    str(switch.port),
                    "--traffic",
                    str(traffic_file),
                    *flags,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        running = Running(process, log)
        started.append(running)
        return running

    try:
        yield start
    finally:
        for running in started:
            if running.process.poll() is None:
                running.process.kill()
                running.process.wait(timeout=30)


def _alive(server: RedisProcess) -> bool:
    try:
        client = redis.Redis(host=server.host, port=server.port, socket_connect_timeout=0.2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.ConnectionError:
        return False


def eventually(check: Callable[[], bool], what: str, deadline_s: float = 60.0) -> None:
    """Polls ``check`` until it holds; a generous deadline, not a timing claim."""
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.05)
