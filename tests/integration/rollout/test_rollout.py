"""Staged rollouts over real gRPC to four vsonic switches, with state in PostgreSQL.

Expected values come from the example intent (four switches: leaf1, leaf2, spine1, spine2)
and the compiled desired state; switch contents are read from Redis directly, not through
the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.errors import Conflict, IntentInvalid
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.reconcile.access import GnmiAccess
from controller.reconcile.apply import ApplyResult
from controller.rollout.switches import RolloutRunner
from controller.services.rollouts import RolloutInfo, RolloutPolicy
from controller.sonic.model import Plan
from controller.store.repositories import states
from controller.store.rollout_store import SqlRolloutStore
from controller.store.snapshots import decode_fleet
from tests.support.fresh_switch import as_read_back

from .conftest import OPERATOR, Controller, full_dump, statuses

ALL = ("leaf1", "leaf2", "spine1", "spine2")


def start(controller: Controller, **policy: Any) -> RolloutInfo:
    return controller.rollouts.start(RolloutPolicy(to_version=None, **policy), actor=OPERATOR)


def second_version(intent: Intent) -> Intent:
    """Storage's weight 50 -> 60 and the best-effort class removed: changes and deletes."""
    data: dict[str, Any] = dump_intent(intent)
    classes = [c for c in data["service_classes"] if c["name"] != "best-effort"]
    for service_class in classes:
        if service_class["name"] == "storage":
            service_class["scheduling"]["weight"] = 60
    data["service_classes"] = classes
    return parse_intent(data)


def drop_egress_pool(controller: Controller, switch: str) -> None:
    """The switch lacks the BUFFER_POOL the intent's buffer profiles name."""
    controller.fabric.switches[switch].store.client(4).delete("BUFFER_POOL|egress_lossy_pool")


def assert_holds_desired(controller: Controller, switch: str) -> None:
    stored = controller.fabric.switches[switch].config_db()
    for (table, key), fields in controller.fabric.desired()[switch].items():
        assert stored.get(f"{table}|{key}") == fields, f"{switch} {table}|{key}"


def test_rollout_to_four_switches_is_verified_canary_first(controller: Controller) -> None:
    controller.store_intent(controller.fabric.intent)
    info = start(controller, canary=("spine2",), batch_size=2, failure_budget=0)
    # Canary spine2 is batch 0; the rest in name order, two per batch: 1, 1, 2.
    assert {r.switch: r.batch for r in info.results} == {
        "spine2": 0,
        "leaf1": 1,
        "leaf2": 1,
        "spine1": 2,
    }
    assert (info.state, info.from_version, info.to_version) == ("pending", 0, 1)

    controller.runner().run_until_idle()

    done = controller.rollouts.get(info.id)
    assert done.state == "completed"
    assert statuses(done) == dict.fromkeys(ALL, "applied_verified")
    by_switch = {r.switch: r for r in done.results}
    # Each batch starts only after the one before it finished.
    assert by_switch["spine2"].finished_at < by_switch["leaf1"].started_at  # type: ignore[operator]
    assert by_switch["leaf2"].finished_at < by_switch["spine1"].started_at  # type: ignore[operator]
    for name in ALL:
        assert_holds_desired(controller, name)
    # The state read back after each verified apply is recorded: what sluice wrote, plus the
    # counter groups a fresh switch enables itself (SONiC's init_cfg; vsonic's seed) in the
    # shared FLEX_COUNTER_TABLE that sluice did not compile (PG_WATERMARK).
    with controller.sessions() as session:
        recorded = decode_fleet(states.latest_running_states(session=session))
    for name, desired in controller.fabric.desired().items():
        assert recorded[name] == as_read_back(desired)


