"""The health model: telemetry samples and the intent's thresholds in, ok/warn/critical out.

Pure: the caller reads the samples (``controller/services/telemetry.py`` from Prometheus) and
passes them in with the intent's ``fabric.health`` thresholds. Each level takes the worst of
its own checks and of the levels below it (queue -> port -> switch -> fabric), and keeps every
reason that made it worse than ok, so an operator sees why, not only that.

Checks (docs/health.md):
- queue: dropped packets/s, ECN mark fraction, occupancy near the port's buffer, a threshold
  the agent holds on its stale fallback;
- switch: no telemetry at all, the gNMI stream down, counters not updated for a while, the
  agent's heartbeat old, the agent in fallback or stopped; per lossless priority of its
  ports, a PFC pause storm (pause frames past a threshold, or the watchdog's storm) and any
  drop;
- fabric: the collectors' lag.

An idle switch is not a faulty one. Its agent reports mode ``idle`` (no queue counter moved
for its stale limit and none holds bytes; docs/qos-agent.md) and its queues basis ``idle``:
neither is a reason, and its queues' rates and occupancy are not judged, since with no counter
moving they are those of the last interval that moved, not of now. A switch is marked
``idle`` so a reader sees why it is quiet; an agent in fallback, stopped, or with an old
heartbeat is still a reason on an idle-looking fabric.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from controller.intent.models import Health, Intent


class State(StrEnum):
    OK = "ok"
    WARN = "warn"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {State.OK: 0, State.WARN: 1, State.CRITICAL: 2}


def worst(states: Iterable[State]) -> State:
    return max(states, key=lambda state: state.rank, default=State.OK)


@dataclass(frozen=True, slots=True)
class Reason:
    """One check that is not ok: ``check`` is stable (``drops``), ``where`` names the object
    (``leaf1 Ethernet0 queue 3``), ``detail`` says the value against its threshold."""

    check: str
    state: State
    where: str
    detail: str


# --- samples: what telemetry says right now (None: the metric has no value) ------------------


@dataclass(frozen=True, slots=True)
class QueueSample:
    switch: str
    port: str
    queue: str
    service_class: str = ""
    tx_bytes_per_s: float | None = None
    dropped_packets_per_s: float | None = None
    mark_fraction: float | None = None
    occupancy_bytes: float | None = None
    threshold_bytes: float | None = None
    basis: str | None = None


@dataclass(frozen=True, slots=True)
class SwitchSample:
    switch: str
    stream_up: bool | None = None
    last_update_age_s: float | None = None
    heartbeat_age_s: float | None = None
    agent_mode: str | None = None
    agent_algorithm: str | None = None


@dataclass(frozen=True, slots=True)
class LosslessSample:
    """One port's lossless priority (its priority group, and the queue its pauses stop):
    the PFC pause frames a second either way, the group's and the queue's drops, and
    whether the PFC watchdog holds the queue in a storm."""

    switch: str
    port: str
    priority: str
    service_class: str = ""
    pause_per_s: float | None = None  # the larger of received and sent
    dropped_packets_per_s: float | None = None
    storming: bool = False


@dataclass(frozen=True, slots=True)
class FabricSamples:
    """Everything one health evaluation looks at."""

    queues: Sequence[QueueSample] = ()
    switches: Sequence[SwitchSample] = ()
    lossless: Sequence[LosslessSample] = ()
    collector_lag_s: Mapping[str, float] = field(default_factory=dict)


# --- verdicts --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueHealth:
    port: str
    queue: str
    service_class: str
    state: State
    reasons: tuple[Reason, ...]


@dataclass(frozen=True, slots=True)
class PortHealth:
    port: str
    state: State
    queues: tuple[QueueHealth, ...]


@dataclass(frozen=True, slots=True)
class SwitchHealth:
    switch: str
    state: State
    reasons: tuple[Reason, ...]
    ports: tuple[PortHealth, ...]
    idle: bool = False  # the agent reports the switch idle (no counter moving, nothing held)

    @property
    def all_reasons(self) -> tuple[Reason, ...]:
        """The switch's own reasons, then its queues', in port and queue order."""
        below = (r for p in self.ports for q in p.queues for r in q.reasons)
        return (*self.reasons, *below)


@dataclass(frozen=True, slots=True)
class FabricHealth:
    state: State
    reasons: tuple[Reason, ...]
    switches: tuple[SwitchHealth, ...]

    def counts(self) -> dict[str, int]:
        """How many switches are in each state (every state present, zeros included)."""
        tally = {state.value: 0 for state in State}
        for switch in self.switches:
            tally[switch.state.value] += 1
        return tally


# --- checks ----------------------------------------------------------------------------------


def graded(
    value: float | None, warn: float, critical: float, *, check: str, where: str, what: str
) -> Reason | None:
    """A reason when ``value`` reaches ``warn`` (or ``critical``); None below or unknown."""
    if value is None or value < warn:
        return None
    state, limit = (State.CRITICAL, critical) if value >= critical else (State.WARN, warn)
    return Reason(check, state, where, f"{what} {value:g} >= {limit:g}")


IDLE = "idle"  # the agent's mode and basis on an idle switch (docs/qos-agent.md)


def queue_reasons(
    sample: QueueSample, limits: Health, buffer_bytes: int, *, idle: bool = False
) -> list[Reason]:
    """The queue's reasons; on an idle switch (``idle``) only its agent's basis counts."""
    where = f"{sample.switch} {sample.port} queue {sample.queue}"
    fallback = None
    if sample.basis == "stale_fallback":
        detail = "the agent holds this queue on its static fallback (its counters are stale)"
        fallback = Reason("agent_fallback", State.WARN, where, detail)
    if idle:
        return [fallback] if fallback is not None else []
    occupancy_pct = (
        None if sample.occupancy_bytes is None else 100.0 * sample.occupancy_bytes / buffer_bytes
    )
    found = [
        graded(
            sample.dropped_packets_per_s,
            limits.drops_per_s_warn,
            limits.drops_per_s_critical,
            check="drops",
            where=where,
            what="dropped packets/s",
        ),
        graded(
            sample.mark_fraction,
            limits.mark_fraction_warn,
            limits.mark_fraction_critical,
            check="marks",
            where=where,
            what="ECN mark fraction",
        ),
        graded(
            occupancy_pct,
            limits.occupancy_pct_warn,
            limits.occupancy_pct_critical,
            check="occupancy",
            where=where,
            what=f"occupancy % of the {buffer_bytes} B port buffer",
        ),
        fallback,
    ]
    return [reason for reason in found if reason is not None]


def lossless_reasons(sample: LosslessSample, limits: Health) -> list[Reason]:
    """A pause storm (pauses past the thresholds, or the watchdog's storm) and any drop of
    a lossless class: it must drop none, so one packet a second is already critical."""
    where = f"{sample.switch} {sample.port} priority {sample.priority}"
    if sample.service_class:
        where += f" ({sample.service_class})"
    found = [
        graded(
            sample.pause_per_s,
            limits.pfc_pause_per_s_warn,
            limits.pfc_pause_per_s_critical,
            check="pfc_storm",
            where=where,
            what="PFC pause frames/s",
        )
    ]
    if sample.storming:
        detail = "the PFC watchdog detected a storm on this priority's queue"
        found.append(Reason("pfc_storm", State.CRITICAL, where, detail))
    if sample.dropped_packets_per_s:
        detail = f"lossless dropped packets/s {sample.dropped_packets_per_s:g} > 0"
        found.append(Reason("lossless_drops", State.CRITICAL, where, detail))
    return [reason for reason in found if reason is not None]


def switch_reasons(sample: SwitchSample | None, name: str, limits: Health) -> list[Reason]:
    if sample is None:
        return [Reason("no_telemetry", State.CRITICAL, name, "no telemetry for this switch")]
    found: list[Reason | None] = []
    if sample.stream_up is False:
        found.append(
            Reason("stream_down", State.CRITICAL, name, "the gNMI Subscribe stream is down")
        )
    found.append(
        graded(
            sample.last_update_age_s,
            limits.counters_age_s_warn,
            limits.counters_age_s_critical,
            check="counters_stale",
            where=name,
            what="seconds since the last counter update",
        )
    )
    found.append(
        graded(
            sample.heartbeat_age_s,
            limits.agent_heartbeat_s_warn,
            limits.agent_heartbeat_s_critical,
            check="agent_stale",
            where=name,
            what="agent heartbeat age s",
        )
    )
    if sample.agent_mode == "fallback":
        found.append(
            Reason("agent_fallback", State.WARN, name, "the agent runs on its static fallback")
        )
    elif sample.agent_mode == "stopped":
        found.append(Reason("agent_stopped", State.CRITICAL, name, "the agent has stopped"))
    return [reason for reason in found if reason is not None]


def collector_reasons(lag_s: Mapping[str, float], limits: Health) -> list[Reason]:
    if not lag_s:
        return [Reason("no_collector", State.WARN, "fabric", "no collector reports its lag")]
    found = (
        graded(
            lag,
            limits.collector_lag_s_warn,
            limits.collector_lag_s_critical,
            check="collector_lag",
            where=f"collector {name}",
            what="lag s",
        )
        for name, lag in sorted(lag_s.items())
    )
    return [reason for reason in found if reason is not None]


# --- levels ----------------------------------------------------------------------------------


def _port_buffers(intent: Intent) -> dict[tuple[str, str], int]:
    """Each declared port's egress buffer: its own, or the fabric's default."""
    default = intent.fabric.port_buffer_bytes
    return {
        (switch.name, port.name): port.buffer_bytes or default
        for switch in intent.switches
        for port in switch.ports
    }


def _queue_key(sample: QueueSample) -> tuple[str, int | str]:
    return sample.port, int(sample.queue) if sample.queue.isdigit() else sample.queue


def _lossless_key(sample: LosslessSample) -> tuple[str, str]:
    return sample.port, sample.priority


def switch_health(
    name: str,
    sample: SwitchSample | None,
    queues: Sequence[QueueSample],
    limits: Health,
    buffers: Mapping[tuple[str, str], int],
    default_buffer: int,
    lossless: Sequence[LosslessSample] = (),
) -> SwitchHealth:
    by_port: dict[str, list[QueueHealth]] = {}
    idle = sample is not None and sample.agent_mode == IDLE
    for queue in sorted(queues, key=_queue_key):
        buffer = buffers.get((name, queue.port), default_buffer)
        reasons = tuple(queue_reasons(queue, limits, buffer, idle=idle))
        state = worst(r.state for r in reasons)
        verdict = QueueHealth(queue.port, queue.queue, queue.service_class, state, reasons)
        by_port.setdefault(queue.port, []).append(verdict)
    ports = tuple(
        PortHealth(port, worst(q.state for q in verdicts), tuple(verdicts))
        for port, verdicts in by_port.items()
    )
    pfc = (r for s in sorted(lossless, key=_lossless_key) for r in lossless_reasons(s, limits))
    own = (*switch_reasons(sample, name, limits), *pfc)
    state = worst([*(r.state for r in own), *(p.state for p in ports)])
    return SwitchHealth(name, state, own, ports, idle)


def fabric_health(intent: Intent, samples: FabricSamples) -> FabricHealth:
    """Health of every switch the intent declares, and of the fabric as a whole.

    Telemetry about switches the intent does not declare is ignored: health is judged
    against the intent's thresholds, which only declared switches have.
    """
    limits = intent.fabric.health
    buffers = _port_buffers(intent)
    by_switch = {sample.switch: sample for sample in samples.switches}
    switches = tuple(
        switch_health(
            switch.name,
            by_switch.get(switch.name),
            [q for q in samples.queues if q.switch == switch.name],
            limits,
            buffers,
            intent.fabric.port_buffer_bytes,
            [s for s in samples.lossless if s.switch == switch.name],
        )
        for switch in intent.switches
    )
    own = tuple(collector_reasons(samples.collector_lag_s, limits))
    state = worst([*(r.state for r in own), *(s.state for s in switches)])
    return FabricHealth(state, own, switches)
