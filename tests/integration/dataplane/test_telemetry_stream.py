"""The collector end to end: a real data plane writes COUNTERS_DB into a real redis-server, a
real vsonic gNMI server streams it over gRPC Subscribe, and ``python -m
controller.telemetry.collector`` turns it into the metrics scraped here over HTTP.

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

from controller.policy.loader import parse_intent
from controller.sonic.compile import compile_switch
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


def _serve(switch: SeededSwitch, port: int, tls: TlsFiles | None = None) -> RunningServer:
    targets = Targets([Switch("vs1", switch.store)], fleet=False)
    service = GnmiService(targets, Clock(), Credentials("admin", PASSWORD))
    return start_server(f"127.0.0.1:{port}", service, tls=tls)


class Scraper:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

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


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Callable[..., Scraper]]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(
        gnmi_port: int, classes: list[dict[str, object]] | None = None, **extra_env: str
    ) -> Scraper:
        intent = tmp_path / "intent.yaml"
        intent.write_text(yaml.safe_dump(_intent(gnmi_port, classes)))
        metrics_port = free_port()
        env = {
            **os.environ,
            "SLUICE_GNMI_PASSWORD": PASSWORD,
            "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port),
            # Rates over >= 3 s of switch time, so scheduling delays on a busy machine average out.
            "SLUICE_TELEMETRY_RATE_WINDOW_S": "3",
            # The switches here serve plaintext unless a test gives TLS settings.
            "SLUICE_GNMI_INSECURE": "false" if extra_env else "true",
            **extra_env,
        }
        log = (tmp_path / "collector.log").open("wb")
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "controller.telemetry.collector", "--intent", str(intent)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        return Scraper(metrics_port)

    try:
        yield start
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


def _queue_rate(scraper: Scraper) -> float | None:
    return scraper.value(
        "sluice_queue_tx_bytes_per_second",
        switch="vs1",
        port="Ethernet0",
        queue="1",
        **{"class": ""},
    )


def _fresh(scraper: Scraper) -> bool:
    age = scraper.value("sluice_switch_last_update_age_seconds", switch="vs1")
    return age is not None and age < 2


def _within(value: float | None, expected: float, tolerance: float) -> bool:
    return value is not None and abs(value - expected) <= tolerance * expected


def test_queue_rates_resets_and_a_switch_that_goes_away(
    switch: SeededSwitch,
    start_dataplane: Callable[..., Running],
    collector: Callable[..., Scraper],
) -> None:
    dataplane = start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port)
    try:
        scraper = collector(gnmi_port)
        eventually(lambda: scraper.value("sluice_switch_stream_up", switch="vs1") == 1.0,
                   "the stream is up")  # fmt: skip
        # Per-queue rate agrees with the offered traffic within 5 %, and the port's too.
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "queue rate within 5 % of the offered 50 MB/s")  # fmt: skip
        port_tx = scraper.value("sluice_port_tx_bytes_per_second", switch="vs1", port="Ethernet0")
        assert _within(port_tx, OFFERED_BYTES_PER_S, 0.05), port_tx
        speed = scraper.value("sluice_port_speed_bits_per_second", switch="vs1", port="Ethernet0")
        assert speed == 1e9

        # A data plane restart starts every count from 0: one reset, never a negative rate.
        assert dataplane.stop() == 0
        start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
        reset = {"switch": "vs1", "port": "Ethernet0", "queue": "1"}
        seen_rates: list[float] = []

        def reset_seen() -> bool:
            samples = scraper.samples()
            seen_rates.extend(v for (n, _), v in samples.items() if n.endswith("_per_second"))
            return samples.get(("sluice_counter_resets_total", tuple(sorted(reset.items())))) == 1

        eventually(reset_seen, "one reset event for the restarted queue")
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "the rate is back after the reset")  # fmt: skip
        assert min(seen_rates) >= 0
        assert scraper.value("sluice_counter_resets_total", **reset) == 1

        # The gNMI server goes away: the stream is down and the data goes stale; it comes back.
        server.stop(0)
        eventually(lambda: scraper.value("sluice_switch_stream_up", switch="vs1") == 0.0,
                   "the stream is down")  # fmt: skip
        time.sleep(2)
        age = scraper.value("sluice_switch_last_update_age_seconds", switch="vs1")
        assert age is not None
        assert age >= 2
        server = _serve(switch, gnmi_port)
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
    tmp_path: Path,
) -> None:
    start_dataplane(TRAFFIC, "--flex-interval-ms", "200")
    tls = self_signed_tls(tmp_path)
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port, tls)
    try:
        scraper = collector(
            gnmi_port,
            SLUICE_GNMI_TLS_CA=str(tls.cert),
            SLUICE_GNMI_TLS_SERVER_NAME=SERVER_NAME,
        )
        eventually(lambda: _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05),
                   "queue rate over TLS within 5 % of the offered 50 MB/s")  # fmt: skip
        # Redis goes away: nothing is published, so the data goes stale. It comes back empty;
        # the switch boots its databases again (the seed), the data plane reconnects and
        # publishes again, and the stream follows.
        switch.server.stop()
        eventually(lambda: not _fresh(scraper), "no fresh updates while Redis is down")
        switch.server.start()
        switch.seed()
        seen_rates: list[float] = []

        def recovered() -> bool:
            samples = scraper.samples()
            seen_rates.extend(v for (n, _), v in samples.items() if n.endswith("_per_second"))
            return _within(_queue_rate(scraper), OFFERED_BYTES_PER_S, 0.05) and _fresh(scraper)

        eventually(recovered, "rates back within 5 % after the Redis restart", deadline_s=90)
        assert min(seen_rates) >= 0
        assert scraper.value("sluice_switch_stream_up", switch="vs1") == 1.0
    finally:
        server.stop(0)


def test_the_agents_state_and_classes_reach_the_metrics(
    switch: SeededSwitch,
    start_dataplane: Callable[..., Running],
    agent_binary: Path,
    collector: Callable[..., Scraper],
    tmp_path: Path,
) -> None:
    intent = parse_intent(_intent(1, CLASSES))
    config = compile_switch(intent, intent.switches[0])
    switch.write_config({f"{table}|{key}": fields for (table, key), fields in config.items()})
    start_dataplane(TRAFFIC)
    agent_log = (tmp_path / "agent.log").open("wb")
    agent = subprocess.Popen(
        agent_command(agent_binary, switch.port), stdout=agent_log, stderr=subprocess.STDOUT
    )
    gnmi_port = free_port()
    server = _serve(switch, gnmi_port)
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
