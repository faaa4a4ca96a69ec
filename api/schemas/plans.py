"""Plans and diffs: per-switch ordered CONFIG_DB ops, with what SONiC's config updater makes
of them (changes, ports taken down)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from api.schemas.common import NO_NUL, IntentJson, Strict, ViewOut
from controller.services.plans import DiffResult, Plan, PlanResult


class FieldOwnerOut(BaseModel):
    field: str
    owner: str = Field(description="sluice, operator_kept or operator_overwritten")
    value: str | None = Field(description="what the switch holds after the op; None: gone")
    saved: str | None = Field(description="the operator's value the adoption record keeps")
    source: str | None = Field(description="the operator's map a merged map's field came from")


class OpOut(BaseModel):
    kind: str
    table: str
    key: str
    path: str
    fields: dict[str, str]
    old_fields: dict[str, str]
    removed_fields: list[str]
    whole_entry: bool
    ownership: list[FieldOwnerOut] | None = Field(
        default=None,
        description="who owns each field of the entry, where the switch has operator config "
        '(docs/config-db.md, "Who owns what")',
    )


class PortFlapOut(BaseModel):
    port: str = Field(description="the port SONiC's config updater takes admin down and up")
    table: str
    key: str
    reason: str = Field(description="the entry and what happens to it")


class PlanOut(ViewOut):
    switch: str
    counts: dict[str, int]
    counts_by_table: dict[str, dict[str, int]]
    ops: list[OpOut]
    gcu_changes: int = Field(
        description="how many changes SONiC's config updater sorts the plan into (estimate)"
    )
    ports_down: list[str] = Field(description="the ports the plan takes admin down and up")
    port_flaps: list[PortFlapOut] = Field(
        description="every port-critical change (QUEUE, BUFFER_QUEUE, PORT_QOS_MAP ...), "
        "with its port and reason"
    )

    @classmethod
    def of(cls, view: Plan) -> PlanOut:
        # The plan's own JSON form: an op's gNMI path is named ``path`` there.
        return cls.model_validate(view.as_dict())


class PlanRequest(Strict):
    intent: IntentJson | None = Field(
        default=None, description="a proposed intent; the current one when absent"
    )
    switches: list[Annotated[str, Field(max_length=63, pattern=NO_NUL)]] | None = Field(
        default=None, max_length=10_000, description="only these switches"
    )


class WarningOut(BaseModel):
    field: str
    reason: str


class PortCableOut(BaseModel):
    switch: str
    port: str
    cable_m: float = Field(description="the length the port's lossless headroom is sized for")
    source: str = Field(
        description="intent (declared), CABLE_LENGTH (the switch's), peer CABLE_LENGTH (the "
        "LLDP peer's) or fabric default"
    )
    peer: str | None = Field(description="the link's other end (switch:port), where discovered")
    reason: str = Field(description="as the CLI shows it: '5 m from CABLE_LENGTH'")


class CableFindingOut(BaseModel):
    switch: str
    port: str
    field: str = Field(description="the CONFIG_DB field of the end named")
    reason: str


class PlansOut(ViewOut):
    base_version: int
    proposed: bool
    plans: list[PlanOut]
    warnings: list[WarningOut] = Field(
        description="accepted, but worth knowing: where the switches' agent will hold its "
        "static fallback or do no measured good at the intent's interval"
    )
    cables: list[PortCableOut] = Field(
        default_factory=list,
        description="with a lossless class: each port's cable length and which source sized "
        'its headroom (docs/lossless.md, "Cable lengths")',
    )
    cable_findings: list[CableFindingOut] = Field(
        default_factory=list,
        description="discovered lengths not taken as they stood: link ends that disagree, "
        "lengths out of range",
    )

    @classmethod
    def of(cls, view: PlanResult) -> PlansOut:
        plans = [PlanOut.of(plan) for plan in view.plans]
        warnings = [WarningOut(field=w.path, reason=w.reason) for w in view.warnings]
        return cls(
            base_version=view.base_version,
            proposed=view.proposed,
            plans=plans,
            warnings=warnings,
            cables=[PortCableOut.model_validate(c.as_json()) for c in view.cables.ports.values()],
            cable_findings=[
                CableFindingOut.model_validate(f.as_json()) for f in view.cables.findings
            ],
        )


class DiffOut(ViewOut):
    from_version: int
    to_version: int
    plans: list[PlanOut]

    @classmethod
    def of(cls, view: DiffResult) -> DiffOut:
        plans = [PlanOut.of(plan) for plan in view.plans]
        return cls(from_version=view.from_version, to_version=view.to_version, plans=plans)
