"""sluice's streams against SONiC's own gNMI server: the collector process
(``python -m controller.collector``, its switches from the intent in PostgreSQL)
and the drift watch, on one switch with no orchagent so the test owns COUNTERS_DB: it writes
counters at known rates as syncd's flex counters would (an HSET per object), and writes
STATE_DB as an agent would.

What the server asks of a client, and each test's part of it: one database per Subscribe,
one Subscribe per connection, no half-closed request stream, no Subscribe of an absent
table, ``{}`` for an absent key, one message per path per tick (docs/southbound.md, "A real
switch and vsonic").
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from api.main import create_app
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.reconcile.watch import WatcherThread, WatchPolicy, WatchState
from controller.settings import PrometheusSettings, Settings
from controller.sonic.compile import compile_switch
from controller.sonic.diff import plan_switch
from controller.southbound.gnmi import GnmiTarget, SessionPool
from lab.prometheus import LocalPrometheus
from lab.realsonic import RealSwitch, SwitchParts
from tests.integration.cli.support import Cli, issue_tokens
from tests.integration.served import served
from tests.support.collector_fleet import store_first_intent
from vsonic.redis_process import free_port
from vsonic.tether import start_tethered

from .conftest import StartSwitch
from .streams import CounterWriter, metrics, port_oids, seed_counters, value, wait_for

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(300)]

LINE_BYTES_PER_S = 25e9 / 8  # the intent's 25 Gb/s ports
SENT = 1.25e9  # 10 Gb/s on Ethernet0's queue 3 and on the port
PACKETS = SENT / 1500
QUEUE = {"switch": "leaf1", "port": "Ethernet0", "queue": "3", "class": "storage"}
JUMPING = {"switch": "leaf1", "port": "Ethernet4", "queue": "1", "class": "bulk"}
IDLE = {"switch": "leaf1", "port": "Ethernet0", "queue": "1", "class": "bulk"}  # never written
CLASSES = [
    {"name": "storage", "dscp": [10], "queue": 3, "scheduling": {"type": "DWRR", "weight": 50},
     "ecn": "mqecn"},
    {"name": "bulk", "dscp": [12], "queue": 1, "scheduling": {"type": "DWRR", "weight": 50},
     "ecn": "per-queue-minimum"},
]  # fmt: skip


def intent_data(gnmi_port: int) -> dict[str, Any]:
    return {
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
        "service_classes": CLASSES,
        "switches": [
            {
                "name": "leaf1",
                "role": "leaf",
                "gnmi": {"address": "127.0.0.1", "port": gnmi_port},
                "credential_ref": "env:SLUICE_GNMI_PASSWORD",
                "ports": [
                    {"name": "Ethernet0", "speed_gbps": 25},
                    {"name": "Ethernet4", "speed_gbps": 25},
                ],
            }
        ],
    }


@dataclass
class Lab:
    """The switch, the intent naming it (in PostgreSQL), the counters written into it, and
    the collector process streaming it."""

    switch: RealSwitch
    intent: Intent
    db_url: str
    metrics_port: int
    writer: CounterWriter
    queues: dict[str, str]
    ports: dict[str, str]
    log: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def metric(self, name: str, **labels: str) -> float | None:
        return value(metrics(self.metrics_port), name, **labels)

    def target(self) -> GnmiTarget:
        return GnmiTarget("leaf1", "127.0.0.1", self.switch.gnmi_port, "admin", SecretStr(""))


@pytest.fixture(scope="module")
def lab(
    start_switch: StartSwitch, module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lab]:
    switch = start_switch(SwitchParts(orchagent=False, buffermgrd=False, gcu=False))
    queues = seed_counters(switch)
    ports = port_oids(switch)
    data = intent_data(switch.gnmi_port)
    store_first_intent(module_db_url, data)
    rates = {
        queues["Ethernet0:3"]: {"SAI_QUEUE_STAT_BYTES": SENT, "SAI_QUEUE_STAT_PACKETS": PACKETS},
        queues["Ethernet4:1"]: {"SAI_QUEUE_STAT_BYTES": SENT / 10},
        ports["Ethernet0"]: {"SAI_PORT_STAT_IF_OUT_OCTETS": SENT},
    }
    writer = CounterWriter(switch.db("COUNTERS_DB"), rates).start()
    log = tmp_path_factory.mktemp("collector") / "collector.log"
    metrics_port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": module_db_url,
        "SLUICE_GNMI_INSECURE": "true",  # SONiC's server on loopback, -noTLS
        "SLUICE_GNMI_PASSWORD": "unused",
        "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port),
        # Rates over >= 5 s of switch time: a loaded machine's scheduling averages out.
        "SLUICE_TELEMETRY_RATE_WINDOW_S": "5",
    }
    with log.open("wb") as out:
        process = start_tethered(
            [sys.executable, "-m", "controller.collector"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    running = Lab(switch, parse_intent(data), module_db_url, metrics_port, writer, queues, ports,
                  log, [process])  # fmt: skip
    try:
        yield running
    finally:
        writer.stop()
        process.terminate()
        process.wait(timeout=30)


def test_rates_are_the_counters_written_into_counters_db(lab: Lab) -> None:
    sent = "sluice_queue_tx_bytes_per_second"
    wait_for("the queue's rate", lambda: lab.metric(sent, **QUEUE) is not None)
    assert lab.metric("sluice_switch_stream_up", switch="leaf1") == 1.0
    # The median of a few scrapes: one rate can catch a write the loaded machine delayed.
    seen: dict[str, list[float]] = {"queue": [], "packets": [], "port": []}
    for _ in range(5):
        samples = metrics(lab.metrics_port)
        port = {"switch": "leaf1", "port": "Ethernet0"}
        for kind, name, labels in (
            ("queue", "sluice_queue_tx_bytes_per_second", QUEUE),
            ("packets", "sluice_queue_tx_packets_per_second", QUEUE),
            ("port", "sluice_port_tx_bytes_per_second", port),
        ):
            rate = value(samples, name, **labels)
            assert rate is not None
            seen[kind].append(rate)
        time.sleep(1)
    for kind, expected in (("queue", SENT), ("packets", PACKETS), ("port", SENT)):
        median = sorted(seen[kind])[2]
        assert median == pytest.approx(expected, rel=0.02), (kind, seen[kind])
    utilisation = lab.metric("sluice_port_utilisation", switch="leaf1", port="Ethernet0")
    assert utilisation == pytest.approx(0.4, rel=0.02)
    # Every queue and port of the switch is streamed: 32 ports x 8 queues, by its own map.
    assert lab.metric("sluice_collector_unknown_oids_total", collector="0/1") == 0.0
    assert "Target conflict" not in lab.log.read_text()


def test_agent_state_is_streamed_once_an_agent_writes_it(lab: Lab) -> None:
    state = lab.switch.db("STATE_DB")
    assert not list(state.scan_iter("SLUICE_AGENT_STATE*"))  # no agent yet: the table is absent
    up = "sluice_switch_stream_up"
    wait_for("the counters stream", lambda: lab.metric(up, switch="leaf1") == 1.0)
    faults = [k for k in metrics(lab.metrics_port) if k[0] == "sluice_switch_stream_fault_info"]
    assert faults == []  # an absent table is a state the stream follows, not a failure
    # What the qos-agent writes at each loop (agents/qos-agent/src/state.rs).
    heartbeat = str(int(time.time() * 1000))
    state.hset(
        "SLUICE_AGENT_STATE|global",
        mapping={"heartbeat": heartbeat, "mode": "dynamic", "algorithm": "mqecn",
                 "version": "00ab", "loop_us": "250"},
    )  # fmt: skip
    state.hset("SLUICE_AGENT_STATE|Ethernet0|3", mapping={"threshold_bytes": "62500",
                                                          "basis": "computed"})  # fmt: skip
    labels = {"switch": "leaf1", "mode": "dynamic", "algorithm": "mqecn"}
    wait_for("the agent's mode", lambda: lab.metric("sluice_agent_mode_info", **labels) == 1.0)
    threshold = QUEUE
    wait_for(
        "the queue's threshold",
        lambda: lab.metric("sluice_queue_threshold_bytes", **threshold) == 62_500.0,
    )
    assert lab.metric("sluice_agent_orders_version", switch="leaf1") == 0xAB
    # From here the table's changes stream as they are written.
    state.hset("SLUICE_AGENT_STATE|Ethernet0|3", "threshold_bytes", "70000")
    wait_for(
        "the new threshold",
        lambda: lab.metric("sluice_queue_threshold_bytes", **threshold) == 70_000.0,
    )


def test_a_counter_that_jumps_to_near_2_64_is_a_reset_not_a_rate(lab: Lab) -> None:
    jumping = JUMPING
    rate = "sluice_queue_tx_bytes_per_second"
    wait_for("the queue's rate", lambda: lab.metric(rate, **jumping) is not None)
    oid = lab.queues["Ethernet4:1"]
    lab.writer.hold(oid)
    # A count that went below zero on the switch, as a 64-bit counter reads it.
    lab.writer.write(oid, {"SAI_QUEUE_STAT_BYTES": str(2**64 - 4096)})
    resets = {"switch": "leaf1", "port": "Ethernet4", "queue": "1"}
    wait_for("the reset", lambda: lab.metric("sluice_counter_resets_total", **resets) == 1.0)
    # The interval that held the jump has no rate at all, never 5.9e18 B/s.
    assert lab.metric("sluice_queue_tx_bytes_per_second", **jumping) is None


def _row_rate(text: str) -> float:
    """``si``'s rendering back to a number: ``1.25GB`` -> 1.25e9."""
    found = re.fullmatch(r"([0-9.]+)([kMGT]?)B", text)
    assert found is not None, text
    scale = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[found.group(2)]
    return float(found.group(1)) * scale


