"""The collector end to end: a real data plane writes COUNTERS_DB into a real redis-server, a
real vsonic gNMI server streams it over gRPC Subscribe on TLS (every switch session here, as
on a fabric), ``python -m controller.collector`` turns it into metrics, and a real
Prometheus scrapes them every second. Rates and resets are read back from Prometheus with
PromQL (``controller.prometheus.promql``), the way the controller reads them; stream state and
freshness are read from the collector's own endpoint, which reports them at once.

Offered traffic is known: one on/off class whose on periods average 10^5 s (so it is on for
the whole test) at 0.4 Gb/s on a 1 Gb/s port: nothing queues long or drops, so the queue
sends 0.4e9 / 8 = 50,000,000 B/s and its port the same."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from controller.errors import PrometheusUnreachable
from controller.intent.loader import parse_intent
from controller.prometheus.promql import PromQL, make_promql
from controller.sonic.compile import compile_switch
from controller.telemetry.metrics import COUNTER_FAMILIES
from lab.prometheus import LocalPrometheus
from tests.integration.dataplane.conftest import Running, SeededSwitch, eventually
from tests.integration.tls_certs import SERVER_NAME, self_signed_tls
from vsonic.dataplane import agent_command
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.redis_process import free_port
from vsonic.switch import Switch, Targets
from vsonic.tether import start_tethered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

OFFERED_BYTES_PER_S = 0.4e9 / 8
TRAFFIC = "steady port=Ethernet0 queue=1 kind=onoff rate_gbps=0.4 on_ms=100000000 off_ms=1\n"
PASSWORD = "telemetry-test"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


# Two DWRR classes, storage MQ-ECN on queue 1 (the traffic's queue), bulk static on queue 2.
CLASSES = [
    {"name": "storage", "dscp": [10], "queue": 1, "scheduling": {"type": "DWRR", "weight": 50},
     "ecn": "mqecn"},
    {"name": "bulk", "dscp": [12], "queue": 2, "scheduling": {"type": "DWRR", "weight": 50},
     "ecn": "per-queue-minimum"},
]  # fmt: skip


def _intent(gnmi_port: int, classes: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
        "service_classes": classes or [],
        "switches": [
            {
                "name": "vs1",
                "role": "leaf",
                "gnmi": {"address": "127.0.0.1", "port": gnmi_port},
                "credential_ref": "env:SLUICE_GNMI_PASSWORD",
                "ports": [
                    {"name": "Ethernet0", "speed_gbps": 1},
                    {"name": "Ethernet4", "speed_gbps": 1},
                ],
            }
        ],
    }


def _serve(switch: SeededSwitch, port: int, tls: TlsFiles) -> RunningServer:
    targets = Targets([Switch("vs1", switch.store)], fleet=False)
    service = GnmiService(targets, Clock(), Credentials("admin", PASSWORD))
    return start_server(f"127.0.0.1:{port}", service, tls=tls)


class Scraper:
    """The collector's metrics endpoint (``samples``, ``value``) and the Prometheus that
    scrapes it (``query``: one PromQL instant query's values, ``promql_value``: the one
    value of a query that selects one series)."""

    def __init__(self, port: int, promql: PromQL) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.promql = promql

    def samples(self) -> Samples:
        try:
            text = httpx.get(self.url, timeout=5).text
        except httpx.HTTPError:
            return {}
        out: Samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples().get((name, tuple(sorted(labels.items()))))

    def query(self, promql: str) -> list[float]:
        try:
            return [sample.value for sample in self.promql.instant(promql)]
        except PrometheusUnreachable:
            return []

    def promql_value(self, promql: str) -> float | None:
        values = self.query(promql)
        assert len(values) <= 1, f"{promql} selects {len(values)} series"
        return values[0] if values else None


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    """The switch's certificate: every gNMI server here serves TLS with it."""
    folder = tmp_path / "tls"
    folder.mkdir()
    return self_signed_tls(folder)


