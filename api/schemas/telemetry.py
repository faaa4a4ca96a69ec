"""Telemetry: each switch's ports and queues now and over time (the dashboard's series), and
the fabric's health."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import Field

from api.schemas.common import ViewOut
from controller.services.telemetry import (
    FabricHealth,
    PfcNow,
    PortNow,
    QueueNow,
    Reason,
    SwitchHealth,
    SwitchNow,
    sorted_pfc,
    sorted_queues,
)


class QueueNowOut(ViewOut):
    queue: str
    service_class: str = Field(description="the intent's class on this queue ('' when none)")
    tx_bytes_per_s: float | None
    tx_packets_per_s: float | None
    dropped_packets_per_s: float | None
    dropped_bytes_per_s: float | None
    ecn_marked_packets_per_s: float | None
    mark_fraction: float | None
    occupancy_bytes: float | None
    watermark_bytes: float | None
    threshold_bytes: float | None = Field(description="the agent's threshold in force")
    basis: str | None = Field(
        description="computed, static_ordered, stale_fallback (a fault), kept or idle"
    )
    pfc_storm_active: float | None = Field(
        default=None, description="1 while SONiC's PFC watchdog holds this queue in a storm"
    )

    @classmethod
    def of(cls, view: QueueNow) -> Self:
        return cls(
            queue=view.queue, service_class=view.service_class, basis=view.basis, **view.values
        )


class PfcNowOut(ViewOut):
    priority: str = Field(description="the PFC priority, and the index of its priority group")
    service_class: str = Field(description="the intent's lossless class on it ('' when none)")
    rx_pause_frames_per_s: float | None
    tx_pause_frames_per_s: float | None
    pg_dropped_packets_per_s: float | None
    pg_headroom_watermark_bytes: float | None

    @classmethod
    def of(cls, view: PfcNow) -> Self:
        return cls(priority=view.priority, service_class=view.service_class, **view.values)


class PortNowOut(ViewOut):
    port: str
    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None
    utilisation: float | None
    speed_bits_per_s: float | None
    queues: list[QueueNowOut]
    pfc: list[PfcNowOut] = Field(
        default=[], description="each PFC priority the switch reports pauses or a group for"
    )

    @classmethod
    def of(cls, view: PortNow) -> Self:
        queues = [QueueNowOut.of(q) for q in sorted_queues(view)]
        pfc = [PfcNowOut.of(p) for p in sorted_pfc(view)]
        return cls(port=view.port, queues=queues, pfc=pfc, **view.values)


class AgentOut(ViewOut):
    mode: str | None = Field(
        description="dynamic, fallback (a fault), idle (no counter moving: no fault) or stopped"
    )
    algorithm: str | None
    heartbeat_age_s: float | None
    orders_version: float | None
    loop_s: float | None


class SwitchTelemetryOut(ViewOut):
    switch: str
    at: datetime
    stream_up: bool | None
    last_update_age_s: float | None
    agent: AgentOut
    ports: list[PortNowOut]

    @classmethod
    def of(cls, view: SwitchNow) -> Self:
        stream = view.values.get("stream_up")
        agent = AgentOut(
            mode=view.agent_mode,
            algorithm=view.agent_algorithm,
            heartbeat_age_s=view.values.get("heartbeat_age_s"),
            orders_version=view.values.get("orders_version"),
            loop_s=view.values.get("loop_s"),
        )
        return cls(
            switch=view.switch,
            at=view.at,
            stream_up=None if stream is None else stream >= 1,
            last_update_age_s=view.values.get("last_update_age_s"),
            agent=agent,
            ports=[PortNowOut.of(port) for port in view.ports.values()],
        )


class QueueSeriesOut(ViewOut):
    queue: str
    service_class: str
    series: dict[str, list[tuple[float, float | None]]] = Field(
        description="threshold_bytes, occupancy_bytes, tx_bytes_per_s, ecn_marked_packets_per_s:"
        " [unix time, value] pairs"
    )


class PortSeriesOut(ViewOut):
    switch: str
    port: str
    start: datetime
    end: datetime
    step_s: float
    queues: list[QueueSeriesOut]


class ReasonOut(ViewOut):
    check: str
    state: str
    where: str
    detail: str

    @classmethod
    def of(cls, view: Reason) -> Self:
        return cls(check=view.check, state=view.state.value, where=view.where, detail=view.detail)


class SwitchHealthOut(ViewOut):
    switch: str
    state: str
    reasons: list[ReasonOut] = Field(description="the switch's own, then its queues'")
    idle: bool = Field(
        description="its agent reports it idle: no queue counter moving, nothing held (no fault)"
    )

    @classmethod
    def of(cls, view: SwitchHealth) -> Self:
        reasons = [ReasonOut.of(r) for r in view.all_reasons]
        return cls(switch=view.switch, state=view.state.value, reasons=reasons, idle=view.idle)


class FabricHealthOut(ViewOut):
    state: str = Field(description="ok, warn or critical: the worst of everything below")
    counts: dict[str, int] = Field(description="switches per state")
    reasons: list[ReasonOut] = Field(description="the fabric's own (collectors)")
    switches: list[SwitchHealthOut]

    @classmethod
    def of(cls, view: FabricHealth) -> Self:
        return cls(
            state=view.state.value,
            counts=view.counts(),
            reasons=[ReasonOut.of(r) for r in view.reasons],
            switches=[SwitchHealthOut.of(s) for s in view.switches],
        )
