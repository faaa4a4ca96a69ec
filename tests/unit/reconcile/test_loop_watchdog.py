"""Drift repair on a switch whose PFC watchdog table is gone (docs/lossless.md, "A switch's
first PFC watchdog"): SONiC's config updater refuses the table's first entry, so the loop
writes the rest of the repair, alerts the watchdog's drift with how to start it, and logs that
once per switch until the watchdog runs again.

The switch is a fake (a dict behind ``SwitchAccess`` that applies what it is sent): the unit
under test is the loop's split of a repair, not gNMI (over vsonic:
``tests/integration/rollout/test_reconcile_watchdog.py``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from controller.intent.loader import parse_intent
from controller.intent.models import Reconcile, ReconcileMode
from controller.reconcile.loop import ReconcileLoop, SwitchRun, Target, reconcile_switch
from controller.sonic.compile import compile_switch
from controller.sonic.model import SwitchConfig
from tests.unit.intent.test_lossless_intent import lossless_data
from tests.unit.reconcile.fakes import FakeSwitch

INTENT = parse_intent(lossless_data())
LEAF1 = INTENT.switches[0]
GLOBAL = ("PFC_WD", "GLOBAL")
SCHEDULER = ("SCHEDULER", "SLUICE_SCHED_1")


def applied_switch(config: SwitchConfig) -> FakeSwitch:
    """A switch that applies every plan it is sent, verified."""
    return FakeSwitch(config, writes=True)


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def desired() -> SwitchConfig:
    compiled = compile_switch(INTENT, LEAF1)
    assert {k for k in compiled if k[0] == "PFC_WD"} == {
        ("PFC_WD", "Ethernet0"),
        ("PFC_WD", "Ethernet4"),
    }
    return compiled


def without_watchdog(config: SwitchConfig) -> SwitchConfig:
    """``config`` with the whole ``PFC_WD`` table deleted."""
    return {k: dict(v) for k, v in config.items() if k[0] != "PFC_WD"}


def reweighted(config: SwitchConfig) -> SwitchConfig:
    """``config`` with a scheduler's weight changed behind sluice's back (no port flap)."""
    changed = {k: dict(v) for k, v in config.items()}
    changed[SCHEDULER]["weight"] = "7"
    return changed


def reconcile(switch: FakeSwitch, want: SwitchConfig) -> SwitchRun:
    return reconcile_switch(switch, Target(LEAF1, 3, want), ReconcileMode.CORRECT, clock)


def test_the_rest_of_the_repair_is_written_and_the_watchdog_alerted_with_its_command() -> None:
    want = desired()
    switch = applied_switch(reweighted(without_watchdog(want)))
    run = reconcile(switch, want)
    assert run.status == "corrected"
    (plan,) = switch.applied
    assert {(op.table, op.key) for op in plan.ops} == {SCHEDULER}
    assert switch.config[SCHEDULER] == want[SCHEDULER]
    assert not any(table == "PFC_WD" for table, _ in switch.config)
    assert run.withheld is not None
    assert {(d.table, d.key) for d in run.withheld.drift} == {
        ("PFC_WD", "Ethernet0"),
        ("PFC_WD", "Ethernet4"),
    }
    assert set(run.withheld.drift) < set(run.drift)  # the scheduler's is the corrected one
    assert run.error is None  # the run's own words: none; the withheld repair says why
    reason = run.message or ""
    assert reason == run.withheld.reason
    assert reason.startswith("PFC_WD not corrected: the switch runs no PFC watchdog")
    assert "`sudo pfcwd interval 200`" in reason
    assert "the reconcile loop's next pass writes it back" in reason
    assert "discover the switch again" not in reason  # the loop reads the switch itself
    # What the switch runs now, saved as its running state: not the watchdog.
    assert run.running == switch.config


def test_a_repair_of_the_watchdog_alone_writes_nothing() -> None:
    want = desired()
    switch = applied_switch(without_watchdog(want))
    run = reconcile(switch, want)
    assert run.status == "alerted"
    assert switch.applied == []
    assert run.withheld is not None
    assert run.drift == run.withheld.drift
    assert (run.error, run.message) == (None, run.withheld.reason)


def test_a_switch_with_any_watchdog_entry_gets_its_ports_written_back() -> None:
    # ``pfcwd stop`` deletes the ports' entries and keeps GLOBAL: GCU takes the ports' then.
    want = desired()
    switch = applied_switch(without_watchdog(want) | {GLOBAL: {"POLL_INTERVAL": "200"}})
    run = reconcile(switch, want)
    assert (run.status, run.withheld, run.message) == ("corrected", None, None)
    (plan,) = switch.applied
    assert {op.key for op in plan.ops if op.table == "PFC_WD"} == {"Ethernet0", "Ethernet4"}
    assert switch.config[("PFC_WD", "Ethernet4")] == want[("PFC_WD", "Ethernet4")]


def test_the_watchdog_is_held_beside_a_withheld_port_flap() -> None:
    want = desired()
    observed = without_watchdog(want)
    observed[("QUEUE", "Ethernet4|1")]["scheduler"] = "SLUICE_SCHED_5"
    switch = applied_switch(observed)
    run = reconcile(switch, want)
    assert run.status == "alerted"
    assert switch.applied == []
    assert "fabric.reconcile.allow_port_flaps" in (run.error or "")
    assert "PFC_WD not corrected" not in (run.error or "")  # the withheld reason is apart
    message = run.message or ""
    assert "fabric.reconcile.allow_port_flaps" in message
    assert message.endswith("; " + (run.withheld.reason if run.withheld else "?"))


@dataclass
class OneTargetStore:
    """The loop's store over one target; keeps what it is given to record."""

    target: Target
    recorded: list[SwitchRun] = field(default_factory=list)

    def policy(self) -> Reconcile:
        return Reconcile()

    def targets(self) -> list[Target]:
        return [self.target]

    def record(self, run: SwitchRun) -> None:
        self.recorded.append(run)


def test_the_loop_logs_a_stopped_watchdog_once_and_says_when_it_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    want = desired()
    switch = applied_switch(reweighted(without_watchdog(want)))
    store = OneTargetStore(Target(LEAF1, 3, want))
    loop = ReconcileLoop(store, switch, clock, lambda: 0.5, max_parallel=1)
    caplog.set_level(logging.INFO, logger="controller.reconcile.loop")

    for _ in range(3):
        loop.run_pass()
    assert [r.status for r in store.recorded] == ["corrected", "alerted", "alerted"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "leaf1 (version 3): PFC_WD not corrected" in warnings[0]
    # The pass that corrected the scheduler says so; the repeated alerts add nothing.
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["reconcile leaf1 (version 3): corrected, 7 drift"]

    caplog.clear()
    switch.config[GLOBAL] = {"POLL_INTERVAL": "200"}  # `sudo pfcwd interval 200`
    loop.run_pass()
    assert store.recorded[-1].status == "corrected"
    assert store.recorded[-1].withheld is None
    assert ("PFC_WD", "Ethernet0") in switch.config
    assert [r.getMessage() for r in caplog.records] == [
        "reconcile leaf1: its PFC watchdog runs again",
        "reconcile leaf1 (version 3): corrected, 6 drift",
    ]

    caplog.clear()
    switch.config = without_watchdog(switch.config)  # stopped again: said again
    loop.run_pass()
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