@pytest.fixture
def collector(tmp_path: Path, tls: TlsFiles) -> Iterator[Callable[..., Scraper]]:
    """Start the collector on the intent's one switch (over TLS, trusting ``tls``) and a
    Prometheus scraping it every second; both are stopped after the test."""
    processes: list[subprocess.Popen[bytes]] = []
    servers: list[LocalPrometheus] = []
    clients: list[PromQL] = []

    def start(gnmi_port: int, classes: list[dict[str, object]] | None = None) -> Scraper:
        intent = tmp_path / "intent.yaml"
        intent.write_text(yaml.safe_dump(_intent(gnmi_port, classes)))
        metrics_port = free_port()
        env = {
            **os.environ,
            "SLUICE_GNMI_PASSWORD": PASSWORD,
            "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port),
            # Rates over >= 3 s of switch time, so scheduling delays on a busy machine average out.
            "SLUICE_TELEMETRY_RATE_WINDOW_S": "3",
            "SLUICE_GNMI_INSECURE": "false",
            "SLUICE_GNMI_TLS_CA": str(tls.cert),
            "SLUICE_GNMI_TLS_SERVER_NAME": SERVER_NAME,
        }
        log = (tmp_path / "collector.log").open("wb")
        processes.append(
            start_tethered(
                [sys.executable, "-m", "controller.collector", "--intent", str(intent)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        prometheus = LocalPrometheus(
            tmp_path / f"prometheus-{len(servers)}", targets=[f"127.0.0.1:{metrics_port}"]
        )
        servers.append(prometheus)
        prometheus.start()
        clients.append(make_promql(prometheus.url, timeout_s=10))
        return Scraper(metrics_port, clients[-1])

    try:
        yield start
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


QUEUE_RATE = 'sluice_queue_tx_bytes_per_second{switch="vs1",port="Ethernet0",queue="1"}'
PORT_RATE = 'sluice_port_tx_bytes_per_second{switch="vs1",port="Ethernet0"}'
SWITCH_SUM = 'switch:sluice_queue_tx_bytes_per_second:sum{switch="vs1"}'
RESETS = 'sluice_counter_resets_total{switch="vs1",port="Ethernet0",queue="1"}'
RATE_METRICS = (
    *(
        f.name
        for f in COUNTER_FAMILIES
        if f.name.startswith("sluice_queue_") and f.name.endswith("_per_second")
    ),
    "sluice_port_tx_bytes_per_second",
    "sluice_port_rx_bytes_per_second",
)


def _lowest_rate(scraper: Scraper) -> float:
    """The lowest value Prometheus recorded for any rate series since the test began (one
    query per metric: ``min_over_time`` drops the name, so one selector over every rate
    metric would merge their series)."""
    lowest = [scraper.promql_value(f"min(min_over_time({name}[10m]))") for name in RATE_METRICS]
    recorded = [value for value in lowest if value is not None]
    assert recorded, "Prometheus recorded no rate at all"
    return min(recorded)


def _queue_rate(scraper: Scraper) -> float | None:
    """The queue's rate as Prometheus last recorded it (through PromQL)."""
    return scraper.promql_value(QUEUE_RATE)


def _fresh(scraper: Scraper) -> bool:
    age = scraper.value("sluice_switch_last_update_age_seconds", switch="vs1")
    return age is not None and age < 2


def _within(value: float | None, expected: float, tolerance: float) -> bool:
    return value is not None and abs(value - expected) <= tolerance * expected


def test_queue_rates_resets_and_a_switch_that_goes_away(
    switch: SeededSwitch,
    start_dataplane: Callable[..., Running],
    collector: Callable[..., Scraper],
    tls: TlsFiles,
) -> None:
    dataplane = start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port, tls)
    try:
        scraper = collector(gnmi_port)
        eventually(lambda: scraper.value("sluice_switch_stream_up", switch="vs1") == 1.0,
                   "the stream is up")  # fmt: skip
        # Per-queue rate, as Prometheus recorded it, agrees with the offered traffic within
        # 5 %; so do the port's rate and the switch's recorded sum over its queues.
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "queue rate in Prometheus within 5 % of the offered 50 MB/s")  # fmt: skip
        eventually(lambda: _within(scraper.promql_value(PORT_RATE), OFFERED_BYTES_PER_S, 0.05),
                   "port rate in Prometheus within 5 % of the offered 50 MB/s")  # fmt: skip
        eventually(lambda: _within(scraper.promql_value(SWITCH_SUM), OFFERED_BYTES_PER_S, 0.05),
                   "the recording rule's per-switch sum within 5 %")  # fmt: skip
        speed = scraper.value("sluice_port_speed_bits_per_second", switch="vs1", port="Ethernet0")
        assert speed == 1e9

        # A data plane restart starts every count from 0: one reset, never a negative rate.
        assert dataplane.stop() == 0
        start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
        eventually(lambda: scraper.promql_value(RESETS) == 1,
                   "one reset event for the restarted queue, in Prometheus")  # fmt: skip
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "the rate is back after the reset")  # fmt: skip
        assert _lowest_rate(scraper) >= 0
        assert scraper.promql_value(RESETS) == 1

        # The gNMI server goes away: the stream is down and the data goes stale; it comes back.
        server.stop(0)
        eventually(lambda: scraper.value("sluice_switch_stream_up", switch="vs1") == 0.0,
                   "the stream is down")  # fmt: skip
        time.sleep(2)
        age = scraper.value("sluice_switch_last_update_age_seconds", switch="vs1")
        assert age is not None
        assert age >= 2
        server = _serve(switch, gnmi_port, tls)
        eventually(lambda: scraper.value("sluice_switch_stream_up", switch="vs1") == 1.0,
                   "resubscribed after the switch came back")  # fmt: skip
        eventually(lambda: _fresh(scraper), "fresh updates again")
        assert (scraper.value("sluice_collector_updates_total", collector="0/1") or 0) > 0
    finally:
        server.stop(0)


