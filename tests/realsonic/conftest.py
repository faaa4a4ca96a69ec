"""The real-SONiC tier: sluice against SONiC's own software (``lab/realsonic.py``).

The bundles are extracted once per machine (a cache keyed by their contents) and each switch
is started from them: its own redis in SONiC's layout, syncd + orchagent over libsaivs, and
SONiC's gNMI server with the real Generic Config Updater behind it. A switch takes about ten
seconds to start, and GCU about a second per change it sorts a patch into, so modules share
one switch and order their tests so that one first rollout serves several checks.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from controller.intent.loader import dump_intent, load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.reconcile.access import GnmiAccess
from controller.rollout.gates import Reader
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutInfo, RolloutPolicy
from controller.sonic.model import SwitchConfig
from controller.southbound.gnmi import CallPolicy, SessionPool
from controller.store.db import make_engine, make_sessions
from controller.store.rollout_store import SqlRolloutStore
from controller.types import Clock
from lab.realsonic import GNMI_DAEMONS, RealSwitch, SonicBundle, SwitchParts, prepare_bundle
from tests.integration.conftest import StepClock
from tests.support.controller_services import OPERATOR as OPERATOR
from tests.support.controller_services import ControllerServices
from vsonic.seed import S6000_BUFFERS

ROOT = Path(__file__).resolve().parents[2]
SLUICE_YANG = ROOT / "agents" / "qos-agent" / "yang" / "sonic-sluice-agent.yang"
EXAMPLE_INTENT = ROOT / "docs" / "example-intent.yaml"
# GCU sorts a first rollout of the example leaf into about 60 changes of a second or more
# each: minutes on a loaded machine. The intent gives the switch the Set deadline its
# platform needs (docs/southbound.md, "What a switch needs").
SET_DEADLINE_S = 900.0

pytestmark = pytest.mark.realsonic

# The module whose tests start the qos-agent built with feature `sai`. The test command
# builds that agent beside this tier from the default build's dependencies once that build
# has finished (scripts/test.sh, build-sai): run first, the module's fixture would start the
# same build from nothing (about 150 CPU s instead of 30) and the tier would wait on it.
SAI_CLIENT_MODULE = "test_agent_sai_client.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The SAI client's tests last, every other test in the order collected."""
    items.sort(key=lambda item: item.path.name == SAI_CLIENT_MODULE)


@pytest.fixture(scope="session")
def sonic_bundle() -> SonicBundle:
    """SONiC's runtime bundles, extracted (and GCU's Python environment made) once."""
    return prepare_bundle()


StartSwitch = Callable[[SwitchParts], RealSwitch]


# The switches running now (started by ``start_switch``), which every test checks after it.
RUNNING: list[RealSwitch] = []


@pytest.fixture(scope="module")
def start_switch(sonic_bundle: SonicBundle) -> Iterator[StartSwitch]:
    """Starts real switches for one module; every one is stopped when the module ends."""
    started: list[RealSwitch] = []

    def start(parts: SwitchParts) -> RealSwitch:
        switch = RealSwitch(sonic_bundle, parts).start()
        started.append(switch)
        RUNNING.append(switch)
        return switch

    yield start
    for switch in reversed(started):
        RUNNING.remove(switch)
        switch.stop()


@pytest.fixture(autouse=True)
def daemons_outlive_the_test() -> Iterator[None]:
    """A SONiC daemon that exits during a test fails that test with its log's last lines,
    not the module's next test with a bare ``Connection refused``. The gNMI server alone is
    started again (as SONiC restarts its gnmi container when the server exits) and its crash
    reported as a warning: the test that ran through it has passed or failed on its own."""
    yield
    for switch in RUNNING:
        exited = switch.exited_daemons()
        if not exited:
            continue
        if "gnmi" in exited and set(exited) <= GNMI_DAEMONS:
            switch.restart_gnmi()
            warnings.warn(
                f"SONiC's gNMI server exited during this test and was started again:\n"
                f"{exited['gnmi']}",
                stacklevel=1,
            )
            continue
        pytest.fail(
            "SONiC daemons exited during this test:\n"
            + "\n".join(f"== {name}:\n{tail}" for name, tail in exited.items()),
            pytrace=False,
        )


