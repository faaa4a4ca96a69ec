"""Telemetry reads for the API, the CLI and the dashboard: what a switch's queues do now, their
history, and the fabric's health, all from Prometheus (the collector's metrics,
docs/telemetry.md) judged against the current intent.

Only names from the intent go into a PromQL selector (switch and port names match
``controller/intent/models.py``'s patterns, which exclude quotes and backslashes), so no request
can change a query's meaning. Health asks Prometheus only for queues past a warn threshold
(``metric >= warn``), so its cost follows the trouble in the fabric, not its size. The health
model's answers (``FabricHealth``, ``SwitchHealth``, ``Reason``) are this service's own: the
API reads their types here (imported ``as`` themselves: exported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller.errors import NotFound
from controller.intent.models import Intent, Switch
from controller.prometheus.promql import PromQL, Sample, finite
from controller.rollout.gates import switches_regex
from controller.telemetry.health import FabricHealth as FabricHealth
from controller.telemetry.health import (
    FabricSamples,
    LosslessSample,
    QueueSample,
    SwitchSample,
    fabric_health,
)
from controller.telemetry.health import Reason as Reason
from controller.telemetry.health import SwitchHealth as SwitchHealth
from controller.types import Clock

CurrentIntent = Callable[[], Intent]

# Contract metric name -> the field it fills (docs/telemetry.md).
QUEUE_METRICS = {
    "sluice_queue_tx_bytes_per_second": "tx_bytes_per_s",
    "sluice_queue_tx_packets_per_second": "tx_packets_per_s",
    "sluice_queue_dropped_packets_per_second": "dropped_packets_per_s",
    "sluice_queue_dropped_bytes_per_second": "dropped_bytes_per_s",
    "sluice_queue_ecn_marked_packets_per_second": "ecn_marked_packets_per_s",
    "sluice_queue_mark_fraction": "mark_fraction",
    "sluice_queue_occupancy_bytes": "occupancy_bytes",
    "sluice_queue_watermark_bytes": "watermark_bytes",
    "sluice_queue_threshold_bytes": "threshold_bytes",
    "sluice_queue_pfc_storm_active": "pfc_storm_active",
}
# A port's lossless priority: pauses either way and its priority group (docs/telemetry.md).
PFC_METRICS = {
    "sluice_port_pfc_rx_pause_frames_per_second": "rx_pause_frames_per_s",
    "sluice_port_pfc_tx_pause_frames_per_second": "tx_pause_frames_per_s",
    "sluice_pg_dropped_packets_per_second": "pg_dropped_packets_per_s",
    "sluice_pg_headroom_watermark_bytes": "pg_headroom_watermark_bytes",
}
PORT_METRICS = {
    "sluice_port_tx_bytes_per_second": "tx_bytes_per_s",
    "sluice_port_rx_bytes_per_second": "rx_bytes_per_s",
    "sluice_port_utilisation": "utilisation",
    "sluice_port_speed_bits_per_second": "speed_bits_per_s",
}
SWITCH_METRICS = {
    "sluice_agent_heartbeat_age_seconds": "heartbeat_age_s",
    "sluice_agent_orders_version": "orders_version",
    "sluice_agent_loop_seconds": "loop_s",
    "sluice_switch_stream_up": "stream_up",
    "sluice_switch_last_update_age_seconds": "last_update_age_s",
}
# What the dashboard plots per queue over time.
SERIES_METRICS = {
    "threshold_bytes": "sluice_queue_threshold_bytes",
    "occupancy_bytes": "sluice_queue_occupancy_bytes",
    "tx_bytes_per_s": "sluice_queue_tx_bytes_per_second",
    "ecn_marked_packets_per_s": "sluice_queue_ecn_marked_packets_per_second",
}
MAX_POINTS = 240


@dataclass
class QueueNow:
    queue: str
    service_class: str
    values: dict[str, float | None] = field(default_factory=dict)
    basis: str | None = None


@dataclass
class PfcNow:
    """One PFC priority of a port (and its priority group of the same index)."""

    priority: str
    service_class: str
    values: dict[str, float | None] = field(default_factory=dict)


@dataclass
class PortNow:
    port: str
    values: dict[str, float | None] = field(default_factory=dict)
    queues: dict[str, QueueNow] = field(default_factory=dict)
    pfc: dict[str, PfcNow] = field(default_factory=dict)


@dataclass
class SwitchNow:
    """One switch's latest telemetry; ``None`` values are metrics Prometheus has no value for."""

    switch: str
    at: datetime
    values: dict[str, float | None] = field(default_factory=dict)
    agent_mode: str | None = None
    agent_algorithm: str | None = None
    ports: dict[str, PortNow] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueSeries:
    queue: str
    service_class: str
    series: Mapping[str, tuple[tuple[float, float | None], ...]]


