"""The collector process reads its switches from the current intent in PostgreSQL and
splits them between shards: two collectors (``--shard 0/2`` and ``1/2``) stream four vsonic
switches (one server each) between them, each exactly the ones its hash holds, and each
serves its own /metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.reconcile.shard import StaticShard
from tests.integration.dataplane.conftest import eventually
from tests.integration.tls_certs import self_signed_tls
from tests.support.collector_fleet import store_intent, streaming_switches, tls_switches
from vsonic.gnmi_server import TlsFiles
from vsonic.redis_process import free_port
from vsonic.tether import start_tethered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
PASSWORD = "collector-db-test"
NAMES = ["rack0", "rack1", "rack2", "rack3"]


@pytest.fixture(scope="module")
def switch_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The switches' certificate (its own CA, naming 127.0.0.1), trusted by the collectors."""
    return self_signed_tls(Path(tmp_path_factory.mktemp("switch-tls")))


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[dict[str, int]]:
    """One switch per gNMI server over TLS, each its own endpoint in the intent."""
    with tls_switches(NAMES, switch_tls, PASSWORD) as ports:
        yield ports


def test_two_shards_stream_the_intents_switches_between_them(
    db_url: str, fleet: dict[str, int], switch_tls: TlsFiles, tmp_path: Path
) -> None:
    store_intent(db_url, fleet)
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
                start_tethered(
                    [sys.executable, "-m", "controller.collector", "--shard", shard],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        for shard, port in ports.items():
            expected = {n for n in NAMES if StaticShard.parse(shard).holds(n)}
            eventually(lambda p=port, e=expected: streaming_switches(p) == e,  # type: ignore[misc]
                       f"shard {shard} streams {sorted(expected)}")  # fmt: skip
        assert set().union(*(streaming_switches(p) for p in ports.values())) == set(NAMES)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
