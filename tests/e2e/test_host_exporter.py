"""The host exporter end to end: four namespaced hosts configured by the real playbook over
real SSH (``sluice_host_exporter`` with the DSCP classes that mark connections), real TCP
connections of known sizes and UDP at a QJUMP level between them, a real Prometheus in the
fabric's control namespace scraping every host's exporter, and the tuner's summary and PIAS
rule reading that Prometheus.

Sizes are the bytes of a connection's larger direction, IP and TCP headers included (what
conntrack counts and PIAS thresholds are compared with): 3 000 B of payload is 3 000 B plus
about 52 B per packet, so it lands in the 4 000 B bucket, never the 2 000 B one.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.prometheus.promql import PromQL, make_promql
from controller.qos.pias import demotion_thresholds, load_workload
from controller.telemetry.tuning_summary import read_summary
from controller.tuning.pias import PiasInUse, tune_pias
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import TelemetrySummary
from lab import netns
from lab.prometheus import LocalPrometheus
from tests.e2e.playbook import run_site

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2", "h3", "h4"]
TRAFFIC = Path(__file__).with_name("flow_traffic.py")
PORT = 9140
VOICE_LEVEL = 7
CLASSES = [
    {"name": "rpc", "dscp": 10, "match": {"protocol": "tcp", "dports": [7000, 7002]}},
    {"name": "bulk", "dscp": 8, "match": {"protocol": "tcp", "dports": [7001]}},
    {
        "name": "voice",
        "dscp": 46,
        "priority": 0x10010 + VOICE_LEVEL,
        "match": {"protocol": "udp", "dports": [7007]},
    },
]
REPLY_BYTES = 20_000


@dataclass
class Measured:
    fabric: netns.Fabric
    promql: PromQL
    summary: TelemetrySummary
    host_vars: dict[str, dict[str, object]]


def _host_vars(fabric: netns.Fabric, state_root: Path) -> dict[str, dict[str, object]]:
    return {
        host.name: {
            "sluice_dscp": CLASSES,
            "sluice_host_exporter": {
                "listen_address": host.address,
                "port": PORT,
                "state_dir": str(state_root / host.name),
                "reap_interval_s": 0.5,
                "fan_in_window_ms": 50,
            },
        }
        for host in fabric.hosts
    }


def _spawn(fabric: netns.Fabric, host: str, *args: object) -> subprocess.Popen[str]:
    argv = [sys.executable, str(TRAFFIC), *(str(a) for a in args)]
    return subprocess.Popen(
        fabric.host_exec(host, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _run(fabric: netns.Fabric, host: str, *args: object) -> None:
    argv = [sys.executable, str(TRAFFIC), *(str(a) for a in args)]
    subprocess.run(fabric.host_exec(host, argv), check=True, timeout=120)


def _wait_for(promql: PromQL, query: str, wanted: float, timeout_s: float = 60) -> float:
    """The query's (single) value once it reaches ``wanted``; the last value on time-out."""
    deadline = time.monotonic() + timeout_s
    value = math.nan
    while time.monotonic() < deadline:
        samples = promql.instant(query)
        value = samples[0].value if samples else math.nan
        if value >= wanted:
            return value
        time.sleep(0.5)
    return value


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    root = tmp_path_factory.mktemp("host-exporter")
    with netns.running(len(HOSTS), names=HOSTS) as fabric:
        host_vars = _host_vars(fabric, root / "state")
        run = run_site(fabric, host_vars, tags="dscp,host_exporter")
        assert run.returncode == 0, run.stdout[-3000:]
        # conntrack's TIME_WAIT is left at its 120 s: the TCP connections below are reported
        # when they end, well within the wait for them (60 s at most).
        targets = [f"{h.address}:{PORT}" for h in fabric.hosts]
        prometheus = LocalPrometheus(
            root / "prometheus", host_targets=targets, netns=fabric.layout.control_netns
        )
        servers = [
            _spawn(fabric, "h1", "serve", 7000, 7001),
            _spawn(fabric, "h1", "serve", 7002, "--reply", REPLY_BYTES),
        ]
        try:
            for server in servers:
                assert server.stdout is not None
                assert server.stdout.readline().strip() == "ready"
            with prometheus:
                promql = make_promql(prometheus.url, 10.0)
                try:
                    up = 'sum(up{job="sluice-host-exporter"})'
                    assert _wait_for(promql, up, len(HOSTS)) == len(HOSTS)
                    time.sleep(2)  # a zero sample of each series before the flows
                    h1 = fabric.host("h1").address
                    udp = [
                        _spawn(fabric, sender, "udp", h1, 7007, size, 1.5)
                        for sender, size in (("h2", 300), ("h3", 1000), ("h4", 300))
                    ]
                    # Each starts sending once all are started: three senders at once.
                    for sender in udp:
                        assert sender.stdout is not None
                        assert sender.stdout.readline().strip() == "ready"
                    for sender in udp:
                        assert sender.stdin is not None
                        sender.stdin.write("go\n")
                        sender.stdin.flush()
                    _run(fabric, "h2", "flows", h1, 7000, 3_000, 6)
                    _run(fabric, "h2", "flows", h1, 7000, 50_000, 4)
                    _run(fabric, "h2", "flows", h1, 7001, 1_500_000, 2)
                    _run(fabric, "h3", "ask", h1, 7002, 5)
                    for sender in udp:
                        assert sender.wait(timeout=30) == 0
                    finished = "sum(sluice_host_flow_size_bytes_count{class=~'rpc|bulk'})"
                    _wait_for(promql, finished, 17)
                    time.sleep(2)  # one more scrape of every host
                    summary = read_summary(promql, datetime.now(UTC), 120)
                    yield Measured(fabric, promql, summary, host_vars)
                finally:
                    promql.close()
        finally:
            for server in servers:
                server.kill()
                server.wait()


