"""What the tuner reads: telemetry over a window, summarised into plain values.

``controller/telemetry/tuning_summary.py`` builds these from Prometheus; tests build them by
hand. ``None`` means "no measurement", which a rule treats as "no evidence" (it holds), never
as zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """One class's queue on one port over the window.

    ``utilisation`` is the port's (tx bits/s over speed, 0..1, mean over the window);
    occupancy percentiles are over the window's samples; ``mark_fraction`` is marked over
    transmitted packets (mean); ``dropped_packets_per_s`` and ``tx_bytes_per_s`` are means.
    ``offered_utilisation`` is the port's offered demand (every class) over its line rate,
    where the source knows it: a switch's counters see only what the port carried, so
    ``None`` there; the twin knows it from its flow list. For a lossless class,
    ``pfc_tx_pause_per_s`` / ``pfc_rx_pause_per_s`` are the PFC pause frames the port sent /
    received per second on the class's priority (mean; ``SAI_PORT_STAT_PFC_<n>_TX_PKTS`` /
    ``_RX_PKTS``): a frame sent means the port's priority group reached its XOFF point.
    """

    switch: str
    port: str
    service_class: str
    speed_gbps: float
    utilisation: float | None = None
    occupancy_p50_bytes: float | None = None
    occupancy_p95_bytes: float | None = None
    mark_fraction: float | None = None
    dropped_packets_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    threshold_bytes: float | None = None
    offered_utilisation: float | None = None
    pfc_tx_pause_per_s: float | None = None
    pfc_rx_pause_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class QjumpLevelSummary:
    """What hosts saw at one QJUMP level: the most senders that sent towards one receiver in
    one epoch (fan-in) and the largest packet sent at the level."""

    level: int
    max_fan_in: int | None = None
    max_packet_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class FlowSizeSample:
    """Finished flows' sizes of one class as a cumulative histogram: ``buckets`` maps an upper
    bound in bytes to the number of flows no larger (Prometheus ``le`` buckets, +Inf last);
    ``load`` is the class's measured share of its links (0..1), if known."""

    service_class: str
    buckets: tuple[tuple[float, float], ...]
    load: float | None = None

    @property
    def flows(self) -> float:
        return self.buckets[-1][1] if self.buckets else 0.0


@dataclass(frozen=True, slots=True)
class SmallFlowFct:
    """What the hosts measured of one class's small flows (up to 100 kB, the exporter's
    ``size="small"`` band) that finished in the window: their p99 completion time, us, and
    how many finished (a p99 of a few flows is the slowest one or two)."""

    service_class: str
    p99_us: float
    flows: float


@dataclass(frozen=True, slots=True)
class TelemetrySummary:
    """Everything one tuning pass reads, with the window it covers (Unix seconds)."""

    start_s: float
    end_s: float
    queues: tuple[QueueSummary, ...] = ()
    qjump_levels: tuple[QjumpLevelSummary, ...] = ()
    flow_sizes: Mapping[str, FlowSizeSample] = field(default_factory=dict)
    small_flow_fct: Mapping[str, SmallFlowFct] = field(default_factory=dict)