@dataclass(frozen=True, slots=True)
class PortSeries:
    switch: str
    port: str
    start: datetime
    end: datetime
    step_s: float
    queues: tuple[QueueSeries, ...]


def _queue_order(queue: str) -> tuple[int, str]:
    return (int(queue), "") if queue.isdigit() else (1 << 30, queue)


def step_for(window_s: float) -> float:
    """A whole-second step giving at most ``MAX_POINTS`` points over the window."""
    return float(max(1, -(-int(window_s) // MAX_POINTS)))


class TelemetryService:
    """Telemetry reads for the API, the CLI and the dashboard, over a Prometheus client its
    builder owns and closes (``controller/services/wiring.py``)."""

    def __init__(self, promql: PromQL, current_intent: CurrentIntent, *, clock: Clock) -> None:
        self._promql = promql
        self._current_intent = current_intent
        self._clock = clock

    def _switch(self, name: str) -> Switch:
        for switch in self._current_intent().switches:
            if switch.name == name:
                return switch
        raise NotFound(f"switch {name!r} is not in the current intent")

    # -- now -------------------------------------------------------------------------------------

    def switch_now(self, name: str) -> SwitchNow:
        """Every port of the switch (as declared) and every queue telemetry knows, now."""
        switch = self._switch(name)
        at = self._clock()
        samples = self._promql.instant(
            f'{{__name__=~"sluice_(queue|port|pg|agent|switch)_.+",switch="{switch.name}"}}', at
        )
        now = SwitchNow(switch.name, at, dict.fromkeys(SWITCH_METRICS.values()))
        now.ports = {port.name: _empty_port(port.name) for port in switch.ports}
        for sample in samples:
            _fill(now, sample)
        return now

    # -- history ---------------------------------------------------------------------------------

    def port_series(self, name: str, port: str, window_s: float) -> PortSeries:
        """Per queue of one port: threshold, occupancy, throughput and ECN marks over the last
        ``window_s`` seconds."""
        switch = self._switch(name)
        if port not in {p.name for p in switch.ports}:
            raise NotFound(f"port {port!r} is not declared on switch {name!r}")
        end = self._clock()
        start = end - timedelta(seconds=window_s)
        step = step_for(window_s)
        selector = f'{{switch="{switch.name}",port="{port}"}}'
        found: dict[tuple[str, str], dict[str, tuple[tuple[float, float | None], ...]]] = {}
        for key, metric in SERIES_METRICS.items():
            for series in self._promql.range(f"{metric}{selector}", start, end, step):
                queue = (series.labels.get("queue", ""), series.labels.get("class", ""))
                points = tuple((t, finite(v)) for t, v in series.points)
                found.setdefault(queue, {})[key] = points
        queues = tuple(
            QueueSeries(queue, klass, found[(queue, klass)])
            for queue, klass in sorted(found, key=lambda k: _queue_order(k[0]))
        )
        return PortSeries(switch.name, port, start, end, step, queues)

    # -- health ----------------------------------------------------------------------------------

    def health(self) -> FabricHealth:
        intent = self._current_intent()
        return fabric_health(intent, self.health_samples(intent))

    def health_samples(self, intent: Intent) -> FabricSamples:
        limits = intent.fabric.health
        at = self._clock()
        buffers = [
            p.buffer_bytes or intent.fabric.port_buffer_bytes
            for s in intent.switches
            for p in s.ports
        ]
        smallest_buffer = min(buffers, default=intent.fabric.port_buffer_bytes)
        # Exact literals (repr): a rounded threshold could let a value at the threshold slip.
        suspects = {
            "dropped_packets_per_s": (
                f"sluice_queue_dropped_packets_per_second >= {limits.drops_per_s_warn!r}"
            ),
            "mark_fraction": f"sluice_queue_mark_fraction >= {limits.mark_fraction_warn!r}",
            "occupancy_bytes": (
                "sluice_queue_occupancy_bytes >= "
                f"{smallest_buffer * limits.occupancy_pct_warn / 100!r}"
            ),
        }
        values: dict[tuple[str, str, str, str], dict[str, float | None]] = {}
        for field_name, query in suspects.items():
            for sample in self._promql.instant(query, at):
                values.setdefault(_queue_labels(sample), {})[field_name] = finite(sample.value)
        on_fallback = {
            _queue_labels(sample)
            for sample in self._promql.instant(
                'sluice_queue_threshold_info{basis="stale_fallback"}', at
            )
        }
        queues = tuple(
            QueueSample(
                *key,
                dropped_packets_per_s=values.get(key, {}).get("dropped_packets_per_s"),
                mark_fraction=values.get(key, {}).get("mark_fraction"),
                occupancy_bytes=values.get(key, {}).get("occupancy_bytes"),
                basis="stale_fallback" if key in on_fallback else None,
            )
            for key in sorted({*values, *on_fallback})
        )
        lag = self._promql.instant("sluice_collector_lag_seconds", at)
        return FabricSamples(
            queues=queues,
            switches=self._switch_samples(at),
            lossless=self._lossless_samples(intent, at),
            collector_lag_s={s.labels.get("collector", ""): s.value for s in lag},
        )

    def _lossless_samples(self, intent: Intent, at: datetime) -> tuple[LosslessSample, ...]:
        """Lossless priorities in trouble only: pauses past the warn threshold, a drop of a
        lossless class (its priority group's or its queue's), a watchdog storm."""
        warn = intent.fabric.health.pfc_pause_per_s_warn
        priority_of = {
            c.name: str(c.lossless.pfc_priority)
            for c in intent.service_classes
            if c.lossless is not None
        }
        found: dict[tuple[str, str, str, str], dict[str, float]] = {}

        def put(sample: Sample, priority: str, what: str) -> None:
            labels = sample.labels
            key = (labels.get("switch", ""), labels.get("port", ""), priority,
                   labels.get("class", ""))  # fmt: skip
            value = finite(sample.value) or 0.0
            slot = found.setdefault(key, {})
            slot[what] = slot.get(what, 0.0) + value if what == "drops" else value

        pauses = (
            "max by (switch, port, priority, class) "
            '({__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second"})'
            f" >= {warn!r}"
        )
        for sample in self._promql.instant(pauses, at):
            put(sample, sample.labels.get("priority", ""), "pauses")
        for sample in self._promql.instant(
            'sluice_pg_dropped_packets_per_second{class!=""} > 0', at
        ):
            put(sample, sample.labels.get("pg", ""), "drops")
        lossless = switches_regex(sorted(priority_of))  # the class names, a PromQL alternation
        by_queue = [("sluice_queue_pfc_storm_active == 1", "storming")]
        if lossless:
            by_queue.append(
                (f'sluice_queue_dropped_packets_per_second{{class=~"{lossless}"}} > 0', "drops")
            )
        for query, what in by_queue:
            for sample in self._promql.instant(query, at):
                klass = sample.labels.get("class", "")
                put(sample, priority_of.get(klass, sample.labels.get("queue", "")), what)
        return tuple(
            LosslessSample(
                *key,
                pause_per_s=values.get("pauses"),
                dropped_packets_per_s=values.get("drops"),
                storming=bool(values.get("storming")),
            )
            for key, values in sorted(found.items())
        )

    def _switch_samples(self, at: datetime) -> tuple[SwitchSample, ...]:
        by_switch: dict[str, dict[str, Sample]] = {}
        query = (
            '{__name__=~"sluice_(agent_heartbeat_age_seconds|agent_mode_info|switch_stream_up'
            '|switch_last_update_age_seconds)"}'
        )
        for sample in self._promql.instant(query, at):
            if "switch" in sample.labels:
                name = sample.labels.get("__name__", "")
                by_switch.setdefault(sample.labels["switch"], {})[name] = sample
        return tuple(_switch_sample(name, found) for name, found in sorted(by_switch.items()))


def _switch_sample(name: str, found: Mapping[str, Sample]) -> SwitchSample:
    def value(metric: str) -> float | None:
        sample = found.get(metric)
        return None if sample is None else finite(sample.value)

    stream = value("sluice_switch_stream_up")
    mode = found.get("sluice_agent_mode_info")
    return SwitchSample(
        name,
        stream_up=None if stream is None else stream >= 1,
        last_update_age_s=value("sluice_switch_last_update_age_seconds"),
        heartbeat_age_s=value("sluice_agent_heartbeat_age_seconds"),
        agent_mode=None if mode is None else mode.labels.get("mode"),
        agent_algorithm=None if mode is None else mode.labels.get("algorithm"),
    )


def _queue_labels(sample: Sample) -> tuple[str, str, str, str]:
    labels = sample.labels
    return (
        labels.get("switch", ""),
        labels.get("port", ""),
        labels.get("queue", ""),
        labels.get("class", ""),
    )


def _empty_port(name: str) -> PortNow:
    return PortNow(name, dict.fromkeys(PORT_METRICS.values()))


def _fill(now: SwitchNow, sample: Sample) -> None:
    """Put one sample of the switch's instant query where it belongs."""
    labels = sample.labels
    name = labels.get("__name__", "")
    value = finite(sample.value)
    if name in SWITCH_METRICS:
        now.values[SWITCH_METRICS[name]] = value
    elif name == "sluice_agent_mode_info":
        now.agent_mode, now.agent_algorithm = labels.get("mode"), labels.get("algorithm")
    elif name in PFC_METRICS:
        port = now.ports.setdefault(labels.get("port", ""), _empty_port(labels.get("port", "")))
        priority = labels.get("priority", labels.get("pg", ""))
        row = port.pfc.setdefault(
            priority,
            PfcNow(priority, labels.get("class", ""), dict.fromkeys(PFC_METRICS.values())),
        )
        row.values[PFC_METRICS[name]] = value
    elif name in PORT_METRICS or name.startswith("sluice_queue_"):
        port = now.ports.setdefault(labels.get("port", ""), _empty_port(labels.get("port", "")))
        if name in PORT_METRICS:
            port.values[PORT_METRICS[name]] = value
            return
        queue_name = labels.get("queue", "")
        queue = port.queues.setdefault(
            queue_name,
            QueueNow(queue_name, labels.get("class", ""), dict.fromkeys(QUEUE_METRICS.values())),
        )
        if name == "sluice_queue_threshold_info":
            queue.basis = labels.get("basis")
        elif name in QUEUE_METRICS:
            queue.values[QUEUE_METRICS[name]] = value


def sorted_queues(port: PortNow) -> list[QueueNow]:
    return sorted(port.queues.values(), key=lambda q: _queue_order(q.queue))


def sorted_pfc(port: PortNow) -> list[PfcNow]:
    return sorted(port.pfc.values(), key=lambda p: _queue_order(p.priority))