def test_sluice_top_shows_the_real_switchs_rates(lab: Lab, tmp_path: Path) -> None:
    prometheus = LocalPrometheus(tmp_path / "prometheus", targets=[f"127.0.0.1:{lab.metrics_port}"])
    prometheus.start()
    try:
        settings = Settings.for_database(
            lab.db_url, prometheus=PrometheusSettings(url=prometheus.url)
        )
        with served(create_app(settings)) as url:
            cli = Cli(base_url=url, db_url=lab.db_url, tokens=issue_tokens(lab.db_url))

            def frame() -> str:
                result = cli.run("top", "leaf1", "--once", token="viewer")
                assert result.code == 0, result.stderr
                return result.stdout

            def storage_row() -> list[str] | None:
                for line in frame().splitlines():
                    cells = [c.strip() for c in line.strip("│ ").split("│")]
                    if cells[:3] == ["Ethernet0", "3", "storage"] and cells[3] != "-":
                        return cells
                return None

            wait_for("Prometheus to hold the rates", lambda: storage_row() is not None)
            row = storage_row()
            assert row is not None
            assert _row_rate(row[3]) == pytest.approx(SENT, rel=0.025)  # 2 % and si's rounding
            assert frame().splitlines()[0].startswith("leaf1 | ")
            assert "stream up" in frame().splitlines()[0]
    finally:
        prometheus.stop()


