"""A switch for the reconcile loop's unit tests: a dict behind ``SwitchAccess``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.intent.models import Switch
from controller.reconcile.apply import ApplyResult, ApplyStatus
from controller.sonic.diff import apply_plan
from controller.sonic.model import Plan, SwitchConfig


@dataclass
class FakeSwitch:
    """Holds ``config``; every plan it is sent is recorded and ends with ``status``. With
    ``writes``, the plan is also applied to ``config`` (and the apply is verified); without,
    nothing is written and the result says so."""

    config: SwitchConfig
    status: ApplyStatus = "applied_verified"
    writes: bool = False
    applied: list[Plan] = field(default_factory=list)

    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        wanted = set(tables)
        return {k: dict(v) for k, v in self.config.items() if k[0] in wanted}

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        self.applied.append(plan)
        if self.writes:
            self.config = apply_plan(self.config, plan)
            return ApplyResult(switch.name, "applied_verified", len(plan.ops), 0, 1, None)
        return ApplyResult(switch.name, self.status, len(plan.ops), 0, 1, f"{self.status} here")
