"""A bad config caught by what the traffic does: four vsonic switches each running the real
data plane (``vswitch-dataplane``, offered traffic) and the real qos-agent next to its Redis,
``python -m controller.collector`` streaming their counters over gNMI into a real
Prometheus, the rollout in a real PostgreSQL.

The traffic is a partition-aggregate burst into the strict ``rpc`` queue (6, static ECN) of
every switch's Ethernet0: 4 senders x 25,000 B every 10 ms, each at the port's rate (a leaf's
port is 25 Gb/s; the spines' 100 Gb/s ports, with K four times larger, mark even less).
Four senders into one port of the same rate queue 3/4 of what arrives, so a burst peaks near
75,000 B. The step marking threshold is K = C x RTT x lambda (DCTCP, Alizadeh et al.,
SIGCOMM'10, section 3.3 and the intent's ``ecn_lambda``): at 25 Gb/s and 40 us,

- lambda 1.0 gives K = 125,000 B and lambda 0.9 gives 112,500 B: above the peak, almost no
  packet is marked;
- lambda 0.08 gives K = 10,000 B (it passes validation, which only asks K >= one MTU): every
  packet that arrives after the first ~13,000 B of a burst is marked, about 0.87 of them.

The gate is the built-in ``mark_fraction`` (the largest mark fraction of any queue of the
batch's switches, as the collector measured it), absolute 0.2. The intent alone says nothing
of marks: the same gate passes the sane change and fails the bad one only because of what the
data plane's traffic does after each apply.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.main import create_app
from controller.intent.loader import dump_intent, parse_intent
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutInfo, RolloutPolicy
from controller.services.tokens import AccessRole
from controller.settings import Settings
from controller.sonic.tables.wred_profile import DYNAMIC_PREFIX
from controller.store.rollout_store import SqlRolloutStore
from tests.integration.conftest import StepClock, issue_token
from tests.integration.dataplane.conftest import agent_binary, dataplane_binary
from tests.integration.served import served
from vsonic.dataplane import DataplaneOptions, agent_command, command
from vsonic.redis_process import RedisProcess
from vsonic.tether import start_tethered

from .conftest import FIRST_BATCH_ONLY, OPERATOR, Controller, assert_completed, full_dump, statuses
from .test_gates_collector import settle, streaming

__all__ = ["agent_binary", "dataplane_binary", "streaming"]  # fixtures used by name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TRAFFIC = "rpc port=Ethernet0 queue=6 kind=incast flows=4 burst_bytes=25000 period_ms=10\n"
LEAVES = ("leaf1", "leaf2")
MARKS = Gate("mark_fraction", 0.2, "absolute", builtin="mark_fraction")
LEAF_MARKS = 'max(sluice_queue_mark_fraction{switch=~"leaf1|leaf2"})'
SOAK_S = 8.0


@pytest.fixture
def carrying_traffic(
    controller: Controller,
    redis_servers: list[RedisProcess],
    dataplane_binary: Path,
    agent_binary: Path,
    tmp_path: Path,
) -> Iterator[None]:
    """A data plane with the traffic and a qos-agent beside every switch's Redis."""
    traffic = tmp_path / "rpc.traffic"
    traffic.write_text(TRAFFIC)
    options = DataplaneOptions(traffic=traffic)
    names = [s.name for s in controller.fabric.intent.switches]
    started: list[subprocess.Popen[bytes]] = []
    try:
        for seed, (name, server) in enumerate(zip(names, redis_servers, strict=True)):
            for kind, args in (
                ("dataplane", command(dataplane_binary, server.port, options, seed + 1)),
                ("agent", agent_command(agent_binary, server.port)),
            ):
                with (tmp_path / f"{kind}-{name}.log").open("wb") as log:
                    started.append(
                        start_tethered(
                            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                        )
                    )
        yield
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def wall_clock() -> datetime:
    return datetime.now(UTC)


def with_lambda(controller: Controller, ecn_lambda: float) -> int:
    """A new intent version: the example fabric with WRED/ECN queue counters and ``ecn_lambda``."""
    data: dict[str, Any] = dump_intent(controller.fabric.intent)
    data["fabric"]["ecn_lambda"] = ecn_lambda
    data["fabric"].setdefault("counters", {})["wred_ecn_queue"] = True
    return controller.store_intent(parse_intent(data), reason=f"ecn_lambda {ecn_lambda}")


def sluice_owned(controller: Controller) -> dict[str, dict[str, dict[str, str]]]:
    """Every switch's CONFIG_DB without the per-queue profiles the agent keeps moving."""
    dynamic = f"WRED_PROFILE|{DYNAMIC_PREFIX}"
    return {
        name: {k: v for k, v in entries.items() if not k.startswith(dynamic)}
        for name, entries in full_dump(controller.fabric).items()
    }