def full_switch_parts() -> SwitchParts:
    """syncd + orchagent + buffermgrd, and CONFIG_DB Sets through the real GCU validating
    against SONiC's models and sluice's own (``sonic-sluice-agent.yang``)."""
    return SwitchParts(orchagent=True, buffermgrd=True, gcu=True, yang_extra=(SLUICE_YANG,))


def operator_switch_parts() -> SwitchParts:
    """A full switch as an operator hands it over: its image's buffer pools and profiles
    loaded by ``config load`` (a Force10-S6000's, ``S6000_BUFFERS``)."""
    return replace(full_switch_parts(), operator_config=S6000_BUFFERS)


def example_leaf(switch: RealSwitch) -> Intent:
    """The example intent with its leaf1 alone (four ports, five classes), whose gNMI
    endpoint is ``switch``'s server and whose ports are declared at the speeds it runs."""
    data: dict[str, Any] = dump_intent(load_intent_file(EXAMPLE_INTENT))
    leaf = next(s for s in data["switches"] if s["name"] == "leaf1")
    leaf["gnmi"] = {
        "address": "127.0.0.1",
        "port": switch.gnmi_port,
        "set_deadline_s": SET_DEADLINE_S,
    }
    switch.declare_running_speeds(leaf)
    data["switches"] = [leaf]
    return parse_intent(data)


def config_db(switch: RealSwitch) -> SwitchConfig:
    """The switch's whole CONFIG_DB as entries, straight from redis."""
    config = switch.db("CONFIG_DB")
    entries: SwitchConfig = {}
    for key in config.scan_iter("*|*", count=1000):
        table, name = key.split("|", 1)
        entries[(table, name)] = config.hgetall(key)
    return entries


def no_secret(ref: str) -> SecretStr:
    """The servers run with ``-client_auth=none``: any password will do."""
    return SecretStr("")


@dataclass
class RealController(ControllerServices):
    """The controller's parts over one database and one real switch."""

    engine: Engine
    sessions: sessionmaker[Session]
    switch: RealSwitch
    clock: StepClock
    pool: SessionPool

    def access(self) -> GnmiAccess:
        return GnmiAccess(self.pool, no_secret, tls=None)

    def runner(self, clock: Clock | None = None, gates: Reader | None = None) -> RolloutRunner:
        store = SqlRolloutStore(self.sessions, clock=self.clock)
        return RolloutRunner(store, self.access(), clock or self.clock, gates=gates)

    def roll_out(self, intent: Intent, **policy: Any) -> RolloutInfo:
        """Store ``intent`` as the next version and run a rollout of it to the end."""
        self.store_intent(intent)
        info = self.rollouts.start(RolloutPolicy(None, **policy), actor=OPERATOR)
        self.runner().run_until_idle()
        return self.rollouts.get(info.id)

    def desired(self, version: int) -> SwitchConfig:
        store = SqlRolloutStore(self.sessions, clock=self.clock)
        return store.desired(version)["leaf1"]


@pytest.fixture(scope="module")
def real_controller(module_db_url: str, start_switch: StartSwitch) -> Iterator[RealController]:
    """One switch as an operator hands it over, and the controller's parts over a database
    of the module's own."""
    with controller_of(start_switch(operator_switch_parts()), module_db_url) as controller:
        yield controller


@contextmanager
def controller_of(switch: RealSwitch, db_url: str) -> Iterator[RealController]:
    """The controller's parts over ``db_url`` and ``switch``, closed at the end."""
    engine = make_engine(db_url, pool_size=4)
    pool = SessionPool(policy=CallPolicy(deadline_s=10.0), sleep=time.sleep)
    try:
        yield RealController(engine, make_sessions(engine), switch, StepClock(), pool)
    finally:
        pool.close()
        engine.dispose()
