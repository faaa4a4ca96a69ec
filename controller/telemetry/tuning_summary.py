"""The tuner's telemetry summary, read from Prometheus (the edge of controller/tuning/).

Queue and port values are the collector's metrics (docs/telemetry.md, the telemetry
contract), aggregated over the window with ``*_over_time``; host values (QJUMP fan-in and
packet sizes, finished flows' sizes for PIAS) are the host exporter's metrics, designed in
docs/tuning.md ("How hosts report"): a metric nobody exports simply gives no summary, and
the rules that need it hold.

Time and the client are passed in; the assembly from samples to summaries is pure
(``assemble_queues``, ``assemble_flow_sizes``) so it is tested without a server.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from controller.prometheus.promql import PromQL, Sample
from controller.telemetry.metrics import PFC_RX, PFC_TX
from controller.tuning.summary import (
    FlowSizeSample,
    QjumpLevelSummary,
    QueueSummary,
    SmallFlowFct,
    TelemetrySummary,
)

# Host exporter metrics (docs/tuning.md): gauges per host and QJUMP level, and a histogram
# (cumulative counters per ``le`` bucket) of finished flows' sizes per host and class.
HOST_FAN_IN = "sluice_host_qjump_fan_in"
HOST_MAX_PACKET = "sluice_host_qjump_max_packet_bytes"
HOST_FLOW_SIZE_BUCKET = "sluice_host_flow_size_bytes_bucket"
# The exporter's flow completion times, small flows only (up to 100 kB, ``size="small"``):
# what the search's prediction names, read to set it against after a rollout.
HOST_FCT_SMALL = 'sluice_host_flow_completion_seconds_bucket{size="small"}'
HOST_FCT_SMALL_COUNT = 'sluice_host_flow_completion_seconds_count{size="small"}'

QueueKey = tuple[str, str, str]  # switch, port, class
PortKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class QueueQueries:
    """The PromQL of each summary field over a window of ``w`` (e.g. ``600s``)."""

    window: str

    def queue(self) -> dict[str, str]:
        w = self.window
        return {
            "occupancy_p50_bytes": f"quantile_over_time(0.5, sluice_queue_occupancy_bytes[{w}])",
            "occupancy_p95_bytes": f"quantile_over_time(0.95, sluice_queue_occupancy_bytes[{w}])",
            "mark_fraction": f"avg_over_time(sluice_queue_mark_fraction[{w}])",
            "dropped_packets_per_s": (
                f"avg_over_time(sluice_queue_dropped_packets_per_second[{w}])"
            ),
            "tx_bytes_per_s": f"avg_over_time(sluice_queue_tx_bytes_per_second[{w}])",
            "threshold_bytes": f"avg_over_time(sluice_queue_threshold_bytes[{w}])",
            # A lossless class's pause frames: the series carry the class on the priority
            # (its queue's class), so they join the queue's summary by switch, port and class.
            "pfc_tx_pause_per_s": f"avg_over_time({PFC_TX.name}[{w}])",
            "pfc_rx_pause_per_s": f"avg_over_time({PFC_RX.name}[{w}])",
        }

    def port(self) -> dict[str, str]:
        w = self.window
        return {
            "utilisation": f"avg_over_time(sluice_port_utilisation[{w}])",
            "speed_bps": f"max_over_time(sluice_port_speed_bits_per_second[{w}])",
        }

    def hosts(self) -> dict[str, str]:
        w = self.window
        return {
            "max_fan_in": f"max by (level) (max_over_time({HOST_FAN_IN}[{w}]))",
            "max_packet_bytes": f"max by (level) (max_over_time({HOST_MAX_PACKET}[{w}]))",
            "flow_sizes": f"sum by (class, le) (increase({HOST_FLOW_SIZE_BUCKET}[{w}]))",
            "fct_p99_small_us": (
                f"histogram_quantile(0.99, sum by (class, le) (increase({HOST_FCT_SMALL}[{w}])))"
                " * 1e6"
            ),
            "small_flows": f"sum by (class) (increase({HOST_FCT_SMALL_COUNT}[{w}]))",
        }


def read_summary(promql: PromQL, at: datetime, window_s: float) -> TelemetrySummary:
    """The summary of the ``window_s`` seconds that end at ``at``."""
    queries = QueueQueries(f"{round(window_s)}s")
    queue_values = {f: promql.instant(q, at) for f, q in queries.queue().items()}
    port_values = {f: promql.instant(q, at) for f, q in queries.port().items()}
    host = {f: promql.instant(q, at) for f, q in queries.hosts().items()}
    queues = assemble_queues(queue_values, port_values)
    end_s = at.timestamp()
    return TelemetrySummary(
        start_s=end_s - window_s,
        end_s=end_s,
        queues=queues,
        qjump_levels=assemble_qjump(host["max_fan_in"], host["max_packet_bytes"]),
        flow_sizes=assemble_flow_sizes(host["flow_sizes"], class_loads(queues)),
        small_flow_fct=assemble_small_flow_fct(host["fct_p99_small_us"], host["small_flows"]),
    )


def assemble_queues(
    queue_values: Mapping[str, Sequence[Sample]], port_values: Mapping[str, Sequence[Sample]]
) -> tuple[QueueSummary, ...]:
    """One QueueSummary per (switch, port, class) with a class and a known port speed."""
    fields: dict[QueueKey, dict[str, float]] = defaultdict(dict)
    for name, samples in queue_values.items():
        for sample in samples:
            key = _queue_key(sample)
            if key is not None and math.isfinite(sample.value):
                fields[key][name] = sample.value
    ports: dict[PortKey, dict[str, float]] = defaultdict(dict)
    for name, samples in port_values.items():
        for sample in samples:
            port_key = (sample.labels.get("switch", ""), sample.labels.get("port", ""))
            if math.isfinite(sample.value):
                ports[port_key][name] = sample.value
    summaries = []
    for (switch, port, klass), values in sorted(fields.items()):
        speed_bps = ports.get((switch, port), {}).get("speed_bps")
        if not speed_bps:
            continue  # no speed, no utilisation: the rules cannot use this queue
        summaries.append(
            QueueSummary(
                switch,
                port,
                klass,
                speed_bps / 1e9,
                utilisation=ports[(switch, port)].get("utilisation"),
                **values,
            )
        )
    return tuple(summaries)


def _queue_key(sample: Sample) -> QueueKey | None:
    klass = sample.labels.get("class", "")
    if not klass:
        return None  # a queue no service class uses: nothing to tune
    return (sample.labels.get("switch", ""), sample.labels.get("port", ""), klass)


def assemble_qjump(
    fan_in: Sequence[Sample], max_packet: Sequence[Sample]
) -> tuple[QjumpLevelSummary, ...]:
    levels: dict[int, dict[str, int]] = defaultdict(dict)
    for name, samples in (("max_fan_in", fan_in), ("max_packet_bytes", max_packet)):
        for sample in samples:
            level = sample.labels.get("level", "")
            if level.isdigit() and math.isfinite(sample.value):
                levels[int(level)][name] = math.ceil(sample.value)
    return tuple(
        QjumpLevelSummary(level, values.get("max_fan_in"), values.get("max_packet_bytes"))
        for level, values in sorted(levels.items())
    )


def assemble_flow_sizes(
    buckets: Sequence[Sample], loads: Mapping[str, float]
) -> dict[str, FlowSizeSample]:
    """Per class, the buckets in ``le`` order (+Inf last) as cumulative flow counts."""
    by_class: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for sample in buckets:
        klass, le = sample.labels.get("class", ""), sample.labels.get("le")
        if not klass or le is None or not math.isfinite(sample.value):
            continue
        by_class[klass].append((float(le), sample.value))
    result = {}
    for klass, points in by_class.items():
        points.sort()
        if points[-1][1] > 0:
            result[klass] = FlowSizeSample(klass, tuple(points), loads.get(klass))
    return result


def assemble_small_flow_fct(
    p99_us: Sequence[Sample], flows: Sequence[Sample]
) -> dict[str, SmallFlowFct]:
    """Per class whose hosts saw small flows finish in the window: their p99 FCT and count.
    A class with none (``histogram_quantile`` of empty buckets is NaN) is left out."""
    counts = {s.labels.get("class", ""): s.value for s in flows if math.isfinite(s.value)}
    return {
        klass: SmallFlowFct(klass, sample.value, counts[klass])
        for sample in p99_us
        if (klass := sample.labels.get("class", ""))
        and math.isfinite(sample.value)
        and counts.get(klass, 0.0) > 0.0
    }


def class_loads(queues: Sequence[QueueSummary]) -> dict[str, float]:
    """A class's load: the mean over its ports of its sent bits over the port's speed."""
    shares: dict[str, list[float]] = defaultdict(list)
    for queue in queues:
        if queue.tx_bytes_per_s is not None and queue.speed_gbps > 0:
            shares[queue.service_class].append(queue.tx_bytes_per_s * 8 / (queue.speed_gbps * 1e9))
    return {klass: sum(values) / len(values) for klass, values in shares.items()}
