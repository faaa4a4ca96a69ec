"""PFC telemetry from COUNTERS_DB to a rollout's gates, end to end: four vsonic switches (real
gRPC over TLS, real Redis) whose storage class is lossless on priority 3, counters written into
each switch's COUNTERS_DB through its Redis as syncd's flex counters and SONiC's PFC watchdog
write them (pause frames per port and priority, the priority group's drops and watermark,
the watchdog's storm counts on the lossless queue), ``python -m controller.collector``
subscribed to them, a real Prometheus scraping it and PostgreSQL holding the rollout.

The rollout's policy names one gate of its own; the lossless class adds its pause-rate, storm
and drop gates. A pause storm on one switch of the first batch (pause frames rising far past
``fabric.health.pfc_pause_per_s_critical``), or the watchdog's storm counter, fails the soak
and rolls that batch back, the spines untouched; the same rollout on a quiet lossless fabric
completes with every lossless gate read and passed. The health read (``TelemetryService``)
names the storm from the same Prometheus."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.intent.models import Intent
from controller.rollout.gates import Gate, GatePolicy, Reader
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutPolicy
from controller.services.telemetry import TelemetryService
from controller.store.rollout_store import SqlRolloutStore
from tests.support.collector_fleet import scraped_collector
from tests.support.gate_collector import HandClock, settle
from tests.support.lossless import with_lossless_storage
from vsonic.db import CONFIG_DB, COUNTERS_DB, redis_key
from vsonic.gnmi_server import TlsFiles
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL, lossless_pools

from .conftest import FIRST_BATCH_ONLY, OPERATOR, Controller, assert_completed, full_dump, statuses
from .test_gates import second_version

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

DOWN = 'count(sluice_switch_stream_up{switch=~"$switches"} == 0) or vector(0)'
PRIORITY = 3  # the storage class's PFC priority, its queue and its priority group
# SAI object ids of priority groups: type 0x1a (SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP).
PG_OID_BASE = 0x1A000000000000
QUIET_PAUSES_PER_TICK = 5  # 10 pause frames a second, far below the 3000/s storm limit
STORM_PAUSES_PER_TICK = 10_000  # 20,000 a second
TICK_S = 0.5
LOSSLESS_GATES = {"pfc_pause_rate.storage", "pfc_storms.storage", "lossless_drops.storage"}


@dataclass
class Counters:
    """Writes each switch's lossless counters into its COUNTERS_DB every ``TICK_S``: what
    syncd's PORT, QUEUE and PG_DROP groups and the PFC watchdog write on a switch."""

    controller: Controller
    storming: set[str] = field(default_factory=set)  # switches whose pauses storm
    watchdog_storms: set[str] = field(default_factory=set)  # switches the watchdog stormed
    _stop: threading.Event = field(default_factory=threading.Event)
    _ticks: int = 0
    _pauses: dict[str, int] = field(default_factory=dict)

    def start(self) -> threading.Thread:
        for switch in self.controller.fabric.switches.values():
            db = switch.store.client(COUNTERS_DB)
            ports = db.hgetall("COUNTERS_PORT_NAME_MAP")
            groups = {
                f"{port}:{PRIORITY}": f"oid:{PG_OID_BASE + i:#x}"
                for i, port in enumerate(sorted(ports))
            }
            switch.store.write_atomically(COUNTERS_DB, {"COUNTERS_PG_NAME_MAP": groups})
        thread = threading.Thread(target=self._run, daemon=True, name="pfc-counters")
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()

    def clear(self, name: str) -> None:
        """``sonic-clear pfccounters`` on one switch: its pause counts start again from 0."""
        self._pauses[name] = -QUIET_PAUSES_PER_TICK

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            self._ticks += 1
            for name, switch in self.controller.fabric.switches.items():
                self._write(name, switch.store.client(COUNTERS_DB))

    def _write(self, name: str, db: Any) -> None:
        step = STORM_PAUSES_PER_TICK if name in self.storming else QUIET_PAUSES_PER_TICK
        pauses = self._pauses[name] = self._pauses.get(name, 0) + step
        ports = db.hgetall("COUNTERS_PORT_NAME_MAP")
        queues = db.hgetall("COUNTERS_QUEUE_NAME_MAP")
        groups = db.hgetall("COUNTERS_PG_NAME_MAP")
        detected = "1" if name in self.watchdog_storms else "0"
        pipe = db.pipeline(transaction=False)
        for port, oid in ports.items():
            pipe.hset(f"COUNTERS:{oid}", mapping={
                f"SAI_PORT_STAT_PFC_{PRIORITY}_RX_PKTS": str(pauses),
                f"SAI_PORT_STAT_PFC_{PRIORITY}_TX_PKTS": str(pauses // QUIET_PAUSES_PER_TICK),
            })  # fmt: skip
            pipe.hset(f"COUNTERS:{queues[f'{port}:{PRIORITY}']}", mapping={
                "SAI_QUEUE_STAT_PACKETS": str(1000 * self._ticks),
                "SAI_QUEUE_STAT_BYTES": str(1_000_000 * self._ticks),
                "SAI_QUEUE_STAT_DROPPED_PACKETS": "0",
                "PFC_WD_STATUS": "stormed" if detected == "1" else "operational",
                "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": detected,
                "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": "0",
            })  # fmt: skip
            pipe.hset(f"COUNTERS:{groups[f'{port}:{PRIORITY}']}", mapping={
                "SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS": str(1000 * self._ticks),
                "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS": "0",
                "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES": "4096",
            })  # fmt: skip
        pipe.execute()


def wall_clock() -> datetime:
    return datetime.now(UTC)


@dataclass
class Streaming:
    read: Reader
    counters: Counters
    telemetry: TelemetryService


@pytest.fixture
def lossless_fabric(controller: Controller) -> Intent:
    """Every switch made lossless on the storage class (the first rollout, ungated), with
    the lossless pools SONiC's buffer templates name and the watchdog started; the gated
    version to roll out next."""
    pools = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in lossless_pools().items()}
    watchdog = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}
    for switch in controller.fabric.switches.values():
        switch.store.write_atomically(CONFIG_DB, pools | watchdog)
    lossless = with_lossless_storage(controller.fabric.intent)
    controller.store_intent(lossless)
    first = controller.rollouts.start(
        RolloutPolicy(None, batch_size=4, allow_port_flaps=True), actor=OPERATOR
    )
    controller.runner().run_until_idle()
    assert_completed(controller.rollouts.get(first.id))
    second = second_version(lossless)
    controller.store_intent(second)
    return second


