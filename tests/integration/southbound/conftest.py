"""Virtual switches for the southbound tests: one real redis-server and one real gNMI server
(vsonic, real gRPC over TLS, as every switch session is) per switch of the example intent,
on 127.0.0.1, stopped after.

The Redis servers live for the session (starting one takes a moment); each test flushes and
re-seeds them and starts fresh gNMI servers, so tests do not see each other's writes.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from controller.intent.loader import load_intent_file
from controller.intent.models import GnmiEndpoint, Intent
from controller.intent.models import Switch as IntentSwitch
from controller.sonic.compile import compile_switch
from controller.sonic.model import SwitchConfig
from controller.southbound.credentials import resolve_secret
from controller.southbound.gnmi import GnmiTarget, TlsOptions, session_tls, target_for_switch
from tests.integration.tls_certs import self_signed_tls
from vsonic.db import RedisStore
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.redis_process import RedisProcess, free_port
from vsonic.seed import PortSeed, SwitchSeed, seed_store
from vsonic.switch import Switch, Targets

EXAMPLE_INTENT = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
SWITCH_COUNT = 4  # leaf1, leaf2, spine1, spine2 in docs/example-intent.yaml
USERNAME = "admin"


class SetCounter:
    """How many SetRequests a switch's gNMI server received (accepted or not)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self) -> None:
        with self._lock:
            self.count += 1


class CountingGnmiService(GnmiService):
    """vsonic's real gNMI service, counting the Set and Get RPCs it serves."""

    def __init__(
        self, *args: Any, counter: SetCounter, gets: SetCounter | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._counter = counter
        self._gets = gets or SetCounter()

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._counter.add()
        return super().Set(request, context)

    def Get(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._gets.add()
        return super().Get(request, context)


@dataclass
class VirtualSwitch:
    """One virtual switch: its Redis (CONFIG_DB readable directly) and its gNMI server."""

    name: str
    store: RedisStore
    credentials: Credentials
    tls: TlsFiles | None = None
    sets: SetCounter = field(default_factory=SetCounter)
    gets: SetCounter = field(default_factory=SetCounter)
    port: int = 0
    server: RunningServer | None = None
    # The vsonic switch model, kept across restarts: its GCU pacing and its applied-op count.
    model: Switch | None = None

    def start(self) -> None:
        """Serve on a free port the first time, on the same port after a stop."""
        if self.model is None:
            self.model = Switch(self.name, self.store)
        service = CountingGnmiService(
            Targets([self.model], fleet=False),
            Clock(),
            self.credentials,
            counter=self.sets,
            gets=self.gets,
        )
        self.server = start_server(f"127.0.0.1:{self.port}", service, self.tls)
        self.port = self.server.port

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace_s=0.2)
            self.server = None

    def config_db(self) -> dict[str, dict[str, str]]:
        """CONFIG_DB straight from Redis (``TABLE|key`` -> fields), not through gNMI."""
        client = self.store.client(4)
        return {key: client.hgetall(key) for key in client.scan_iter("*")}


@dataclass
class Fabric:
    """The example intent, re-pointed at the virtual switches, and everything to reach them."""

    intent: Intent
    switches: dict[str, VirtualSwitch]
    password: str = field(repr=False)
    tls: TlsOptions | None = None  # how the controller reaches the switches

    def desired(self) -> dict[str, SwitchConfig]:
        return {s.name: compile_switch(self.intent, s) for s in self.intent.switches}

    def targets(self) -> dict[str, GnmiTarget]:
        environ = {"SLUICE_GNMI_PASSWORD": self.password}

        def resolve(ref: str) -> SecretStr:
            return resolve_secret(ref, environ=environ)

        return {
            s.name: target_for_switch(s, resolve, username=USERNAME, tls=self.tls)
            for s in self.intent.switches
        }


@pytest.fixture(scope="session")
def redis_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RedisProcess]]:
    servers: list[RedisProcess] = []
    try:
        for i in range(SWITCH_COUNT):
            directory = Path(tmp_path_factory.mktemp(f"southbound-redis{i}"))
            server = RedisProcess(port=free_port(), directory=directory)
            server.start()
            servers.append(server)
        yield servers
    finally:
        # Each stop takes a few seconds (redis-server's SHUTDOWN): stop them side by side.
        with ThreadPoolExecutor(max_workers=SWITCH_COUNT) as pool:
            list(pool.map(RedisProcess.stop, servers))


def _seed(switch: IntentSwitch) -> SwitchSeed:
    ports = tuple(PortSeed(p.name, p.speed_gbps) for p in switch.ports)
    return SwitchSeed(hostname=switch.name, ports=ports)


@pytest.fixture(scope="session")
def switch_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The switches' certificate (its own CA, naming 127.0.0.1)."""
    return self_signed_tls(Path(tmp_path_factory.mktemp("switch-tls")))


@pytest.fixture
def fabric(redis_servers: list[RedisProcess], switch_tls: TlsFiles) -> Iterator[Fabric]:
    """The four switches of docs/example-intent.yaml, freshly booted and serving gNMI over TLS."""
    intent = load_intent_file(EXAMPLE_INTENT)
    password = secrets.token_hex(12)
    credentials = Credentials(username=USERNAME, password=password)
    switches: dict[str, VirtualSwitch] = {}
    repointed: list[IntentSwitch] = []
    try:
        for switch, redis_server in zip(intent.switches, redis_servers, strict=True):
            store = RedisStore.connect(redis_server.host, redis_server.port)
            store.client(0).flushall()
            seed_store(store, _seed(switch))
            vswitch = VirtualSwitch(switch.name, store, credentials, switch_tls)
            switches[switch.name] = vswitch
            vswitch.start()
            endpoint = GnmiEndpoint(address="127.0.0.1", port=vswitch.port)
            repointed.append(switch.model_copy(update={"gnmi": endpoint}))
        tls = session_tls(insecure=False, ca=switch_tls.cert)
        repointed_intent = intent.model_copy(update={"switches": tuple(repointed)})
        yield Fabric(repointed_intent, switches, password, tls)
    finally:
        for vswitch in switches.values():
            vswitch.stop()
            vswitch.store.close()
