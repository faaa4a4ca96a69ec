"""Rollouts and reconciliation against real switches and a real database: the four vsonic
switches of the southbound tests (real Redis, real gRPC on 127.0.0.1) and a fresh migrated
PostgreSQL database per test.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import NotFound
from controller.reconcile.access import GnmiAccess
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutInfo
from controller.settings import GnmiSettings, Settings, WorkerSettings
from controller.southbound.gnmi import CallPolicy, SessionPool
from controller.southbound.retry import RetryPolicy
from controller.store.db import make_engine, make_sessions
from controller.store.rollout_store import SqlRolloutStore
from tests.integration.conftest import StepClock
from tests.integration.southbound import conftest as southbound
from tests.integration.southbound.conftest import USERNAME, Fabric
from tests.support.controller_services import OPERATOR as OPERATOR
from tests.support.controller_services import ControllerServices
from tests.support.worker import running_worker
from vsonic.db import APPL_DB, CONFIG_DB, redis_key
from vsonic.seed import Neighbour, config_entries, lldp_entry, roce_ready_config

# The southbound tests' virtual switches, shared as fixtures of this folder too.
fabric = southbound.fabric
redis_servers = southbound.redis_servers
switch_tls = southbound.switch_tls

# Who is cabled to whom in docs/example-intent.yaml (its comments): each leaf's Ethernet48 to
# spine1 and Ethernet52 to spine2; the spines' Ethernet0 to leaf1 and Ethernet4 to leaf2.
CABLING = {
    "leaf1": [("Ethernet48", "spine1", "Ethernet0"), ("Ethernet52", "spine2", "Ethernet0")],
    "leaf2": [("Ethernet48", "spine1", "Ethernet4"), ("Ethernet52", "spine2", "Ethernet4")],
    "spine1": [("Ethernet0", "leaf1", "Ethernet48"), ("Ethernet4", "leaf2", "Ethernet48")],
    "spine2": [("Ethernet0", "leaf1", "Ethernet52"), ("Ethernet4", "leaf2", "Ethernet52")],
}
ALL = tuple(CABLING)


def load_neighbours(fabric: Fabric) -> None:
    """APPL_DB ``LLDP_ENTRY_TABLE`` as each switch's lldp syncd would have written it."""
    for name, links in CABLING.items():
        entries: dict[str, dict[str, str] | None] = {
            redis_key(APPL_DB, "LLDP_ENTRY_TABLE", port): lldp_entry(
                Neighbour(port, peer, peer_port), i
            )
            for i, (port, peer, peer_port) in enumerate(links)
        }
        fabric.switches[name].store.write_atomically(APPL_DB, entries)


def make_roce_ready(fabric: Fabric) -> None:
    """Every switch ready for RoCE as its operator runs it (``roce_ready_config`` on all its
    ports), and LLDP everywhere."""
    for switch in fabric.intent.switches:
        ports = [p.name for p in switch.ports]
        store = fabric.switches[switch.name].store
        store.write_atomically(CONFIG_DB, dict(config_entries(roce_ready_config(ports))))
    load_neighbours(fabric)


def set_fields(fabric: Fabric, switch: str, table: str, key: str, **fields: str) -> None:
    """Set ``fields`` of one CONFIG_DB entry of one switch, as ``config`` would."""
    store = fabric.switches[switch].store
    current = fabric.switches[switch].config_db()[f"{table}|{key}"]
    store.write_atomically(CONFIG_DB, {redis_key(CONFIG_DB, table, key): current | fields})


@contextmanager
def worker_for(fabric: Fabric, db_url: str) -> Iterator[Settings]:
    """The real worker over the virtual switches (TLS, password); its settings."""
    assert fabric.tls is not None
    assert fabric.tls.root_cert is not None
    settings = Settings.for_database(
        db_url,
        gnmi=GnmiSettings(username=USERNAME, tls_ca=fabric.tls.root_cert, deadline_s=5.0),
        worker=WorkerSettings(poll_s=0.05, watch_drift=False),
    )
    with running_worker(settings, {"SLUICE_GNMI_PASSWORD": fabric.password}):
        yield settings


# Short real sleeps between retries: some tests stop a switch on purpose.
POLICY = CallPolicy(
    deadline_s=5.0, retry=RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05)
)


