"""Request and answer bodies of discovery, adoption records and releases (docs/adopting.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from api.schemas.common import Strict, ViewOut
from api.schemas.plans import PlanOut
from controller.intent.models import NAME_RE, GnmiEndpoint, SecretRef
from controller.services.discoveries import DiscoverTarget, DiscoveryInfo
from controller.services.releases import ReleaseInfo

SwitchName = Annotated[str, Field(pattern=NAME_RE)]
# Each endpoint is a connection the worker opens, waiting out its deadline if nothing answers:
# a pod's worth per request (more in several), not an unbounded list.
ENDPOINTS_MAX = 64
# A DNS name, an IPv4 address, or an IPv6 address (with a zone), as an endpoint is written.
ADDRESS_RE = r"^[A-Za-z0-9._:%-]+$"
# A gNMI prefix target: printable ASCII.
TARGET_RE = r"^[!-~]+$"


class EndpointGnmiIn(Strict):
    """Where a switch's gNMI server listens: the intent's ``gnmi``, its text bounded to what a
    host name, an address or a target can be (the request is stored before the worker reads
    it, and PostgreSQL text holds no NUL byte)."""

    address: str = Field(
        min_length=1, max_length=253, pattern=ADDRESS_RE, description="a host name or address"
    )
    port: int = Field(ge=1, le=65535)
    target: str | None = Field(default=None, min_length=1, max_length=253, pattern=TARGET_RE)
    set_deadline_s: float | None = Field(default=None, gt=0, le=3600)

    def endpoint(self) -> GnmiEndpoint:
        return GnmiEndpoint.model_validate(self.model_dump())


class EndpointIn(Strict):
    """A switch the intent does not have yet, and how to reach it."""

    name: SwitchName
    gnmi: EndpointGnmiIn
    credential_ref: SecretRef = Field(
        description="where its gNMI credential lives (env:NAME, file:/path, "
        "vault:mount/path#field); never the secret"
    )

    def target(self) -> DiscoverTarget:
        return DiscoverTarget(self.name, self.gnmi.endpoint(), self.credential_ref)


class DiscoverIn(Strict):
    switches: list[SwitchName] = Field(
        default_factory=list, max_length=10_000, description="switches of the current intent"
    )
    endpoints: list[EndpointIn] = Field(
        default_factory=list,
        max_length=ENDPOINTS_MAX,
        description="switches the intent does not have",
    )
    per_hop_us: float | None = Field(
        default=None,
        gt=0,
        le=1000,
        allow_inf_nan=False,
        description="each switch's forwarding delay for the RTT estimate (default 1 µs)",
    )


class ProblemOut(BaseModel):
    field: str
    reason: str


class DiscoveryOut(BaseModel):
    id: int
    state: str = Field(description="pending, or done")
    requested_by: str
    requested_at: datetime
    finished_at: datetime | None
    switches: list[dict[str, Any]] = Field(
        description="per switch: ports, neighbours, device metadata, lossless priorities per "
        "port, QoS entries per table, the Gets it took"
    )
    errors: dict[str, str] = Field(description="switches that could not be read, and why")
    topology: dict[str, Any] | None = Field(description="fabric links and host-facing ports")
    rtt: dict[str, Any] | None = Field(description="the base RTT estimate and its terms")
    declared_rtt_us: float | None = Field(description="the intent's fabric.base_rtt_us")
    inventory: dict[str, Any] | None = Field(
        description="what was found as intent YAML (switches, fabric.base_rtt_us) to review"
    )
    problems: list[ProblemOut] = Field(
        description="declared ports the switches lack or run at another speed"
    )

    @classmethod
    def of(cls, info: DiscoveryInfo, *, tables: bool = False) -> DiscoveryOut:
        switches = []
        for found in info.found:
            item = found.as_json()
            if not tables:
                del item["qos"]
            item["qos_counts"] = found.qos_counts()
            item["lossless"] = found.lossless()
            switches.append(item)
        return cls(
            id=info.id,
            state=info.state,
            requested_by=info.requested_by,
            requested_at=info.requested_at,
            finished_at=info.finished_at,
            switches=switches,
            errors=info.errors,
            topology=info.topology,
            rtt=info.rtt,
            declared_rtt_us=info.declared_rtt_us,
            inventory=info.inventory,
            problems=[ProblemOut(field=p.path, reason=p.reason) for p in info.problems],
        )


class ReleaseIn(Strict):
    switch: SwitchName
    dry_run: bool = Field(
        default=False, strict=True, description="show the plan, record nothing (200)"
    )
    allow_port_flaps: bool = Field(
        default=False,
        strict=True,
        description="allow the restores that take ports admin down and up (PORT_QOS_MAP, "
        "QUEUE, BUFFER_QUEUE: SONiC's config updater flaps the port)",
    )


class ReleaseOut(BaseModel):
    id: int | None = Field(description="None for a dry run")
    switch: str
    state: str = Field(description="planned, pending, released, failed, unreachable or unknown")
    allow_port_flaps: bool
    reason: str | None
    requested_by: str | None
    requested_at: datetime | None
    finished_at: datetime | None
    adoption_id: int
    plan: PlanOut | None = Field(description="what the release writes (when it was asked)")

    @classmethod
    def of(cls, info: ReleaseInfo) -> ReleaseOut:
        return cls(
            id=info.id,
            switch=info.switch,
            state=info.state,
            allow_port_flaps=info.allow_port_flaps,
            reason=info.reason,
            requested_by=info.requested_by,
            requested_at=info.requested_at,
            finished_at=info.finished_at,
            adoption_id=info.adoption_id,
            plan=None if info.plan is None else PlanOut.of(info.plan),
        )


class AdoptionOut(ViewOut):
    id: int
    switch: str
    adopted_at: datetime
    adopted_by: str
    released_at: datetime | None
    released_by: str | None
    entries: int = Field(description="entries of the operator's config the record keeps")
