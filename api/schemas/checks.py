"""Request and answer bodies of the fabric checks (``POST /checks/roce``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from api.schemas.adopting import ENDPOINTS_MAX, EndpointIn, SwitchName
from api.schemas.common import Strict
from controller.services.checks import RoceCheckInfo


class RoceCheckIn(Strict):
    switches: list[SwitchName] = Field(
        default_factory=list,
        max_length=10_000,
        description="switches of the current intent (none named, no endpoints: every one)",
    )
    endpoints: list[EndpointIn] = Field(
        default_factory=list,
        max_length=ENDPOINTS_MAX,
        description="switches the intent does not have",
    )


class FindingOut(BaseModel):
    kind: str = Field(
        description="pfc_priorities, dscp_to_tc, tc_to_pg, pfc_to_queue, pfc_to_pg, mtu (a "
        "link's ends differ), headroom, watchdog (a lossless priority lacks it), unreachable "
        "(not read)"
    )
    end: str = Field(description="switch:port (or the switch) the finding is on")
    switch: str
    port: str | None
    field: str = Field(description="the CONFIG_DB field, TABLE|key.field")
    expected: str
    found: str
    reason: str


class LinkCheckOut(BaseModel):
    a: str = Field(description="switch:port")
    b: str = Field(description="switch:port")
    priorities: list[int] = Field(description="lossless (PFC) priorities on either end")
    ok: bool
    findings: list[FindingOut]


class PortCheckOut(BaseModel):
    port: str = Field(description="switch:port")
    priorities: list[int] = Field(description="its lossless (PFC) priorities")
    ok: bool
    findings: list[FindingOut]


class RoceCheckOut(BaseModel):
    discovery_id: int = Field(description="the discovery the check judged")
    ok: bool = Field(description="no finding at all")
    findings: int = Field(description="how many findings, links, ports and switches together")
    links: list[LinkCheckOut] = Field(description="every fabric link LLDP shows, both ends")
    ports: list[PortCheckOut] = Field(description="every port with PFC on")
    unreachable: list[FindingOut] = Field(description="switches that could not be read")

    @classmethod
    def of(cls, info: RoceCheckInfo) -> RoceCheckOut:
        return cls.model_validate({"discovery_id": info.discovery_id, **info.check.as_json()})
