"""Ten minutes of telemetry for a two-leaf fabric, in the collector's metric names
(docs/telemetry.md), written as OpenMetrics for ``promtool tsdb create-blocks-from``.

This stands in for the collector (``controller/collector.py``) where a test needs a
known history at once: the values are functions of the sample index, so a test can compute
what Prometheus must answer. Pointing the same tests at a real collector means starting
``LocalPrometheus`` with the collector as its target instead of backfilling this history.

The fabric (``telemetry_intent``): leaf1 and leaf2, ports Ethernet0 and Ethernet4 at 25 Gb/s,
classes bulk (queue 1, DWRR), storage (queue 3, DWRR, MQ-ECN) and ctrl (queue 7, STRICT, no
ECN). Every queue is quiet except leaf2 Ethernet4 queue 1, which drops 5 packets/s (a warn
under the default 1/s), and leaf2's agent runs on its static fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STEP_S = 5
POINTS = 120  # ten minutes
SWITCHES = ("leaf1", "leaf2")
PORTS = ("Ethernet0", "Ethernet4")
SPEED_BPS = 25e9
QUEUES = (("1", "bulk"), ("3", "storage"), ("7", "ctrl"))
MTU = 1500
DROPPING = ("leaf2", "Ethernet4", "1")


def telemetry_intent() -> dict[str, Any]:
    def switch(name: str, port: int) -> dict[str, Any]:
        return {
            "name": name,
            "role": "leaf",
            "gnmi": {"address": "127.0.0.1", "port": port},
            "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "ports": [{"name": p, "speed_gbps": 25} for p in PORTS],
        }

    return {
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 2_000_000},
        "switches": [switch("leaf1", 50051), switch("leaf2", 50052)],
        "service_classes": [
            {
                "name": "bulk",
                "dscp": [10],
                "queue": 1,
                "scheduling": {"type": "DWRR", "weight": 30},
            },
            {
                "name": "storage",
                "dscp": [18],
                "queue": 3,
                "scheduling": {"type": "DWRR", "weight": 70},
                "ecn": "mqecn",
            },
            {
                "name": "ctrl",
                "dscp": [48],
                "queue": 7,
                "scheduling": {"type": "STRICT"},
                "ecn": "off",
            },
        ],
    }


@dataclass(frozen=True)
class QueuePoint:
    tx_bytes: float
    tx_packets: float
    marked: float
    dropped: float
    occupancy: float
    threshold: float | None


def queue_point(switch: str, port: str, queue: str, i: int) -> QueuePoint:
    """Queue ``queue``'s values at sample ``i`` (0 .. POINTS-1)."""
    phase = i / 8 + (0.5 if switch == "leaf2" else 0.0) + (0.25 if port == "Ethernet4" else 0.0)
    if queue == "3":
        tx, fraction, threshold = (
            1.5e9 + 5e8 * math.sin(phase),
            0.12,
            90_000 + 30_000 * math.sin(phase),
        )
        occupancy = 40_000 + 25_000 * math.sin(i / 5)
    elif queue == "1":
        tx, fraction, threshold = 6e8, 0.05, 40_000.0
        occupancy = 20_000 + 10_000 * math.sin(i / 5)
    else:
        tx, fraction, threshold, occupancy = 1e6, 0.0, None, 1_500.0
    packets = tx / MTU
    dropped = 5.0 if (switch, port, queue) == DROPPING else 0.0
    return QueuePoint(tx, packets, packets * fraction, dropped, occupancy, threshold)


def last_point(switch: str, port: str, queue: str) -> QueuePoint:
    return queue_point(switch, port, queue, POINTS - 1)


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _queue_families(times: list[int]) -> Iterator[str]:
    fields: dict[str, Callable[[QueuePoint], float | None]] = {
        "sluice_queue_tx_bytes_per_second": lambda p: p.tx_bytes,
        "sluice_queue_tx_packets_per_second": lambda p: p.tx_packets,
        "sluice_queue_dropped_packets_per_second": lambda p: p.dropped,
        "sluice_queue_dropped_bytes_per_second": lambda p: p.dropped * MTU,
        "sluice_queue_ecn_marked_packets_per_second": lambda p: p.marked,
        "sluice_queue_mark_fraction": lambda p: p.marked / p.tx_packets,
        "sluice_queue_occupancy_bytes": lambda p: p.occupancy,
        "sluice_queue_watermark_bytes": lambda p: p.occupancy * 1.2,
        "sluice_queue_threshold_bytes": lambda p: p.threshold,
    }
    for name, value_of in fields.items():
        yield f"# TYPE {name} gauge"
        for switch in SWITCHES:
            for port in PORTS:
                for queue, klass in QUEUES:
                    labels = _labels(switch=switch, port=port, queue=queue, **{"class": klass})
                    for i, t in enumerate(times):
                        value = value_of(queue_point(switch, port, queue, i))
                        if value is not None:
                            yield f"{name}{labels} {value:.6g} {t}"
    yield "# TYPE sluice_queue_threshold_info gauge"
    for switch in SWITCHES:
        basis = "stale_fallback" if switch == "leaf2" else "computed"
        for port in PORTS:
            for queue, klass in QUEUES[:2]:
                labels = _labels(
                    switch=switch, port=port, queue=queue, basis=basis, **{"class": klass}
                )
                yield from (f"sluice_queue_threshold_info{labels} 1 {t}" for t in times)