@pytest.fixture
def streaming(
    controller: Controller, lossless_fabric: Intent, switch_tls: TlsFiles, tmp_path: Path
) -> Iterator[Streaming]:
    """The counters written, the real collector streaming them, a real Prometheus."""
    counters = Counters(controller)
    writer = counters.start()
    env = {
        "SLUICE_GNMI_PASSWORD": controller.fabric.password,
        # Rates over at least 2 s of switch time: a tick written late moves them little.
        "SLUICE_TELEMETRY_RATE_WINDOW_S": "2",
        "SLUICE_GNMI_INSECURE": "false",
        "SLUICE_GNMI_TLS_CA": str(switch_tls.cert),
    }
    try:
        with scraped_collector(lossless_fabric, tmp_path, env) as (read, promql):
            # Every switch's lossless series are in: rates need two samples of each.
            for metric in ("sluice_port_pfc_rx_pause_frames_per_second",
                           "sluice_queue_dropped_packets_per_second",
                           "sluice_pg_dropped_packets_per_second",
                           "sluice_queue_pfc_storm_active"):  # fmt: skip
                settle(read, f'count(count by (switch) ({metric}{{class="storage"}}))', 4.0)
            service = TelemetryService(promql, lambda: lossless_fabric, clock=wall_clock)
            yield Streaming(read, counters, service)
    finally:
        counters.stop()
        writer.join(timeout=10)


