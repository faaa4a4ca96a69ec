"""Apply and verify over real gRPC to virtual switches on real Redis.

The example intent is compiled for its four switches and pushed; checks read Redis directly
(not through the adapter under test) or compare with the compiled desired state.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from controller.reconcile.apply import (
    ApplyResult,
    Difference,
    ProgressEvent,
    apply_fleet,
    apply_plan_to_switch,
    gcu_batches,
)
from controller.sonic.diff import plan_switch
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.southbound.gnmi import CallPolicy, SessionPool
from controller.southbound.retry import RetryPolicy
from tests.support.fresh_switch import as_read_back

from .conftest import Fabric

BATCH = 20
# Short real sleeps: these tests stop servers on purpose, and nobody should wait long.
POLICY = CallPolicy(
    deadline_s=5.0, retry=RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05)
)


# Tables sluice invents: their writes go in SetRequests of their own after the QoS tables.
AGENT_TABLES = {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"}


def sets_of(plan: Plan) -> list[tuple[Op, ...]]:
    """The SetRequests a plan goes in (``gcu_batches``): at most BATCH ops and what GCU
    applies within the Set deadline at the policy's pace, each port's changes in one Set,
    the agent's queue entries and then its global entry in their own."""
    return gcu_batches(plan.ops, BATCH, POLICY.pace.changes_within(POLICY.set_deadline_s))


def written_before(plan: Plan, entry: tuple[str, str]) -> list[tuple[Op, ...]]:
    """The Sets sent before the one that carries ``entry``."""
    sets = sets_of(plan)
    at = next(i for i, chunk in enumerate(sets) if entry in {op.entry_key for op in chunk})
    return sets[:at]


@pytest.fixture
def pool() -> Iterator[SessionPool]:
    with SessionPool(policy=POLICY, max_in_flight=8, sleep=time.sleep) as sessions:
        yield sessions


def plans_from_switches(
    fabric: Fabric, pool: SessionPool, desired: dict[str, SwitchConfig]
) -> dict[str, Plan]:
    """Plan each switch from what it holds now (observed = a fresh read of sluice's tables)."""
    sessions = pool.sessions(fabric.targets().values())
    plans: dict[str, Plan] = {}
    for name, config in desired.items():
        observed = sessions[name].get_tables({table for table, _ in config})
        plans[name] = plan_switch(name, config, observed)
    return plans


def run(
    fabric: Fabric, pool: SessionPool, desired: dict[str, SwitchConfig], **kwargs
) -> dict[str, ApplyResult]:
    plans = plans_from_switches(fabric, pool, desired)
    sessions = pool.sessions(fabric.targets().values())
    return apply_fleet(plans, sessions, max_parallel=4, batch_size=BATCH, **kwargs)


def assert_redis_holds(fabric: Fabric, switch: str, config: SwitchConfig) -> None:
    """Every desired entry is in the switch's CONFIG_DB with exactly these fields."""
    stored = fabric.switches[switch].config_db()
    for (table, key), fields in config.items():
        assert stored.get(f"{table}|{key}") == fields, f"{switch} {table}|{key}"


def test_push_to_four_switches_is_verified_by_read_back(fabric: Fabric, pool: SessionPool) -> None:
    desired = fabric.desired()
    plans = plans_from_switches(fabric, pool, desired)
    results = apply_fleet(
        plans, pool.sessions(fabric.targets().values()), max_parallel=4, batch_size=BATCH
    )
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(
        desired, "applied_verified"
    )
    for name, config in desired.items():
        assert_redis_holds(fabric, name, config)
        # A fresh switch holds none of these tables: every entry is an add, one per op, and
        # the ops go out in the Sets gcu_batches makes, each port taken down in one of them.
        assert results[name].ops_total == results[name].ops_written == len(config)
        assert fabric.switches[name].sets.count == len(sets_of(plans[name]))
        model = fabric.switches[name].model
        assert model is not None
        assert set(model.port_flaps.values()) == {1}
        # What the adapter reads back is exactly the desired state, beside the counter
        # groups the switch enabled itself (FLEX_COUNTER_TABLE is shared).
        session = pool.session(fabric.targets()[name])
        assert session.get_tables({t for t, _ in config}) == as_read_back(config)