# A key name of 64 KiB: each keyspace event of it is that long, so a few hundred writes fill a
# pubsub connection's output buffer past redis's default hard limit (32 MB) in a second.
FLOOD_KEY = "COUNTERS:flood-" + "x" * 65_536
FLOOD_WRITES = 800


def test_rates_follow_the_counters_after_the_server_fell_behind_their_events(lab: Lab) -> None:
    """SONiC's server reads each table it streams through a redis pubsub connection of
    keyspace events; when it falls behind them (a loaded machine), the events wait in redis.
    With redis's default pubsub output buffer limit redis drops that connection and the server
    never reads the table again: a SAMPLE stream re-sends its last values for good (the real
    demo's rates read 0), an ON_CHANGE stream (this collector's) sends nothing more. SONiC's
    database container has no such limit (``RealSwitch._as_sonic_configures_redis``). Here
    the server is stopped while the events of a burst of writes pile up, as a starved process
    lets them; then a queue that was idle starts sending, and its rate must be seen."""
    wait_for("the queue's rate", lambda: lab.metric("sluice_queue_tx_bytes_per_second", **QUEUE)
             is not None)  # fmt: skip
    pid = int((lab.switch.run_dir / "gnmi.pid").read_text().strip())
    counters = lab.switch.db("COUNTERS_DB")
    os.kill(pid, signal.SIGSTOP)
    try:
        with counters.pipeline(transaction=False) as pipe:
            for _ in range(FLOOD_WRITES):
                pipe.hset(FLOOD_KEY, "SAI_QUEUE_STAT_PACKETS", "0")
            pipe.execute()
    finally:
        os.kill(pid, signal.SIGCONT)
    lab.writer.add(
        lab.queues[f"{IDLE['port']}:{IDLE['queue']}"], {"SAI_QUEUE_STAT_BYTES": SENT / 5}
    )
    rate = "sluice_queue_tx_bytes_per_second"

    def follows() -> bool:
        seen = lab.metric(rate, **IDLE)
        return seen is not None and seen == pytest.approx(SENT / 5, rel=0.02)

    try:
        wait_for("the newly sending queue's rate", follows, within_s=60)
    except AssertionError as gave_up:
        dropped = "overcoming of output buffer limits" in lab.switch.log("redis")
        raise AssertionError(f"{gave_up}; redis dropped a pubsub connection: {dropped}") from None


