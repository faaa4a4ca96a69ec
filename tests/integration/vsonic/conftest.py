"""Fixtures for the virtual switch: a real redis-server on 127.0.0.1, stopped after, and gNMI
over TLS (the switch's own self-signed certificate, trusted by every client here)."""

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

from tests.integration.tls_certs import self_signed_tls
from vsonic.db import RedisStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
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


@pytest.fixture(scope="session")
def switch_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The virtual switches' certificate (its own CA, naming 127.0.0.1)."""
    return self_signed_tls(Path(tmp_path_factory.mktemp("switch-tls")))


def tls_channel(port: int, tls: TlsFiles) -> grpc.Channel:
    """A gRPC channel to a switch on 127.0.0.1 that trusts its certificate."""
    trust = grpc.ssl_channel_credentials(root_certificates=tls.cert.read_bytes())
    return grpc.secure_channel(f"127.0.0.1:{port}", trust)


def tls_client(port: int, tls: TlsFiles, credentials: Credentials) -> gNMIclient:
    """A pygnmi client (not yet connected) to a switch on 127.0.0.1, trusting its certificate."""
    return gNMIclient(
        target=("127.0.0.1", port),
        username=credentials.username,
        password=credentials.password,
        path_root=str(tls.cert),
        gnmi_timeout=5,
    )


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
    tls: TlsFiles

    def client(self, password: str | None = None) -> gNMIclient:
        """A connected pygnmi client over TLS; close it after (``with``)."""
        credentials = self.credentials
        if password is not None:
            credentials = Credentials(credentials.username, password)
        client = tls_client(self.port, self.tls, credentials)
        call_with_timeout(client.connect)
        return client

    def channel(self) -> grpc.Channel:
        return tls_channel(self.port, self.tls)

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
def vswitch(redis_store: RedisStore, switch_tls: TlsFiles) -> Iterator[RunningSwitch]:
    """Ethernet0 and Ethernet4 at 100G on real Redis, served over TLS on a free loopback port."""
    yield from _served(redis_store, switch_tls, fleet=False)


@pytest.fixture
def fleet_vswitch(redis_store: RedisStore, switch_tls: TlsFiles) -> Iterator[RunningSwitch]:
    """``vswitch`` served as a fleet server's switch ``vs1`` (the gNMI prefix target)."""
    yield from _served(redis_store, switch_tls, fleet=True)


def _served(redis_store: RedisStore, switch_tls: TlsFiles, fleet: bool) -> Iterator[RunningSwitch]:
    seed_store(redis_store, SwitchSeed(hostname="vs1", ports=default_ports(2)))
    credentials = Credentials(username="admin", password=secrets.token_hex(8))
    # Short ON_CHANGE re-read period keeps subscription tests quick; SAMPLE keeps 1 s minimum.
    service = GnmiService(
        Targets([Switch("vs1", redis_store)], fleet=fleet),
        Clock(),
        credentials,
        Timing(on_change_poll_s=0.05),
    )
    running = start_server("127.0.0.1:0", service, switch_tls)
    try:
        yield RunningSwitch(running.port, redis_store, credentials, switch_tls)
    finally:
        running.stop(grace_s=0.5)
