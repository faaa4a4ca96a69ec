"""The collector's Prometheus metrics (names and labels: docs/telemetry.md, the telemetry
contract). Built at scrape time from the switches' state by one custom collector, so an
update costs no label lookup and a queue or switch that goes away leaves no stale series.

Cardinality is bounded by the fleet: per switch, ports x queues series for each queue metric
(64 x 8 = 512), one per port for each port metric, a handful per switch, and a few per
collector; ``class`` and ``basis`` are functions of (switch, port, queue), not new dimensions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from controller.telemetry.rates import NS_PER_S
from controller.telemetry.state import SwitchTelemetry, orders_version_number

QUEUE_LABELS = ("switch", "port", "queue", "class")
QUEUE_GAUGES = (
    ("sluice_queue_tx_bytes_per_second", "bytes the queue sent per second", "tx_bytes_per_second"),
    ("sluice_queue_tx_packets_per_second", "packets sent per second", "tx_packets_per_second"),
    (
        "sluice_queue_dropped_packets_per_second",
        "packets dropped per second",
        "dropped_packets_per_second",
    ),
    (
        "sluice_queue_dropped_bytes_per_second",
        "bytes dropped per second",
        "dropped_bytes_per_second",
    ),
    (
        "sluice_queue_ecn_marked_packets_per_second",
        "packets ECN-marked per second (switches with WRED/ECN counters only)",
        "ecn_marked_packets_per_second",
    ),
    ("sluice_queue_mark_fraction", "marked / sent packets over the last interval", "mark_fraction"),
    (
        "sluice_queue_occupancy_bytes",
        "current occupancy where polled, else the watermark since the last sample",
        "occupancy_bytes",
    ),
    ("sluice_queue_watermark_bytes", "the queue's shared-buffer watermark", "watermark_bytes"),
)


class TelemetryMetrics(Collector):
    """Every metric of one collector process, read from ``switches()`` at scrape time."""

    def __init__(
        self,
        collector: str,
        switches: Callable[[], Iterable[SwitchTelemetry]],
        wall_ns: Callable[[], int],
        lock: AbstractContextManager[object] | None = None,
    ) -> None:
        self._collector = collector
        self._switches = switches
        self._wall_ns = wall_ns
        self._lock = lock if lock is not None else nullcontext()

    def collect(self) -> Iterator[Metric]:
        """Every family, built while holding the lock the updates are applied under (the
        scrape runs on the HTTP server's thread), then handed out."""
        with self._lock:
            switches = list(self._switches())
            now = self._wall_ns()
            families = [
                *_queue_metrics(switches),
                *_port_metrics(switches),
                *_switch_metrics(switches, now),
                *self._collector_metrics(switches, now),
            ]
        yield from families

    def _collector_metrics(self, switches: list[SwitchTelemetry], now: int) -> Iterator[Metric]:
        labels = [self._collector]
        updates = CounterMetricFamily(
            "sluice_collector_updates", "updates ingested", labels=["collector"]
        )
        updates.add_metric(labels, sum(s.updates for s in switches))
        unknown = CounterMetricFamily(
            "sluice_collector_unknown_oids",
            "counter hashes no name map names",
            labels=["collector"],
        )
        unknown.add_metric(labels, sum(s.unknown_oids for s in switches))
        count = GaugeMetricFamily(
            "sluice_collector_switches", "switches this collector streams", labels=["collector"]
        )
        count.add_metric(labels, len(switches))
        lag = GaugeMetricFamily(
            "sluice_collector_lag_seconds",
            "now minus the newest update's switch timestamp",
            labels=["collector"],
        )
        newest = [s.last_update_ns for s in switches if s.last_update_ns is not None]
        if newest:
            lag.add_metric(labels, max(0.0, (now - max(newest)) / NS_PER_S))
        yield from (updates, unknown, count, lag)


def _queue_metrics(switches: list[SwitchTelemetry]) -> Iterator[Metric]:
    families = {
        attr: GaugeMetricFamily(name, doc, labels=QUEUE_LABELS) for name, doc, attr in QUEUE_GAUGES
    }
    threshold = GaugeMetricFamily(
        "sluice_queue_threshold_bytes", "the agent's threshold in force", labels=QUEUE_LABELS
    )
    info = GaugeMetricFamily(
        "sluice_queue_threshold_info",
        "who set the threshold in force",
        labels=(*QUEUE_LABELS, "basis"),
    )
    for sw in switches:
        for queue, view in sw.queue_views().items():
            labels = [sw.name, queue.port, queue.queue, sw.class_of(queue.queue)]
            for attr, family in families.items():
                value = getattr(view, attr)
                if value is not None:
                    family.add_metric(labels, float(value))
        for queue, state in sorted(sw.agent_queues.items()):
            labels = [sw.name, queue.port, queue.queue, sw.class_of(queue.queue)]
            if state.threshold_bytes is not None:
                threshold.add_metric(labels, state.threshold_bytes)
            info.add_metric([*labels, state.basis], 1)
    yield from families.values()
    yield from (threshold, info)


def _port_metrics(switches: list[SwitchTelemetry]) -> Iterator[Metric]:
    labels = ("switch", "port")
    tx = GaugeMetricFamily(
        "sluice_port_tx_bytes_per_second", "bytes sent per second", labels=labels
    )
    rx = GaugeMetricFamily(
        "sluice_port_rx_bytes_per_second", "bytes received per second", labels=labels
    )
    util = GaugeMetricFamily(
        "sluice_port_utilisation", "tx bits per second over the port speed", labels=labels
    )
    speed = GaugeMetricFamily(
        "sluice_port_speed_bits_per_second", "the port's line rate", labels=labels
    )
    for sw in switches:
        for port, bps in sorted(sw.port_speeds_bps.items()):
            speed.add_metric([sw.name, port], bps)
        for port in sorted(sw.ports):
            sent, received = sw.port_rates(port)
            if sent is not None:
                tx.add_metric([sw.name, port], sent)
            if received is not None:
                rx.add_metric([sw.name, port], received)
            used = sw.utilisation(port)
            if used is not None:
                util.add_metric([sw.name, port], used)
    yield from (tx, rx, util, speed)


def _switch_metrics(switches: list[SwitchTelemetry], now: int) -> Iterator[Metric]:
    one = ("switch",)
    heartbeat = GaugeMetricFamily(
        "sluice_agent_heartbeat_age_seconds", "now minus the agent's last heartbeat", labels=one
    )
    mode = GaugeMetricFamily(
        "sluice_agent_mode_info",
        "the agent's mode and algorithm",
        labels=("switch", "mode", "algorithm"),
    )
    version = GaugeMetricFamily(
        "sluice_agent_orders_version", "the orders' version in force (hex as a number)", labels=one
    )
    loop = GaugeMetricFamily("sluice_agent_loop_seconds", "the agent's last loop", labels=one)
    up = GaugeMetricFamily(
        "sluice_switch_stream_up", "1 while the Subscribe stream is up", labels=one
    )
    age = GaugeMetricFamily(
        "sluice_switch_last_update_age_seconds", "now minus the last update's timestamp", labels=one
    )
    resets = CounterMetricFamily(
        "sluice_counter_resets", "counters that went backwards", labels=("switch", "port", "queue")
    )
    for sw in switches:
        up.add_metric([sw.name], 1.0 if sw.stream_up else 0.0)
        last = sw.last_update_age_s(now)
        if last is not None:
            age.add_metric([sw.name], last)
        for event, count in sorted(
            sw.resets.items(), key=lambda item: (item[0].port, item[0].queue)
        ):
            resets.add_metric([sw.name, event.port, event.queue], count)
        agent = sw.agent
        if agent is None:
            continue
        if agent.heartbeat_ms is not None:
            heartbeat.add_metric([sw.name], max(0.0, now / NS_PER_S - agent.heartbeat_ms / 1000))
        mode.add_metric([sw.name, agent.mode, agent.algorithm], 1)
        number = orders_version_number(agent.version)
        if number is not None:
            version.add_metric([sw.name], number)
        if agent.loop_seconds is not None:
            loop.add_metric([sw.name], agent.loop_seconds)
    yield from (heartbeat, mode, version, loop, up, age, resets)