def test_a_tls_stream_survives_a_redis_restart_under_the_switch(
    switch: SeededSwitch,
    start_dataplane: Callable[..., Running],
    collector: Callable[..., Scraper],
    tls: TlsFiles,
) -> None:
    start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port, tls)
    try:
        scraper = collector(gnmi_port)
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "queue rate over TLS within 5 % of the offered 50 MB/s")  # fmt: skip
        # Redis goes away: nothing is published, so the data goes stale. It comes back empty;
        # the switch boots its databases again (the seed), the data plane reconnects and
        # publishes again, and the stream follows.
        switch.server.stop()
        eventually(lambda: not _fresh(scraper), "no fresh updates while Redis is down")
        switch.server.start()
        switch.seed()

        # The stream may end and subscribe again on the way (the counters table comes back
        # after the maps): what must hold is a stream up with fresh updates and right rates.
        def recovered() -> bool:
            return (
                _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05)
                and _fresh(scraper)
                and scraper.value("sluice_switch_stream_up", switch="vs1") == 1.0
            )

        eventually(recovered, "stream up, rates back within 5 % after the Redis restart",
                   deadline_s=90)  # fmt: skip
        assert _lowest_rate(scraper) >= 0
    finally:
        server.stop(0)


def test_the_agents_state_and_classes_reach_the_metrics(
    switch: SeededSwitch,
    start_dataplane: Callable[..., Running],
    agent_binary: Path,
    collector: Callable[..., Scraper],
    tmp_path: Path,
    tls: TlsFiles,
) -> None:
    intent = parse_intent(_intent(1, CLASSES))
    config = compile_switch(intent, intent.switches[0])
    switch.write_config({f"{table}|{key}": fields for (table, key), fields in config.items()})
    start_dataplane(TRAFFIC)
    agent_log = (tmp_path / "agent.log").open("wb")
    agent = start_tethered(
        agent_command(agent_binary, switch.port), stdout=agent_log, stderr=subprocess.STDOUT
    )
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port, tls)
    try:
        scraper = collector(gnmi_port, CLASSES)
        labels = {"switch": "vs1", "port": "Ethernet0", "queue": "1", "class": "storage"}
        eventually(lambda: (scraper.value("sluice_queue_threshold_bytes", **labels) or 0) > 0,
                   "the agent's threshold for storage's queue")  # fmt: skip
        version = config[("SLUICE_AGENT", "global")]["version"]
        mode = scraper.value(
            "sluice_agent_mode_info", switch="vs1", mode="dynamic", algorithm="mqecn"
        )
        assert mode == 1.0
        assert scraper.value("sluice_agent_orders_version", switch="vs1") == int(version, 16)
        age = scraper.value("sluice_agent_heartbeat_age_seconds", switch="vs1")
        assert age is not None
        assert age < 30
        # The traffic's queue carries its class name on the rate series too.
        eventually(lambda: (scraper.value("sluice_queue_tx_bytes_per_second", **labels) or 0) > 0,
                   "storage's rate with its class label")  # fmt: skip
        basis = [k for k in scraper.samples() if k[0] == "sluice_queue_threshold_info"]
        assert basis
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        server.stop(0)