def _port_families(times: list[int]) -> Iterator[str]:
    def tx(switch: str, port: str, i: int) -> float:
        return sum(queue_point(switch, port, q, i).tx_bytes for q, _ in QUEUES)

    fields: dict[str, Callable[[str, str, int], float]] = {
        "sluice_port_tx_bytes_per_second": tx,
        "sluice_port_rx_bytes_per_second": lambda s, p, i: 0.8 * tx(s, p, i),
        "sluice_port_utilisation": lambda s, p, i: tx(s, p, i) * 8 / SPEED_BPS,
        "sluice_port_speed_bits_per_second": lambda s, p, i: SPEED_BPS,
    }
    for name, value_of in fields.items():
        yield f"# TYPE {name} gauge"
        for switch in SWITCHES:
            for port in PORTS:
                labels = _labels(switch=switch, port=port)
                yield from (
                    f"{name}{labels} {value_of(switch, port, i):.6g} {t}"
                    for i, t in enumerate(times)
                )


def _pfc_families(times: list[int]) -> Iterator[str]:
    """leaf1's PFC priority 3 (the storage class's) on each port: a few pauses a second, no
    priority-group drop, a headroom watermark: quiet, below every health threshold."""
    fields = {
        "sluice_port_pfc_rx_pause_frames_per_second": ("priority", 12.0),
        "sluice_port_pfc_tx_pause_frames_per_second": ("priority", 3.0),
        "sluice_pg_dropped_packets_per_second": ("pg", 0.0),
        "sluice_pg_headroom_watermark_bytes": ("pg", 4096.0),
    }
    for name, (index, value) in fields.items():
        yield f"# TYPE {name} gauge"
        for port in PORTS:
            labels = _labels(switch="leaf1", port=port, **{index: "3", "class": "storage"})
            yield from (f"{name}{labels} {value} {t}" for t in times)


def _switch_families(times: list[int]) -> Iterator[str]:
    gauges = {
        "sluice_agent_heartbeat_age_seconds": 0.2,
        "sluice_agent_orders_version": 3,
        "sluice_agent_loop_seconds": 0.001,
        "sluice_switch_stream_up": 1,
        "sluice_switch_last_update_age_seconds": 1.0,
    }
    for name, value in gauges.items():
        yield f"# TYPE {name} gauge"
        for switch in SWITCHES:
            yield from (f"{name}{_labels(switch=switch)} {value} {t}" for t in times)
    yield "# TYPE sluice_agent_mode_info gauge"
    for switch in SWITCHES:
        mode = "fallback" if switch == "leaf2" else "dynamic"
        labels = _labels(switch=switch, mode=mode, algorithm="mqecn")
        yield from (f"sluice_agent_mode_info{labels} 1 {t}" for t in times)
    yield "# TYPE sluice_collector_lag_seconds gauge"
    yield from (f'sluice_collector_lag_seconds{{collector="0"}} 0.3 {t}' for t in times)
    yield "# TYPE sluice_collector_updates counter"
    yield from (
        f'sluice_collector_updates_total{{collector="0"}} {1000 * i} {t}'
        for i, t in enumerate(times)
    )


def write_history(path: Path, end_unix_s: int) -> Path:
    """The OpenMetrics file of the ten minutes ending at ``end_unix_s``."""
    times = [end_unix_s - STEP_S * (POINTS - 1 - i) for i in range(POINTS)]
    lines = [
        *_queue_families(times),
        *_port_families(times),
        *_pfc_families(times),
        *_switch_families(times),
        "# EOF",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
