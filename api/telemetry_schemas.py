"""Answer bodies of the telemetry, health and dashboard-series endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import BaseModel, Field

from controller.services.telemetry import PortNow, PortSeries, QueueNow, SwitchNow, sorted_queues
from controller.telemetry.health import FabricHealth, Reason, SwitchHealth


class QueueNowOut(BaseModel):
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

    @classmethod
    def of(cls, queue: QueueNow) -> Self:
        return cls(
            queue=queue.queue, service_class=queue.service_class, basis=queue.basis, **queue.values
        )


class PortNowOut(BaseModel):
    port: str
    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None
    utilisation: float | None
    speed_bits_per_s: float | None
    queues: list[QueueNowOut]

    @classmethod
    def of(cls, port: PortNow) -> Self:
        queues = [QueueNowOut.of(q) for q in sorted_queues(port)]
        return cls(port=port.port, queues=queues, **port.values)


class AgentOut(BaseModel):
    mode: str | None = Field(
        description="dynamic, fallback (a fault), idle (no counter moving: no fault) or stopped"
    )
    algorithm: str | None
    heartbeat_age_s: float | None
    orders_version: float | None
    loop_s: float | None


class SwitchTelemetryOut(BaseModel):
    switch: str
    at: datetime
    stream_up: bool | None
    last_update_age_s: float | None
    agent: AgentOut
    ports: list[PortNowOut]

    @classmethod
    def of(cls, now: SwitchNow) -> Self:
        stream = now.values.get("stream_up")
        agent = AgentOut(
            mode=now.agent_mode,
            algorithm=now.agent_algorithm,
            heartbeat_age_s=now.values.get("heartbeat_age_s"),
            orders_version=now.values.get("orders_version"),
            loop_s=now.values.get("loop_s"),
        )
        return cls(
            switch=now.switch,
            at=now.at,
            stream_up=None if stream is None else stream >= 1,
            last_update_age_s=now.values.get("last_update_age_s"),
            agent=agent,
            ports=[PortNowOut.of(port) for port in now.ports.values()],
        )


class QueueSeriesOut(BaseModel):
    queue: str
    service_class: str
    series: dict[str, list[tuple[float, float | None]]] = Field(
        description="threshold_bytes, occupancy_bytes, tx_bytes_per_s, ecn_marked_packets_per_s:"
        " [unix time, value] pairs"
    )


class PortSeriesOut(BaseModel):
    switch: str
    port: str
    start: datetime
    end: datetime
    step_s: float
    queues: list[QueueSeriesOut]

    @classmethod
    def of(cls, series: PortSeries) -> Self:
        return cls(
            switch=series.switch,
            port=series.port,
            start=series.start,
            end=series.end,
            step_s=series.step_s,
            queues=[
                QueueSeriesOut(
                    queue=q.queue,
                    service_class=q.service_class,
                    series={k: list(v) for k, v in q.series.items()},
                )
                for q in series.queues
            ],
        )


class ReasonOut(BaseModel):
    check: str
    state: str
    where: str
    detail: str

    @classmethod
    def of(cls, reason: Reason) -> Self:
        return cls(
            check=reason.check, state=reason.state.value, where=reason.where, detail=reason.detail
        )


class SwitchHealthOut(BaseModel):
    switch: str
    state: str
    reasons: list[ReasonOut] = Field(description="the switch's own, then its queues'")
    idle: bool = Field(
        description="its agent reports it idle: no queue counter moving, nothing held (no fault)"
    )

    @classmethod
    def of(cls, health: SwitchHealth) -> Self:
        reasons = [ReasonOut.of(r) for r in health.all_reasons]
        return cls(
            switch=health.switch, state=health.state.value, reasons=reasons, idle=health.idle
        )


class FabricHealthOut(BaseModel):
    state: str = Field(description="ok, warn or critical: the worst of everything below")
    counts: dict[str, int] = Field(description="switches per state")
    reasons: list[ReasonOut] = Field(description="the fabric's own (collectors)")
    switches: list[SwitchHealthOut]

    @classmethod
    def of(cls, health: FabricHealth) -> Self:
        return cls(
            state=health.state.value,
            counts=health.counts(),
            reasons=[ReasonOut.of(r) for r in health.reasons],
            switches=[SwitchHealthOut.of(s) for s in health.switches],
        )
