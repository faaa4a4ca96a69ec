"""Fixtures for the virtual switch: a real redis-server on 127.0.0.1, stopped after."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.client import gNMIclient  # type: ignore[import-untyped]

from vsonic.db import RedisStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, start_server
from vsonic.redis_process import RedisProcess, free_port
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.subscribe import Timing
from vsonic.switch import Switch, Targets

T = TypeVar("T")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    server = RedisProcess(port=free_port(), directory=Path(tmp_path_factory.mktemp("redis")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_store(redis_server: RedisProcess) -> Iterator[RedisStore]:
    """A store over the session's Redis, emptied before each test."""
    store = RedisStore.connect(redis_server.host, redis_server.port)
    store.client(0).flushall()
    try:
        yield store
    finally:
        store.close()


@dataclass
class RunningSwitch:
    """A standalone virtual switch (real Redis, real gRPC) and what a test needs to reach it."""

    port: int
    store: RedisStore
    credentials: Credentials

    def client(self, password: str | None = None) -> gNMIclient:
        """A connected pygnmi client; close it after (``with``)."""
        client = gNMIclient(
            target=("127.0.0.1", self.port),
            username=self.credentials.username,
            password=self.credentials.password if password is None else password,
            insecure=True,
            gnmi_timeout=5,
        )
        call_with_timeout(client.connect)
        return client

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(f"127.0.0.1:{self.port}")

    def metadata(self) -> list[tuple[str, str]]:
        return [("username", self.credentials.username), ("password", self.credentials.password)]


def call_with_timeout(fn: Callable[..., T], *args: Any, timeout_s: float = 20, **kwargs: Any) -> T:
    """pygnmi's Get and Set carry no gRPC deadline: bound them so a hang fails the test."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn, *args, **kwargs).result(timeout=timeout_s)
    finally:
        pool.shutdown(wait=False)


def status_code(error: BaseException) -> grpc.StatusCode:
    """The gRPC status under a pygnmi gNMIException (or of a grpc.RpcError itself)."""
    original: Any = getattr(error, "orig_exc", error)
    code: grpc.StatusCode = original.code()
    return code


@pytest.fixture
def vswitch(redis_store: RedisStore) -> Iterator[RunningSwitch]:
    """Ethernet0 and Ethernet4 at 100G on real Redis, served on a free loopback port."""
    seed_store(redis_store, SwitchSeed(hostname="vs1", ports=default_ports(2)))
    credentials = Credentials(username="admin", password=secrets.token_hex(8))
    # Short ON_CHANGE re-read period keeps subscription tests quick; SAMPLE keeps 1 s minimum.
    service = GnmiService(
        Targets([Switch("vs1", redis_store)], fleet=False),
        Clock(),
        credentials,
        Timing(on_change_poll_s=0.05),
    )
    running = start_server("127.0.0.1:0", service)
    try:
        yield RunningSwitch(running.port, redis_store, credentials)
    finally:
        running.stop(grace_s=0.5)