def rpc_threshold(controller: Controller, switch: str) -> str:
    client = controller.fabric.switches[switch].store.client(4)
    profile = client.hget("QUEUE|Ethernet0|6", "wred_profile")
    return str(client.hget(f"WRED_PROFILE|{profile}", "green_min_threshold"))


def gated_rollout(controller: Controller, gates: Reader, deadline_s: float = 60.0) -> RolloutInfo:
    """A rollout in batches of two gated on the mark fraction, run on the wall clock (the soak
    is real time, so the traffic has that long to show what the batch did) until it ends."""
    policy = GatePolicy((MARKS,), soak_s=SOAK_S)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=policy), actor=OPERATOR, gates=gates
    )
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    runner = RolloutRunner(store, controller.access(), wall_clock, max_parallel=4, gates=gates)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        runner.run_until_idle()
        done = controller.rollouts.get(info.id)
        if done.state in ("completed", "rolled_back", "halted", "failed"):
            return done
        time.sleep(0.25)
    raise AssertionError(f"rollout {info.id} did not end within {deadline_s} s")


def quiet_marks(read: Reader, timeout_s: float = 30.0) -> float:
    """Waits until the leaves' traffic is measured and marks little; returns that fraction."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = read(LEAF_MARKS)
        if value is not None and value <= MARKS.threshold:
            return value
        time.sleep(0.5)
    raise AssertionError(f"the leaves' mark fraction never settled at or below {MARKS.threshold}")


def test_thresholds_too_low_for_the_traffic_fail_the_gate_and_are_rolled_back(
    controller: Controller, carrying_traffic: None, streaming: Reader, db_url: str
) -> None:
    with_lambda(controller, 1.0)
    first = controller.rollouts.start(
        RolloutPolicy(None, batch_size=4, allow_port_flaps=True), actor=OPERATOR
    )  # the first rollout adds QUEUE entries: each port goes down, allowed
    controller.runner().run_until_idle()
    assert_completed(controller.rollouts.get(first.id))
    settle(streaming, 'count(sluice_queue_mark_fraction{port="Ethernet0",queue="6"})', 4.0)
    quiet_marks(streaming)
    before = sluice_owned(controller)
    assert [rpc_threshold(controller, leaf) for leaf in LEAVES] == ["125000", "125000"]

    with_lambda(controller, 0.08)
    done = gated_rollout(controller, streaming)

    assert done.state == "rolled_back", done.reason
    assert "mark_fraction: value" in (done.reason or "")
    assert statuses(done) == FIRST_BATCH_ONLY
    assert statuses(done, "rollback") == {"leaf1": "applied_verified", "leaf2": "applied_verified"}
    assert sluice_owned(controller) == before  # the leaves read back v1; spines untouched
    readings = {e.stage: e for e in done.evaluations or []}
    assert set(readings) == {"precheck", "baseline", "soak"}
    baseline, soak = readings["baseline"], readings["soak"]
    assert baseline.value is not None
    assert baseline.value <= 0.2
    assert (soak.threshold, soak.verdict) == (0.2, "fail")
    assert soak.value is not None
    assert soak.value > 0.5, soak  # what the traffic did: ~0.87 by hand, 0.85 seen
    assert 'switch=~"leaf1|leaf2"' in soak.expression

    token = issue_token(db_url, AccessRole.VIEWER, "gate-viewer")
    with served(create_app(Settings.for_database(db_url), clock=StepClock())) as url:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers) as client:
            shown = client.get(f"/api/v1/rollouts/{done.id}").json()
    assert shown["state"] == "rolled_back"
    by_stage = {e["stage"]: e for e in shown["evaluations"]}
    assert by_stage["soak"]["verdict"] == "fail"
    assert by_stage["soak"]["value"] == soak.value
    assert by_stage["soak"]["threshold"] == 0.2

    # The same traffic under a sane change (lambda 0.9: K = 112,500 B) passes the same gate.
    quiet_marks(streaming)
    with_lambda(controller, 0.9)
    sane = gated_rollout(controller, streaming)
    assert sane.state == "completed", sane.reason
    soaks = [e for e in sane.evaluations or [] if e.stage == "soak"]
    assert [(e.batch, e.verdict) for e in soaks] == [(0, "pass"), (1, "pass")]
    assert all(e.value is not None and e.value <= 0.2 for e in soaks), soaks
    assert [rpc_threshold(controller, leaf) for leaf in LEAVES] == ["112500", "112500"]