def _buckets(measured: Measured, host: str, klass: str) -> dict[float, float]:
    samples = measured.promql.instant(
        f'sluice_host_flow_size_bytes_bucket{{host="{host}",class="{klass}"}}'
    )
    return {float(s.labels["le"]): s.value for s in samples}


def test_finished_flows_land_in_their_size_buckets_and_classes(measured: Measured) -> None:
    rpc = _buckets(measured, "h2", "rpc")
    # six 3 000 B flows and four 50 000 B ones, counted by h2, which sent them
    assert (rpc[2000], rpc[4000], rpc[32000], rpc[64000], rpc[math.inf]) == (0, 6, 6, 10, 10)
    bulk = _buckets(measured, "h2", "bulk")
    assert (bulk[1024000], bulk[2048000], bulk[math.inf]) == (0, 2, 2)
    # h1 answered h3's five requests with 20 000 B each: h1 sent the larger direction
    answered = _buckets(measured, "h1", "rpc")
    assert (answered[16000], answered[32000], answered[math.inf]) == (0, 5, 5)
    # nobody counts a connection twice: h1 received h2's flows, h3 only asked
    assert _buckets(measured, "h3", "rpc").get(math.inf, 0) == 0
    assert _buckets(measured, "h1", "bulk").get(math.inf, 0) == 0
    lost = measured.promql.instant("sum(sluice_host_flow_events_lost_total)")
    assert lost[0].value == 0


def test_fan_in_and_largest_packet_at_the_level(measured: Measured) -> None:
    levels = {level.level: level for level in measured.summary.qjump_levels}
    voice = levels[VOICE_LEVEL]
    # three senders at level 7 at once (a datagram every 5 ms, a 50 ms window)
    assert voice.max_fan_in == 3
    # h3's 1 000 B datagrams are 1 028 B IP packets: the 1 024-1 087 B band
    assert voice.max_packet_bytes == 1088
    h2 = measured.promql.instant(
        f'max_over_time(sluice_host_qjump_max_packet_bytes{{host="h2",level="{VOICE_LEVEL}"}}[2m])'
    )
    assert h2[0].value == 384  # 300 B datagrams: 328 B packets, the 320-383 B band


def test_the_pias_rule_proposes_thresholds_from_the_measured_sizes(measured: Measured) -> None:
    sample = measured.summary.flow_sizes["rpc"]
    assert sample.flows == pytest.approx(15, rel=0.25)  # increase() extrapolates a little
    current = PiasInUse("rpc", "websearch", 0.5, 2)
    in_use = tuple(demotion_thresholds(load_workload("websearch"), 0.5, 2))
    change = tune_pias(
        current,
        sample,
        ks_threshold=0.1,
        min_flows=10,
        now_s=time.time(),
        last_changed={},
        policy=StabilityPolicy(),
    )
    assert change is not None
    assert change.held is None, change
    assert change.current == in_use
    assert isinstance(change.proposed, tuple)
    (new,) = change.proposed
    # every rpc flow was at most 64 kB: the demotion threshold comes down into that range
    assert isinstance(new, int)
    assert new < in_use[0]
    assert new <= 64_000


def _supervisor_child(measured: Measured, host: str) -> int:
    exporter = measured.host_vars[host]["sluice_host_exporter"]
    assert isinstance(exporter, dict)
    pidfile = Path(exporter["state_dir"]) / f"host-exporter-{exporter['listen_address']}-{PORT}.pid"
    supervisor = pidfile.read_text().strip()
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    (child,) = children
    return int(child)


def test_a_second_run_changes_nothing_and_a_dead_exporter_is_restarted(measured: Measured) -> None:
    # counters and the senders' sets moved with the traffic; the table's definition did not
    again = run_site(measured.fabric, measured.host_vars, tags="dscp,host_exporter")
    assert again.returncode == 0, again.stdout[-3000:]
    changed = {host: [t["task"] for t in again.tasks(host, "changed")] for host in HOSTS}
    assert changed == {host: [] for host in HOSTS}, again.tasks("h1", "changed")
    child = _supervisor_child(measured, "h2")
    os.kill(child, signal.SIGKILL)
    restarts = 'sluice_host_exporter_restarts_total{host="h2"}'
    assert _wait_for(measured.promql, restarts, 1, timeout_s=30) == 1
    assert _supervisor_child(measured, "h2") != child