def resolver_for(fabric: Fabric) -> Any:
    environ = {"SLUICE_GNMI_PASSWORD": fabric.password}

    def resolve(ref: str) -> SecretStr:
        name = ref.removeprefix("env:")
        if name not in environ:
            raise NotFound(f"credential {ref}: environment variable {name} is not set")
        return SecretStr(environ[name])

    return resolve


@dataclass
class Controller(ControllerServices):
    """The controller's parts over one database and the virtual fabric."""

    engine: Engine
    sessions: sessionmaker[Session]
    fabric: Fabric
    clock: StepClock
    pool: SessionPool

    def access(self) -> GnmiAccess:
        return GnmiAccess(
            self.pool,
            resolver_for(self.fabric),
            username=USERNAME,
            batch_size=20,
            tls=self.fabric.tls,
        )

    def runner(self) -> RolloutRunner:
        """A new runner with a fresh store, as a restarted controller would build one."""
        store = SqlRolloutStore(self.sessions, clock=self.clock)
        return RolloutRunner(store, self.access(), self.clock, max_parallel=4)

    def restart_southbound(self) -> None:
        """New gNMI channels, as a restarted controller has (an old channel to a switch
        that was down may still be waiting out its reconnect backoff)."""
        self.pool.close()
        self.pool = new_pool()


def new_pool() -> SessionPool:
    return SessionPool(policy=POLICY, max_in_flight=16, sleep=time.sleep)


@pytest.fixture
def controller(db_url: str, fabric: Fabric) -> Iterator[Controller]:
    engine = make_engine(db_url, pool_size=8)
    parts = Controller(engine, make_sessions(engine), fabric, StepClock(), new_pool())
    try:
        yield parts
    finally:
        parts.pool.close()
        engine.dispose()


def full_dump(fabric: Fabric) -> dict[str, dict[str, dict[str, str]]]:
    """Every switch's whole CONFIG_DB, straight from Redis."""
    return {name: switch.config_db() for name, switch in fabric.switches.items()}


def statuses(info: RolloutInfo, phase: str = "rollout") -> dict[str, str]:
    """Each switch's result in one phase of a rollout ("rollout" or "rollback")."""
    return {r.switch: r.status for r in info.results if r.phase == phase}


# A gate that fails after the first batch (the leaves): what the forward phase records.
FIRST_BATCH_ONLY = {
    "leaf1": "applied_verified",
    "leaf2": "applied_verified",
    "spine1": "skipped",
    "spine2": "skipped",
}


def assert_completed(rollout: RolloutInfo) -> None:
    """The rollout completed; if not, the message names each switch that did not end
    verified, with its status and reason (a halted fixture rollout says why)."""
    unverified = [
        f"{r.switch}: {r.status} ({r.reason})"
        for r in rollout.results
        if r.status != "applied_verified"
    ]
    assert rollout.state == "completed", f"{rollout.state} ({rollout.reason}): {unverified}"


def wait_for(what: str, condition: Callable[[], bool], *, within_s: float = 120.0) -> None:
    """Poll until ``condition`` holds; ``within_s`` is an upper bound for a loaded machine,
    never a pass/fail measure."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def jobs_in_flight(log: Path, task: str) -> int:
    """Jobs of ``task`` a worker has started and not ended, from procrastinate's own log lines
    ("Starting job <task>[id](...)", "Job <task>[id](...) ended with status ...")."""
    lines = log.read_text().splitlines()
    started = sum(1 for line in lines if f"Starting job {task}[" in line)
    ended = sum(1 for line in lines if f"Job {task}[" in line and " ended " in line)
    return started - ended


def stopped(process: subprocess.Popen[bytes]) -> bool:
    """Whether the kernel has stopped the process (state T in /proc/<pid>/stat)."""
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def kill_mid_job(
    victim: subprocess.Popen[bytes], log: Path, task: str, *, within_s: float = 120.0
) -> None:
    """SIGKILL a worker while it has a job of ``task`` in flight. Killed the instant it logged
    a finished job, it may sit between jobs with none for the others to take over (as once on
    CI), so it is frozen first (SIGSTOP), its log read, and killed only with a job started and
    not ended; otherwise it goes on (SIGCONT) and is tried again."""
    deadline = time.monotonic() + within_s
    while True:
        victim.send_signal(signal.SIGSTOP)
        wait_for("the worker to stop", lambda: stopped(victim), within_s=within_s)
        if jobs_in_flight(log, task) > 0:
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            return
        victim.send_signal(signal.SIGCONT)
        assert time.monotonic() < deadline, f"the worker never had a {task} job in flight"
        time.sleep(0.02)