def test_a_value_the_switch_rejects_is_a_clear_error_for_that_switch_only(
    controller: Controller,
) -> None:
    controller.store_intent(controller.fabric.intent)
    drop_egress_pool(controller, "leaf2")
    info = start(controller, batch_size=4, failure_budget=1)
    controller.runner().run_until_idle()

    done = controller.rollouts.get(info.id)
    assert statuses(done) == {
        "leaf1": "applied_verified",
        "leaf2": "failed",
        "spine1": "applied_verified",
        "spine2": "applied_verified",
    }
    leaf2 = next(r for r in done.results if r.switch == "leaf2")
    # The switch's own words: the table, the entry and the field it refused.
    assert "BUFFER_PROFILE|SLUICE_" in (leaf2.reason or "")
    assert "field 'pool'" in (leaf2.reason or "")
    assert leaf2.detail is not None
    assert leaf2.detail["failed_op"]["table"] == "BUFFER_PROFILE"
    # One failure is within a budget of 1: the rollout completes and says what is missing.
    assert done.state == "completed"
    assert "leaf2 (failed)" in (done.reason or "")


def test_a_stopped_switch_is_unreachable_the_others_applied_and_resume_completes_it(
    controller: Controller,
) -> None:
    controller.store_intent(controller.fabric.intent)
    info = start(controller, batch_size=1, failure_budget=0)
    runner = controller.runner()
    runner.step(info.id)  # pending -> running
    runner.step(info.id)  # batch 0: leaf1
    controller.fabric.switches["spine1"].stop()
    runner.run_until_idle()

    halted = controller.rollouts.get(info.id)
    assert statuses(halted) == {
        "leaf1": "applied_verified",
        "leaf2": "applied_verified",
        "spine1": "unreachable",
        "spine2": "pending",  # the budget of 0 was exceeded before its batch
    }
    assert halted.state == "halted"
    assert "spine1 (unreachable)" in (halted.reason or "")
    assert controller.fabric.switches["spine2"].sets.count == 0

    controller.fabric.switches["spine1"].start()
    controller.restart_southbound()
    controller.rollouts.resume(info.id, actor=OPERATOR)
    controller.runner().run_until_idle()
    resumed = controller.rollouts.get(info.id)
    assert resumed.state == "completed"
    assert statuses(resumed) == dict.fromkeys(ALL, "applied_verified")
    spine1 = next(r for r in resumed.results if r.switch == "spine1")
    assert spine1.attempts == 2
    for name in ALL:
        assert_holds_desired(controller, name)


def test_halts_when_failures_exceed_the_budget(controller: Controller) -> None:
    controller.store_intent(controller.fabric.intent)
    drop_egress_pool(controller, "leaf2")
    drop_egress_pool(controller, "spine1")
    info = start(controller, batch_size=1, failure_budget=1)
    controller.runner().run_until_idle()

    halted = controller.rollouts.get(info.id)
    # leaf1 ok; leaf2 fails (1, within the budget); spine1 fails (2 > 1): halt before spine2.
    assert halted.state == "halted"
    assert statuses(halted) == {
        "leaf1": "applied_verified",
        "leaf2": "failed",
        "spine1": "failed",
        "spine2": "pending",
    }
    assert "2 switch(es) failed, more than the failure budget of 1" in (halted.reason or "")
    assert controller.fabric.switches["spine2"].sets.count == 0
    # A halted rollout blocks new ones until it is resumed or rolled back.
    with pytest.raises(Conflict):
        start(controller)


def test_pause_takes_effect_between_batches_and_resume_goes_on(controller: Controller) -> None:
    controller.store_intent(controller.fabric.intent)
    info = start(controller, batch_size=2, failure_budget=0)
    runner = controller.runner()
    runner.step(info.id)  # pending -> running
    runner.step(info.id)  # batch 0: leaf1, leaf2
    controller.rollouts.pause(info.id, actor=OPERATOR)
    assert runner.run_until_idle() == 0  # nothing runnable while paused
    paused = controller.rollouts.get(info.id)
    assert paused.state == "paused"
    assert statuses(paused) == {
        "leaf1": "applied_verified",
        "leaf2": "applied_verified",
        "spine1": "pending",
        "spine2": "pending",
    }
    assert controller.fabric.switches["spine1"].sets.count == 0
    with pytest.raises(Conflict):
        controller.rollouts.pause(info.id, actor=OPERATOR)

    controller.rollouts.resume(info.id, actor=OPERATOR)
    runner.run_until_idle()
    assert statuses(controller.rollouts.get(info.id)) == dict.fromkeys(ALL, "applied_verified")


