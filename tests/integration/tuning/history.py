"""Ten minutes of telemetry for the tuner's integration test, as OpenMetrics for promtool.

It stands in for the collector and the host exporter (named metrics of docs/telemetry.md and
docs/tuning.md); the values are simple functions of the sample index i (0..119, every 5 s)
so the test can state what each PromQL aggregate must be:

* leaf1 Ethernet0 (25 Gb/s, utilisation 0.5): storage (queue 3) sends 1.5e9 B/s, marks 0.1
  of its packets for i < 60 and 0.2 after, occupancy i x 1000 B, threshold 100 000 B; the
  port sends PFC pause frames on storage's priority 3 at 3/s for i < 60 and 1/s after, and
  receives 0.5/s (priority 0, no class, pauses too: nothing to tune);
* leaf1 Ethernet4 (100 Gb/s, utilisation 0.2): bulk (queue 1) sends 2.5e9 B/s, never
  marks, drops 2 packets/s; queue 0 has no class;
* hosts: QJUMP level 7 fan-in host1 i mod 4, host2 5 once (i = 100) else 1; largest packet
  host1 200 B, host2 1000 B once (i = 10) else 200 B; class rpc's finished flows, per host
  cumulative: 5i <= 10 kB, 9i <= 50 kB, 10i <= 2 MB, 10i in all; rpc's small flows'
  completion times, per host cumulative: 8i <= 1 ms, 9i <= 2 ms, 10i <= 10 ms, 10i in all;
  rpc's and bulk's medium flows (not small: no figure for bulk, none in rpc's): 5i, all
  > 10 ms.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.prometheus.promql import PromQL, make_promql
from lab.prometheus import running_prometheus

STEP_S = 5
POINTS = 120
SWITCH = "leaf1"
FLOW_BUCKETS = (("10000", 5), ("50000", 9), ("2000000", 10), ("+Inf", 10))
FCT_SMALL_BUCKETS = (("0.001", 8), ("0.002", 9), ("0.01", 10), ("+Inf", 10))
FCT_MEDIUM_BUCKETS = (("0.001", 0), ("0.002", 0), ("0.01", 0), ("+Inf", 5))


def tuner_intent() -> dict[str, Any]:
    return {
        "fabric": {
            "base_rtt_us": 40,
            "port_buffer_bytes": 2_000_000,
            "tuning": {"mode": "propose"},
        },
        "switches": [
            {
                "name": SWITCH,
                "role": "leaf",
                "gnmi": {"address": "127.0.0.1", "port": 50051},
                "credential_ref": "env:SLUICE_GNMI_PASSWORD",
                "ports": [
                    {"name": "Ethernet0", "speed_gbps": 25},
                    {"name": "Ethernet4", "speed_gbps": 100},
                ],
            }
        ],
        "service_classes": [
            {
                "name": "bulk",
                "dscp": [10],
                "queue": 1,
                "scheduling": {"type": "DWRR", "weight": 30},
                "ecn": "mqecn",
            },
            {
                "name": "storage",
                "dscp": [18],
                "queue": 3,
                "scheduling": {"type": "DWRR", "weight": 70},
                "ecn": "mqecn",
            },
        ],
    }


def _queue(port: str, queue: str, klass: str) -> str:
    return f'{{switch="{SWITCH}",port="{port}",queue="{queue}",class="{klass}"}}'


STORAGE = _queue("Ethernet0", "3", "storage")
BULK = _queue("Ethernet4", "1", "bulk")
UNCLASSED = _queue("Ethernet4", "0", "")


def _gauge(name: str, series: dict[str, Any], times: list[int]) -> Iterator[str]:
    yield f"# TYPE {name} gauge"
    for labels, value_of in series.items():
        yield from (f"{name}{labels} {value_of(i)} {t}" for i, t in enumerate(times))


def _families(times: list[int]) -> Iterator[str]:
    yield from _gauge(
        "sluice_queue_tx_bytes_per_second",
        {STORAGE: lambda i: 1.5e9, BULK: lambda i: 2.5e9, UNCLASSED: lambda i: 1e6},
        times,
    )
    yield from _gauge(
        "sluice_queue_mark_fraction",
        {STORAGE: lambda i: 0.1 if i < 60 else 0.2, BULK: lambda i: 0.0, UNCLASSED: lambda i: 0},
        times,
    )
    yield from _gauge(
        "sluice_queue_dropped_packets_per_second",
        {STORAGE: lambda i: 0.0, BULK: lambda i: 2.0, UNCLASSED: lambda i: 0.0},
        times,
    )
    yield from _gauge(
        "sluice_queue_occupancy_bytes",
        {STORAGE: lambda i: i * 1000, BULK: lambda i: 3000, UNCLASSED: lambda i: 0},
        times,
    )
    yield from _gauge("sluice_queue_threshold_bytes", {STORAGE: lambda i: 100_000}, times)
    storage_pfc = f'{{switch="{SWITCH}",port="Ethernet0",priority="3",class="storage"}}'
    unclassed_pfc = f'{{switch="{SWITCH}",port="Ethernet0",priority="0",class=""}}'
    yield from _gauge(
        "sluice_port_pfc_tx_pause_frames_per_second",
        {storage_pfc: lambda i: 3.0 if i < 60 else 1.0, unclassed_pfc: lambda i: 7.0},
        times,
    )
    yield from _gauge(
        "sluice_port_pfc_rx_pause_frames_per_second", {storage_pfc: lambda i: 0.5}, times
    )
    e0 = f'{{switch="{SWITCH}",port="Ethernet0"}}'
    e4 = f'{{switch="{SWITCH}",port="Ethernet4"}}'
    yield from _gauge("sluice_port_utilisation", {e0: lambda i: 0.5, e4: lambda i: 0.2}, times)
    yield from _gauge(
        "sluice_port_speed_bits_per_second", {e0: lambda i: 25e9, e4: lambda i: 100e9}, times
    )
    yield from _gauge(
        "sluice_host_qjump_fan_in",
        {
            '{host="host1",level="7"}': lambda i: i % 4,
            '{host="host2",level="7"}': lambda i: 5 if i == 100 else 1,
        },
        times,
    )
    yield from _gauge(
        "sluice_host_qjump_max_packet_bytes",
        {
            '{host="host1",level="7"}': lambda i: 200,
            '{host="host2",level="7"}': lambda i: 1000 if i == 10 else 200,
        },
        times,
    )
    yield "# TYPE sluice_host_flow_size_bytes histogram"
    for host in ("host1", "host2"):
        for i, t in enumerate(times):
            for le, per_step in FLOW_BUCKETS:
                labels = f'{{host="{host}",class="rpc",le="{le}"}}'
                yield f"sluice_host_flow_size_bytes_bucket{labels} {per_step * i} {t}"
            yield f'sluice_host_flow_size_bytes_count{{host="{host}",class="rpc"}} {10 * i} {t}'
            yield f'sluice_host_flow_size_bytes_sum{{host="{host}",class="rpc"}} {10_000 * i} {t}'
    yield "# TYPE sluice_host_flow_completion_seconds histogram"
    for host in ("host1", "host2"):
        for klass, size, buckets in (
            ("rpc", "small", FCT_SMALL_BUCKETS),
            ("rpc", "medium", FCT_MEDIUM_BUCKETS),
            ("bulk", "medium", FCT_MEDIUM_BUCKETS),
        ):
            labels = f'host="{host}",class="{klass}",size="{size}"'
            for i, t in enumerate(times):
                for le, per_step in buckets:
                    bucket = f'{{{labels},le="{le}"}}'
                    yield f"sluice_host_flow_completion_seconds_bucket{bucket} {per_step * i} {t}"
                total = buckets[-1][1] * i
                yield f"sluice_host_flow_completion_seconds_count{{{labels}}} {total} {t}"
                yield f"sluice_host_flow_completion_seconds_sum{{{labels}}} {0.001 * total} {t}"


def write_history(path: Path, end_unix_s: int) -> Path:
    times = [end_unix_s - STEP_S * (POINTS - 1 - i) for i in range(POINTS)]
    path.write_text("\n".join([*_families(times), "# EOF"]) + "\n", encoding="utf-8")
    return path


@contextmanager
def history_promql(root: Path) -> Iterator[tuple[PromQL, datetime]]:
    """A real Prometheus backfilled with ``write_history`` ending two seconds ago, and a
    PromQL client on it; the time the history ends."""
    end = int(time.time()) - 2
    with running_prometheus(root / "server", history=write_history(root / "h.om", end)) as s:
        client = make_promql(s.url, 10.0)
        try:
            yield client, datetime.fromtimestamp(end, UTC)
        finally:
            client.close()


class HandClock:
    """A clock a test moves by hand (``clock.now = ...``)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now
