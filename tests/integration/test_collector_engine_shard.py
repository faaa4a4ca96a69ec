"""Collectors sharing the switches through the engine (``SLUICE_TELEMETRY_SHARD=engine``):
two ``python -m controller.collector`` processes on a real PostgreSQL register as
engine worker records and split six vsonic switches (gNMI over TLS) by rendezvous hashing,
each switch's series exported by exactly one; the controller workers' drift watch does not
count them as its members. One collector is killed with SIGKILL and the survivor exports every
switch once the dead one's heartbeat is older than ``SLUICE_WORKER_STALLED_AFTER_S``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from controller.reconcile.shard import shard_of
from controller.rollout.engine import ReconcileDispatch
from controller.store.db import make_engine
from tests.integration.dataplane.conftest import eventually
from tests.integration.tls_certs import self_signed_tls
from tests.support.collector_fleet import store_intent, streaming_switches, tls_switches
from vsonic.gnmi_server import TlsFiles
from vsonic.redis_process import free_port
from vsonic.tether import start_tethered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PASSWORD = "collector-engine-test"
NAMES = [f"rack{i}" for i in range(6)]
HEARTBEAT_S = 1.0
STALLED_AFTER_S = 3.0
# Past the bound (stalled + one heartbeat round), the survivor still has to open its new
# streams and be scraped: a generous allowance for a loaded machine, not a timing claim.
CONNECT_ALLOWANCE_S = 10.0


@pytest.fixture(scope="module")
def switch_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The switches' certificate (its own CA, naming 127.0.0.1), trusted by the collectors."""
    return self_signed_tls(Path(tmp_path_factory.mktemp("switch-tls")))


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[dict[str, int]]:
    """One switch per gNMI server over TLS, each its own endpoint in the intent."""
    with tls_switches(NAMES, switch_tls, PASSWORD) as ports:
        yield ports


def _collector_ids(db_url: str) -> list[int]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT worker_id FROM telemetry_collectors"))
            return sorted(int(row[0]) for row in rows)
    finally:
        engine.dispose()


def _start(db_url: str, tls: TlsFiles, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": db_url, "SLUICE_GNMI_PASSWORD": PASSWORD,
           "SLUICE_TELEMETRY_METRICS_PORT": str(port), "SLUICE_GNMI_TLS_CA": str(tls.cert),
           "SLUICE_TELEMETRY_SHARD": "engine", "SLUICE_WORKER_HEARTBEAT_S": str(HEARTBEAT_S),
           "SLUICE_WORKER_STALLED_AFTER_S": str(STALLED_AFTER_S)}  # fmt: skip
    with log.open("wb") as out:
        return start_tethered(
            [sys.executable, "-m", "controller.collector"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_two_collectors_shard_the_switches_and_the_survivor_takes_a_dead_ones(
    db_url: str, fleet: dict[str, int], switch_tls: TlsFiles, tmp_path: Path
) -> None:
    store_intent(db_url, fleet)
    ports = [free_port(), free_port()]
    processes = [
        _start(db_url, switch_tls, port, tmp_path / f"collector-{i}.log")
        for i, port in enumerate(ports)
    ]
    try:
        eventually(lambda: len(_collector_ids(db_url)) == 2, "both collectors registered")
        ids = _collector_ids(db_url)
        shards = {frozenset(shard_of(me, NAMES, ids)) for me in ids}
        eventually(
            lambda: {frozenset(streaming_switches(p)) for p in ports} == shards,
            f"the collectors export their rendezvous shards {sorted(map(sorted, shards))}",
        )
        first, second = (streaming_switches(p) for p in ports)
        assert first.isdisjoint(second)
        assert first | second == set(NAMES)

        dispatch = ReconcileDispatch(db_url)  # the workers' drift watch reads its members here
        dispatch.open()
        try:
            assert dispatch.live_workers(STALLED_AFTER_S) == ()
        finally:
            dispatch.close()

        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait(timeout=30)
        killed_at = time.monotonic()
        bound_s = STALLED_AFTER_S + HEARTBEAT_S + CONNECT_ALLOWANCE_S
        eventually(
            lambda: streaming_switches(ports[1]) == set(NAMES),
            "the survivor exports every switch",
            deadline_s=bound_s,
        )
        took_s = time.monotonic() - killed_at
        print(f"survivor took over in {took_s:.1f} s (stalled_after_s {STALLED_AFTER_S})")
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