# --------------------------------------------------------------------------------------------
# the drift watch


@dataclass
class Reports:
    seen: list[tuple[str, str | None, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, switch: str, table: str | None) -> None:
        with self.lock:
            self.seen.append((switch, table, time.monotonic()))

    def tables(self) -> set[str | None]:
        with self.lock:
            return {table for _, table, _ in self.seen}

    def first_after(self, table: str, since: float) -> float | None:
        """When ``table`` was first reported after ``since`` (monotonic), if it was."""
        with self.lock:
            return next((at for _, t, at in self.seen if t == table and at > since), None)


def test_drift_on_a_fresh_switch_is_found_by_on_change(lab: Lab) -> None:
    """The watch has no periodic read: a report of the drift while no stream was made again
    (whose initial values could report it) came through ON_CHANGE. How long that takes is a
    bench's figure (bench/drift_watch_bench.py), not this test's."""
    config = lab.switch.db("CONFIG_DB")
    assert not [t for t in OWNED_TABLES if list(config.scan_iter(f"{t}|*"))]  # fresh
    reports = Reports()
    watcher = WatcherThread(reports, WatchPolicy(debounce_s=0.02), rand=random.Random(7).random)
    try:
        watcher.sync({"leaf1": lab.target()})
        # None of the owned tables exists: watched, with nothing to subscribe to yet.
        wait_for("the watch", lambda: watcher.states().get("leaf1") is WatchState.WATCHING)
        watch = watcher.watcher.watch_of("leaf1")
        assert watch is not None
        assert watch.watched == ()
        assert watch.absent == frozenset(OWNED_TABLES)

        switch = lab.intent.switches[0]
        desired = compile_switch(lab.intent, switch)
        with SessionPool() as pool:
            result = GnmiAccess(pool, lambda ref: SecretStr(""), tls=None).apply(
                switch, plan_switch("leaf1", desired, {})
            )
        assert result.status == "applied_verified", result.reason
        watcher.recheck(["leaf1"])  # what the worker's turn does after it corrected a switch
        written = {table for table, _ in desired}
        wait_for("the new tables watched", lambda: written <= set(watch.watched), within_s=60)
        # What appeared is reported (written unseen), through the debouncer: on a loaded
        # machine its report may come a moment after the tables are watched.
        wait_for("the new tables reported", lambda: written <= reports.tables(), within_s=60)

        scheduler = next(key for table, key in desired if table == "SCHEDULER")
        time.sleep(0.5)  # the debouncer's last report is out
        before = time.monotonic()
        syncs = watch.syncs
        config.hset(f"SCHEDULER|{scheduler}", "weight", "7")  # an operator, behind sluice
        wait_for("the drift", lambda: reports.first_after("SCHEDULER", before) is not None)
        assert watch.syncs == syncs  # no stream was made again in between
        assert watcher.states()["leaf1"] is WatchState.WATCHING
    finally:
        watcher.close()


def test_an_owned_table_an_operator_creates_is_found_by_the_watchs_probe(lab: Lab) -> None:
    config = lab.switch.db("CONFIG_DB")
    absent = ["DSCP_TO_TC_MAP"]  # an owned table, emptied: a switch without it
    assert absent[0] in OWNED_TABLES
    for key in list(config.scan_iter(f"{absent[0]}|*")):
        config.delete(key)
    reports = Reports()
    policy = WatchPolicy(debounce_s=0.02, appear_probe_s=1.0)
    watcher = WatcherThread(reports, policy, rand=random.Random(9).random)
    try:
        watcher.sync({"leaf1": lab.target()})
        wait_for("the watch", lambda: watcher.states().get("leaf1") is WatchState.WATCHING)
        before = time.monotonic()
        config.hset(f"{absent[0]}|operator", "note", "made by hand")
        wait_for("the new table", lambda: reports.first_after(absent[0], before) is not None)
        watch = watcher.watcher.watch_of("leaf1")
        assert watch is not None
        assert absent[0] in watch.watched
    finally:
        watcher.close()
        config.delete(f"{absent[0]}|operator")
