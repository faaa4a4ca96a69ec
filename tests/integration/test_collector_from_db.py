"""The collector process reads its switches from the current intent in PostgreSQL and
splits them between shards: two collectors (``--shard 0/2`` and ``1/2``) stream four vsonic
switches (one server each) between them, each exactly the ones its hash holds, and each
serves its own /metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.store.db import make_engine, make_sessions
from controller.telemetry.collector import Shard
from tests.integration.dataplane.conftest import eventually
from tests.integration.tls_certs import self_signed_tls
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.redis_process import free_port
from vsonic.seed import default_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
PASSWORD = "collector-db-test"
NAMES = ["rack0", "rack1", "rack2", "rack3"]


@pytest.fixture(scope="module")
def switch_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The switches' certificate (its own CA, naming 127.0.0.1), trusted by the collectors."""
    return self_signed_tls(Path(tmp_path_factory.mktemp("switch-tls")))


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[dict[str, int]]:
    """One in-memory switch per server (an intent gives each switch its own endpoint), each
    serving gNMI over TLS."""
    running: list[RunningServer] = []
    try:
        for name in NAMES:
            service = GnmiService(
                fleet_targets([name], default_ports(2)), Clock(), Credentials("admin", PASSWORD)
            )
            running.append(start_server("127.0.0.1:0", service, switch_tls))
        yield {name: server.port for name, server in zip(NAMES, running, strict=True)}
    finally:
        for server in running:
            server.stop(grace_s=0.2)


def _store_intent(db_url: str, gnmi_ports: dict[str, int]) -> None:
    switches = [
        {
            "name": name, "role": "leaf", "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "gnmi": {"address": "127.0.0.1", "port": gnmi_ports[name], "target": name},
            "ports": [{"name": "Ethernet0", "speed_gbps": 100},
                      {"name": "Ethernet4", "speed_gbps": 100}],
        }
        for name in NAMES
    ]  # fmt: skip
    data = {"fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000}, "switches": switches}
    engine = make_engine(db_url)
    try:
        service = IntentService(make_sessions(engine), clock=lambda: datetime.now(UTC))
        service.replace(data, expected=0, actor=Actor("test", "r1"), reason="collector test")
    finally:
        engine.dispose()


def _streaming(metrics_port: int) -> set[str]:
    try:
        text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return set()
    return {
        s.labels["switch"]
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "sluice_switch_stream_up" and s.value == 1.0
    }


def test_two_shards_stream_the_intents_switches_between_them(
    db_url: str, fleet: dict[str, int], switch_tls: TlsFiles, tmp_path: Path
) -> None:
    _store_intent(db_url, fleet)
    processes = []
    ports = {}
    try:
        for shard in ("0/2", "1/2"):
            ports[shard] = free_port()
            env = {**os.environ, "DATABASE_URL": db_url, "SLUICE_GNMI_PASSWORD": PASSWORD,
                   "SLUICE_TELEMETRY_METRICS_PORT": str(ports[shard]),
                   "SLUICE_GNMI_TLS_CA": str(switch_tls.cert)}  # fmt: skip
            log = (tmp_path / f"collector-{shard.replace('/', '-')}.log").open("wb")
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "controller.telemetry.collector", "--shard", shard],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        for shard, port in ports.items():
            expected = {n for n in NAMES if Shard.parse(shard).holds(n)}
            eventually(lambda p=port, e=expected: _streaming(p) == e,  # type: ignore[misc]
                       f"shard {shard} streams {sorted(expected)}")  # fmt: skip
        assert set().union(*(_streaming(p) for p in ports.values())) == set(NAMES)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