def test_second_run_on_a_converged_fabric_sends_no_set(fabric: Fabric, pool: SessionPool) -> None:
    desired = fabric.desired()
    run(fabric, pool, desired)
    before = {name: s.sets.count for name, s in fabric.switches.items()}
    again = run(fabric, pool, desired)
    assert all(r.status == "applied_verified" and r.ops_total == 0 for r in again.values())
    assert {name: s.sets.count for name, s in fabric.switches.items()} == before


def test_a_refused_value_fails_that_switch_only_and_names_the_field(
    fabric: Fabric, pool: SessionPool
) -> None:
    desired = fabric.desired()
    # SONiC's scheduler weight is 1..100 (sonic-scheduler.yang); 150 must be refused.
    desired["leaf2"][("SCHEDULER", "SLUICE_SCHED_3")]["weight"] = "150"
    plans = plans_from_switches(fabric, pool, desired)
    before = written_before(plans["leaf2"], ("SCHEDULER", "SLUICE_SCHED_3"))
    results = apply_fleet(
        plans, pool.sessions(fabric.targets().values()), max_parallel=4, batch_size=BATCH
    )
    leaf2 = results["leaf2"]
    assert leaf2.status == "failed"
    assert "SCHEDULER|SLUICE_SCHED_3" in (leaf2.reason or "")
    assert "weight" in (leaf2.reason or "")
    assert leaf2.failed_op is not None
    assert leaf2.failed_op.entry_key == ("SCHEDULER", "SLUICE_SCHED_3")
    # Batches before the refused one stay written; the refused batch wrote nothing.
    assert leaf2.ops_written == sum(len(chunk) for chunk in before)
    assert "SCHEDULER|SLUICE_SCHED_3" not in fabric.switches["leaf2"].config_db()
    assert fabric.switches["leaf2"].sets.count == len(before) + 1
    for name in ("leaf1", "spine1", "spine2"):
        assert results[name].status == "applied_verified"
        assert_redis_holds(fabric, name, desired[name])


def test_a_switch_stopped_mid_apply_is_unreachable_and_a_second_run_completes_it(
    fabric: Fabric, pool: SessionPool
) -> None:
    desired = fabric.desired()
    spine1 = fabric.switches["spine1"]

    def stop_spine1_after_its_first_batch(event: ProgressEvent) -> None:
        if event.switch == "spine1" and event.stage == "batch_written" and event.batches_done == 1:
            spine1.stop()

    plans = plans_from_switches(fabric, pool, desired)
    results = apply_fleet(
        plans,
        pool.sessions(fabric.targets().values()),
        max_parallel=4,
        batch_size=BATCH,
        progress=stop_spine1_after_its_first_batch,
    )
    first = sets_of(plans["spine1"])[0]
    assert results["spine1"].status == "unreachable"
    assert results["spine1"].ops_written == len(first)
    assert "UNAVAILABLE" in (results["spine1"].reason or "")
    for name in ("leaf1", "leaf2", "spine2"):
        assert results[name].status == "applied_verified"

    spine1.start()  # same port, same Redis: the switch is back with what it had accepted
    sets_before = spine1.sets.count
    # A new run (a new pool, as after a controller restart) plans from what spine1 holds.
    with SessionPool(policy=POLICY, sleep=time.sleep) as fresh:
        second = plans_from_switches(fabric, fresh, desired)
        # Only what the first run did not write is left: the ops after the first batch.
        written = {op.entry_key for op in first}
        assert [op.entry_key for op in second["spine1"].ops] == [
            op.entry_key for op in plans["spine1"].ops if op.entry_key not in written
        ]
        assert all(second[name].is_empty for name in ("leaf1", "leaf2", "spine2"))
        results = apply_fleet(
            second, fresh.sessions(fabric.targets().values()), max_parallel=4, batch_size=BATCH
        )
    assert results["spine1"].status == "applied_verified"
    # Everything but the first batch is left, in batches, the agent tables in their own Sets.
    assert spine1.sets.count - sets_before == len(sets_of(second["spine1"]))
    assert_redis_holds(fabric, "spine1", desired["spine1"])


