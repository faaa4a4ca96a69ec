"""What the reconcile loop records when correcting drift does not end verified.

The switch is a fake (a dict behind ``SwitchAccess``): the unit under test is the loop's
reading of an apply result, not gNMI."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.policy.models import ReconcileMode, Switch
from controller.reconcile.apply import ApplyResult, ApplyStatus
from controller.reconcile.loop import Target, reconcile_switch
from controller.sonic.compile import compile_switch
from controller.sonic.model import Plan, SwitchConfig
from tests.unit.sonic import intents as t

SWITCH = t.switch("leaf1", (("Ethernet0", 10), ("Ethernet4", 25)))


@dataclass
class FakeSwitch:
    """Holds ``config``; every apply ends with ``status`` and writes nothing."""

    config: SwitchConfig
    status: ApplyStatus = "applied_verified"
    applied: list[Plan] = field(default_factory=list)

    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        wanted = set(tables)
        return {k: dict(v) for k, v in self.config.items() if k[0] in wanted}

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        self.applied.append(plan)
        return ApplyResult(switch.name, self.status, len(plan.ops), 0, 1, f"{self.status} here")


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def compiled() -> SwitchConfig:
    intent = t.intent(t.VOICE, t.BULK, switches=(SWITCH,))
    return compile_switch(intent, SWITCH)


def test_a_correction_whose_set_never_showed_is_unknown_not_failed() -> None:
    desired = compiled()
    drifted = {k: dict(v) for k, v in desired.items()}
    drifted[("SCHEDULER", "SLUICE_SCHED_1")]["weight"] = "7"
    switch = FakeSwitch(drifted, status="unknown")
    run = reconcile_switch(switch, Target(SWITCH, 2, desired), ReconcileMode.CORRECT, clock)
    assert run.status == "unknown"
    assert run.error == "unknown here"
    assert len(run.drift) == 1
    assert run.running is None
