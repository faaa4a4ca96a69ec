"""What the collector-process tests share: switches that each serve gNMI over TLS on their
own endpoint, an intent naming them stored in PostgreSQL, the switches a collector's
/metrics says it streams, and a collector process on an intent file scraped by a real
Prometheus."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from controller.intent.loader import dump_intent
from controller.intent.models import Intent
from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import PromQL, make_promql
from controller.rollout.gates import Reader
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.store.db import make_engine, make_sessions
from lab.prometheus import LocalPrometheus
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.redis_process import free_port
from vsonic.seed import default_ports
from vsonic.tether import start_tethered


@contextmanager
def scraped_collector(
    intent: Intent, root: Path, env: Mapping[str, str]
) -> Iterator[tuple[Reader, PromQL]]:
    """``python -m controller.collector --intent`` on ``intent`` (its log in
    ``root/collector.log``, ``env`` over this process's), scraped every second by a real
    Prometheus: its reader and client. Both stop after."""
    intent_file = root / "intent.yaml"
    intent_file.write_text(yaml.safe_dump(dump_intent(intent)))
    metrics_port = free_port()
    environ = {**os.environ, "SLUICE_TELEMETRY_METRICS_PORT": str(metrics_port), **env}
    with (root / "collector.log").open("wb") as log:
        collector = start_tethered(
            [sys.executable, "-m", "controller.collector", "--intent", str(intent_file)],
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = LocalPrometheus(root / "prometheus", targets=[f"127.0.0.1:{metrics_port}"])
    try:
        server.start()
        promql = make_promql(server.url, 5.0)
        try:
            yield promql_reader(promql), promql
        finally:
            promql.close()
    finally:
        server.stop()
        collector.terminate()
        collector.wait(timeout=30)


@contextmanager
def tls_switches(names: Sequence[str], tls: TlsFiles, password: str) -> Iterator[dict[str, int]]:
    """One in-memory switch per gNMI server over TLS (an intent gives each its own endpoint):
    the gNMI port of each switch by name."""
    running: list[RunningServer] = []
    try:
        for name in names:
            service = GnmiService(
                fleet_targets([name], default_ports(2)), Clock(), Credentials("admin", password)
            )
            running.append(start_server("127.0.0.1:0", service, tls))
        yield {name: server.port for name, server in zip(names, running, strict=True)}
    finally:
        for server in running:
            server.stop(grace_s=0.2)


def store_intent(db_url: str, gnmi_ports: dict[str, int]) -> None:
    """The first intent version: one two-port leaf per switch, its password from the
    collector's environment (``SLUICE_GNMI_PASSWORD``)."""
    switches = [
        {
            "name": name, "role": "leaf", "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "gnmi": {"address": "127.0.0.1", "port": port, "target": name},
            "ports": [{"name": "Ethernet0", "speed_gbps": 100},
                      {"name": "Ethernet4", "speed_gbps": 100}],
        }
        for name, port in gnmi_ports.items()
    ]  # fmt: skip
    data = {"fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000}, "switches": switches}
    store_first_intent(db_url, data)


def store_first_intent(db_url: str, data: dict[str, Any]) -> None:
    """``data`` as the first intent version in the database at ``db_url``."""
    engine = make_engine(db_url)
    try:
        service = IntentService(make_sessions(engine), clock=lambda: datetime.now(UTC))
        service.replace(data, expected=0, actor=Actor("test", "r1"), reason="collector test")
    finally:
        engine.dispose()


def streaming_switches(metrics_port: int) -> set[str]:
    """The switches whose stream this collector reports up (none while it does not answer)."""
    try:
        body = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return set()
    return {
        s.labels["switch"]
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == "sluice_switch_stream_up" and s.value == 1.0
    }