def test_a_value_changed_before_read_back_is_a_mismatch_and_the_next_run_fixes_it(
    fabric: Fabric, pool: SessionPool
) -> None:
    desired = fabric.desired()
    leaf1 = fabric.switches["leaf1"]

    def operator_edits_leaf1_before_read_back(event: ProgressEvent) -> None:
        # Someone (redis-cli on the switch) changes a weight between Set and Get.
        if event.switch == "leaf1" and event.stage == "verifying":
            leaf1.store.client(4).hset("SCHEDULER|SLUICE_SCHED_3", "weight", "7")

    results = run(fabric, pool, desired, progress=operator_edits_leaf1_before_read_back)
    assert results["leaf1"].status == "mismatch"
    assert results["leaf1"].differences == (
        Difference(
            "SCHEDULER",
            "SLUICE_SCHED_3",
            "weight",
            desired["leaf1"][("SCHEDULER", "SLUICE_SCHED_3")]["weight"],
            "7",
        ),
    )
    assert "weight" in (results["leaf1"].reason or "")
    assert results["leaf2"].status == "applied_verified"

    plans = plans_from_switches(fabric, pool, desired)
    (fix,) = plans["leaf1"].ops
    assert (fix.kind, fix.entry_key) == ("change", ("SCHEDULER", "SLUICE_SCHED_3"))
    result = apply_plan_to_switch(pool.session(fabric.targets()["leaf1"]), plans["leaf1"])
    assert result.status == "applied_verified"
    assert_redis_holds(fabric, "leaf1", desired["leaf1"])


def test_progress_reports_every_batch_then_the_result(fabric: Fabric, pool: SessionPool) -> None:
    desired = {"spine2": fabric.desired()["spine2"]}
    n = len(sets_of(plans_from_switches(fabric, pool, desired)["spine2"]))
    events: list[ProgressEvent] = []
    results = run(fabric, pool, desired, progress=events.append)
    # spine2: one event per batch, then the read-back, then the result.
    assert [(e.stage, e.batches_done, e.batches_total) for e in events] == [
        *(("batch_written", i, n) for i in range(1, n + 1)),
        ("verifying", n, n),
        ("finished", n, n),
    ]
    assert events[-1].result == results["spine2"]


def test_changes_and_deletes_of_a_new_intent_version_are_applied_and_verified(
    fabric: Fabric, pool: SessionPool
) -> None:
    first = fabric.desired()
    run(fabric, pool, first)
    # Version 2 drops the analytics class (queue 2): its scheduler and per-queue WRED
    # profiles go, and sluice's fields on the QUEUE entries of queue 2 are removed.
    classes = tuple(c for c in fabric.intent.service_classes if c.name != "analytics")
    fabric.intent = fabric.intent.model_copy(update={"service_classes": classes})
    second = fabric.desired()
    sessions = pool.sessions(fabric.targets().values())
    plans = {}
    for name, config in second.items():
        tables = {t for t, _ in config} | {t for t, _ in first[name]}
        plans[name] = plan_switch(name, config, sessions[name].get_tables(tables), first[name])
    assert all(p.counts["delete"] > 0 for p in plans.values())
    results = apply_fleet(plans, sessions, max_parallel=4, batch_size=BATCH)
    assert {r.status for r in results.values()} == {"applied_verified"}
    for name, vswitch in fabric.switches.items():
        stored = vswitch.config_db()
        sluice_keys = {k for k in stored if k.split("|", 1)[0] in {t for t, _ in first[name]}}
        assert sluice_keys == {f"{t}|{k}" for t, k in as_read_back(second[name])}, name
        assert_redis_holds(fabric, name, second[name])
