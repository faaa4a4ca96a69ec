"""A fleet of virtual switches and engine-mode worker processes, shared by the multi-worker
test (tests/integration/rollout/test_engine_workers.py) and bench/workers_bench.py.

One vsonic fleet-mode server in this process serves every switch over TLS (each its own
in-memory CONFIG_DB, picked by the gNMI prefix target); each Set is held for ``set_delay_s``
first, a stand-in for a real switch's apply time, and counted per switch. Workers are real
``python -m controller.worker`` processes in engine mode (docs/scaling.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from controller.intent.loader import load_intent_file
from controller.intent.models import GnmiEndpoint, Intent
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports
from vsonic.setops import SetOp
from vsonic.switch import Targets
from vsonic.tether import start_tethered

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-intent.yaml"
CREDS = Credentials("admin", "engine-fleet-password")


class SetCounter:
    """Counts the Sets each switch applies, each held ``delay_s`` first."""

    def __init__(self, delay_s: float) -> None:
        self.sets: Counter[str] = Counter()
        self._delay_s = delay_s
        self._lock = threading.Lock()

    def wrap(self, name: str, apply: Callable[[list[SetOp]], None]) -> Callable[..., None]:
        def counted(ops: list[SetOp]) -> None:
            time.sleep(self._delay_s)
            apply(ops)
            with self._lock:
                self.sets[name] += 1

        return counted


@dataclass
class Fleet:
    port: int
    targets: Targets
    counter: SetCounter
    tls: TlsFiles

    @property
    def names(self) -> list[str]:
        return self.targets.names()

    def intent(self) -> Intent:
        """The example intent with its spine copied once per fleet switch, each behind the
        one server under its own target."""
        intent = load_intent_file(EXAMPLE)
        spine = next(s for s in intent.switches if s.role.value == "spine")
        endpoint = GnmiEndpoint(address="127.0.0.1", port=self.port)
        switches = tuple(
            spine.model_copy(
                update={"name": name, "gnmi": endpoint.model_copy(update={"target": name})}
            )
            for name in self.names
        )
        return intent.model_copy(update={"switches": switches})


@contextmanager
def running_fleet(size: int, tls: TlsFiles, set_delay_s: float) -> Iterator[Fleet]:
    names = [f"fleet-{i:04d}" for i in range(size)]
    targets = fleet_targets(names, default_ports(2, speed_gbps=100))
    counter = SetCounter(set_delay_s)
    for name in names:
        switch = targets.resolve(name)
        switch.apply = counter.wrap(name, switch.apply)  # type: ignore[method-assign]
    # Enough server threads that the workers' sessions never queue behind one another.
    running = start_server("127.0.0.1:0", GnmiService(targets, Clock(), CREDS), tls, max_workers=64)
    try:
        yield Fleet(running.port, targets, counter, tls)
    finally:
        running.stop(grace_s=0.5)


def start_worker(
    db_url: str, fleet: Fleet, log: Path, *, engine: str = "procrastinate", max_parallel: int = 4
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "SLUICE_GNMI_PASSWORD": CREDS.password,
        "SLUICE_GNMI_USERNAME": CREDS.username,
        "SLUICE_GNMI_DEADLINE_S": "10",
        "SLUICE_WORKER_POLL_S": "0.1",
        "SLUICE_WORKER_MAX_PARALLEL": str(max_parallel),
        "SLUICE_WORKER_ENGINE": engine,
        "SLUICE_WORKER_HEARTBEAT_S": "0.5",
        "SLUICE_WORKER_STALLED_AFTER_S": "5",  # ten beats: a loaded machine is not a dead worker
        "SLUICE_GNMI_TLS_CA": str(fleet.tls.cert),  # the fleet serves TLS, as a switch does
    }
    with log.open("ab") as out:
        return start_tethered(
            [sys.executable, "-m", "controller.worker"], env=env, stdout=out, stderr=out
        )


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