def test_rollback_restores_the_previous_tables_exactly(controller: Controller) -> None:
    first = controller.store_intent(controller.fabric.intent)
    start(controller, batch_size=4, failure_budget=0)
    controller.runner().run_until_idle()
    before = full_dump(controller.fabric)

    controller.store_intent(second_version(controller.fabric.intent))
    info = start(controller, batch_size=2, failure_budget=0)
    assert info.from_version == first
    controller.runner().run_until_idle()
    assert controller.rollouts.get(info.id).state == "completed"
    changed = full_dump(controller.fabric)
    assert changed != before
    assert (
        changed["leaf1"]["SCHEDULER|SLUICE_SCHED_3"]["weight"]
        != (before["leaf1"]["SCHEDULER|SLUICE_SCHED_3"]["weight"])
    )

    controller.rollouts.rollback(info.id, actor=OPERATOR)
    controller.runner().run_until_idle()
    rolled = controller.rollouts.get(info.id)
    assert rolled.state == "rolled_back"
    assert statuses(rolled, "rollback") == dict.fromkeys(ALL, "applied_verified")
    assert full_dump(controller.fabric) == before
    # The next rollout starts from the version the rollback restored.
    assert start(controller).from_version == first


class FakeCrashingAccess(GnmiAccess):
    """Real gNMI access whose process "dies" right after one switch's apply succeeded,
    before the result could be recorded (a controller killed mid-batch)."""

    crash_after: str = ""

    def apply(self, switch: Any, plan: Plan) -> ApplyResult:
        result = super().apply(switch, plan)
        if switch.name == self.crash_after:
            raise FakeProcessDeath
        return result


class FakeProcessDeath(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing on the way catches it."""


def test_a_restarted_runner_resumes_and_rewrites_nothing_already_applied(
    controller: Controller,
) -> None:
    controller.store_intent(controller.fabric.intent)
    info = start(controller, canary=("leaf1",), batch_size=1, failure_budget=0)
    first = controller.runner()
    first.step(info.id)  # pending -> running
    first.step(info.id)  # canary leaf1
    real = controller.access()
    crashing = FakeCrashingAccess(
        real.pool, real.resolve, real.username, real.batch_size, tls=real.tls
    )
    crashing.crash_after = "leaf2"
    store = SqlRolloutStore(controller.sessions, clock=controller.clock)
    dying = RolloutRunner(store, crashing, controller.clock)
    with pytest.raises(FakeProcessDeath):
        dying.step(info.id)  # leaf2 written and verified, but never recorded
    assert statuses(controller.rollouts.get(info.id))["leaf2"] == "pending"
    leaf2_sets = controller.fabric.switches["leaf2"].sets.count
    assert leaf2_sets > 0

    controller.runner().run_until_idle()  # a new controller process
    done = controller.rollouts.get(info.id)
    assert done.state == "completed"
    assert statuses(done) == dict.fromkeys(ALL, "applied_verified")
    # leaf2 was re-planned from a fresh read: already converged, so no Set was sent again.
    assert controller.fabric.switches["leaf2"].sets.count == leaf2_sets
    assert controller.fabric.switches["leaf1"].sets.count > 0


def test_canary_names_must_be_in_the_intent(controller: Controller) -> None:
    controller.store_intent(controller.fabric.intent)
    with pytest.raises(IntentInvalid, match="leaf9"):
        start(controller, canary=("leaf9",))
