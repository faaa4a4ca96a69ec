"""What the reconcile loop records when correcting drift does not end verified.

The switch is a fake (a dict behind ``SwitchAccess``): the unit under test is the loop's
reading of an apply result, not gNMI."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.intent.models import ReconcileMode
from controller.reconcile.loop import Target, reconcile_switch
from controller.sonic.compile import compile_switch
from controller.sonic.model import SwitchConfig
from tests.unit.reconcile.fakes import FakeSwitch
from tests.unit.sonic import intents as t

SWITCH = t.switch("leaf1", (("Ethernet0", 10), ("Ethernet4", 25)))


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


def queue_drift() -> tuple[SwitchConfig, SwitchConfig]:
    """(desired, observed): someone pointed one of Ethernet4's queues at another scheduler."""
    desired = compiled()
    observed = {k: dict(v) for k, v in desired.items()}
    observed[("QUEUE", "Ethernet4|1")]["scheduler"] = "SLUICE_SCHED_5"
    return desired, observed


def test_a_repair_that_takes_a_port_down_is_alerted_and_names_the_port() -> None:
    desired, observed = queue_drift()
    switch = FakeSwitch(observed)
    run = reconcile_switch(switch, Target(SWITCH, 2, desired), ReconcileMode.CORRECT, clock)
    assert run.status == "alerted"
    assert switch.applied == []  # nothing written
    assert [(d.table, d.key, d.field) for d in run.drift] == [("QUEUE", "Ethernet4|1", "scheduler")]
    error = run.error or ""
    assert "Ethernet4 (QUEUE|Ethernet4|1 scheduler: SLUICE_SCHED_5 -> SLUICE_SCHED_1)" in error
    assert "fabric.reconcile.allow_port_flaps" in error


def test_a_repair_that_takes_a_port_down_is_written_when_the_policy_allows_it() -> None:
    desired, observed = queue_drift()
    switch = FakeSwitch(observed)
    target = Target(SWITCH, 2, desired)
    run = reconcile_switch(switch, target, ReconcileMode.CORRECT, clock, allow_port_flaps=True)
    assert run.status == "corrected"
    (plan,) = switch.applied
    assert plan.ports_down == ("Ethernet4",)


def test_a_repair_of_a_profile_needs_no_permission() -> None:
    desired = compiled()
    observed = {k: dict(v) for k, v in desired.items()}
    observed[("SCHEDULER", "SLUICE_SCHED_1")]["weight"] = "7"
    switch = FakeSwitch(observed)
    run = reconcile_switch(switch, Target(SWITCH, 2, desired), ReconcileMode.CORRECT, clock)
    assert run.status == "corrected"
    (plan,) = switch.applied
    assert plan.port_flaps == ()