def present(read: Reader, expression: str, within_s: float = 20.0) -> float | None:
    """``read(expression)`` once it is not None, or None after ``within_s``."""
    deadline = time.monotonic() + within_s
    while (value := read(expression)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return value


def gated_rollout(controller: Controller, read: Reader) -> tuple[int, RolloutRunner, HandClock]:
    policy = GatePolicy((Gate("streams_down", 0.0, query=DOWN),), soak_s=20.0)
    info = controller.rollouts.start(
        RolloutPolicy(None, batch_size=2, gates=policy), actor=OPERATOR, gates=read
    )
    clock = HandClock()
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    runner = RolloutRunner(store, controller.access(), clock, max_parallel=4, gates=read)
    return info.id, runner, clock


@pytest.mark.parametrize("storm", ["pauses", "watchdog"])
def test_a_pfc_storm_in_a_batch_fails_its_gate_and_the_batch_is_rolled_back(
    controller: Controller, streaming: Streaming, storm: str
) -> None:
    rollout_id, runner, clock = gated_rollout(controller, streaming.read)
    gates = {e.gate for e in controller.rollouts.get(rollout_id).evaluations or []}
    assert gates == {"streams_down", *LOSSLESS_GATES}  # the pre-checks: the class's gates on
    assert runner.step(rollout_id)  # running
    assert runner.step(rollout_id)  # baselines; batch 0: leaf1, leaf2
    spines = {n: full_dump(controller.fabric)[n] for n in ("spine1", "spine2")}

    if storm == "pauses":
        streaming.counters.storming.add("leaf2")
        storming = 'max(sluice_port_pfc_rx_pause_frames_per_second{switch="leaf2"}) > bool 3000'
        settle(streaming.read, storming, 1.0)
    else:
        streaming.counters.watchdog_storms.add("leaf2")
        settle(streaming.read, 'max(sluice_queue_pfc_storm_active{switch="leaf2"})', 1.0)
    health = streaming.telemetry.health()
    leaf2 = next(s for s in health.switches if s.switch == "leaf2")
    assert {(r.check, r.state.value) for r in leaf2.reasons} == {("pfc_storm", "critical")}
    assert all(r.where.endswith("priority 3 (storage)") for r in leaf2.reasons)
    clock.now += timedelta(seconds=20)
    assert runner.step(rollout_id)  # the soak's reading fails: rolling back leaf1 and leaf2
    runner.run_until_idle()

    done = controller.rollouts.get(rollout_id)
    assert done.state == "rolled_back", done.reason
    failed_gate = "pfc_pause_rate.storage" if storm == "pauses" else "pfc_storms.storage"
    soak = {e.gate: e for e in done.evaluations or [] if e.stage == "soak"}
    assert soak[failed_gate].verdict == "fail", soak[failed_gate].detail
    assert failed_gate in (done.reason or "")
    assert soak["lossless_drops.storage"].verdict == "pass"
    assert statuses(done) == FIRST_BATCH_ONLY
    assert statuses(done, "rollback") == {"leaf1": "applied_verified", "leaf2": "applied_verified"}
    assert {n: full_dump(controller.fabric)[n] for n in spines} == spines


def test_a_quiet_lossless_rollout_passes_every_lossless_gate(
    controller: Controller, streaming: Streaming
) -> None:
    rollout_id, runner, clock = gated_rollout(controller, streaming.read)
    assert runner.step(rollout_id)  # running
    for _ in range(20):  # two batches, each applied, then soaked and read
        if controller.rollouts.get(rollout_id).state != "running":
            break
        clock.now += timedelta(seconds=20)
        runner.step(rollout_id)
    done = controller.rollouts.get(rollout_id)
    assert done.state == "completed", done.reason
    soaks = [e for e in done.evaluations or [] if e.stage == "soak"]
    assert {(e.gate, e.batch) for e in soaks if e.gate in LOSSLESS_GATES} == {
        (gate, batch) for gate in LOSSLESS_GATES for batch in (0, 1)
    }
    assert all(e.verdict == "pass" for e in soaks), [(e.gate, e.detail) for e in soaks]
    # The pauses were read, not absent: about 10 a second on every port.
    pauses = [e.value for e in soaks if e.gate == "pfc_pause_rate.storage"]
    assert all(v is not None and 0 < v < 3000 for v in pauses), pauses
    health = streaming.telemetry.health()
    lossless = ("pfc_storm", "lossless_drops")
    assert [r for s in health.switches for r in s.reasons if r.check in lossless] == []


def test_pause_counters_become_rates_and_a_cleared_count_is_one_reset_per_port(
    controller: Controller, streaming: Streaming
) -> None:
    read = streaming.read
    leaf1 = 'sluice_port_pfc_{}_pause_frames_per_second{{switch="leaf1",port="Ethernet0"}}'
    # A read is None while Prometheus does not answer in time (a loaded machine): read again.
    rx, tx = present(read, leaf1.format("rx")), present(read, leaf1.format("tx"))
    # Five frames received for each one sent, every tick: the rates hold that ratio exactly
    # whatever the ticks' timing on a loaded machine (the same hash, the same switch
    # timestamps; the arithmetic itself: tests/unit/telemetry/test_pfc.py).
    assert rx is not None
    assert tx is not None
    assert rx > 0.0
    assert rx / tx == pytest.approx(5.0, rel=1e-9)
    # The API's view of the port (what the dashboard shows): the priority, its group.
    port = streaming.telemetry.switch_now("leaf1").ports["Ethernet0"]
    (pfc,) = port.pfc.values()
    assert (pfc.priority, pfc.service_class) == ("3", "storage")
    assert (pfc.values["rx_pause_frames_per_s"] or 0.0) > 0.0
    assert pfc.values["pg_dropped_packets_per_s"] == 0.0
    assert pfc.values["pg_headroom_watermark_bytes"] == 4096.0
    assert port.queues["3"].values["pfc_storm_active"] == 0.0
    resets = 'sum(sluice_counter_resets_total{switch="leaf1",queue=""}) or vector(0)'
    before = read(resets)
    streaming.counters.clear("leaf1")
    ports = len(next(s for s in controller.fabric.intent.switches if s.name == "leaf1").ports)
    settle(read, resets, (before or 0.0) + ports)  # one reset per port hash, not per field
    settle(read, f"{leaf1.format('rx')} > bool 0", 1.0)  # rates again after the reset
    lowest = 'min(min_over_time({__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second"}[5m]))'
    assert (read(lowest) or 0.0) >= 0.0
