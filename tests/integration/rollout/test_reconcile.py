"""The reconciliation loop over real gRPC to vsonic switches, runs and drift in PostgreSQL.

Drift is injected by writing the switch's Redis directly (behind sluice's back), and the
outcome is read from Redis directly too.
"""

from __future__ import annotations

import random
from typing import Any

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.reconcile.loop import Drift
from controller.services.reconcile import ReconcileService, RunInfo
from controller.services.rollouts import RolloutPolicy

from .conftest import OPERATOR, Controller

ALL = ("leaf1", "leaf2", "spine1", "spine2")


def roll_out(controller: Controller, intent: Intent) -> None:
    controller.store_intent(intent)
    controller.rollouts.start(RolloutPolicy(None, batch_size=4), actor=OPERATOR)
    controller.runner().run_until_idle()


def service(controller: Controller) -> ReconcileService:
    return ReconcileService(
        controller.sessions, clock=controller.clock, rand=random.Random(7).random
    )


def static_wred_key(controller: Controller, switch: str) -> str:
    """A WRED profile sluice writes with fixed thresholds (not one the agent moves)."""
    keys = [
        key
        for table, key in controller.fabric.desired()[switch]
        if table == "WRED_PROFILE" and key.startswith("SLUICE_WRED_25G_")
    ]
    return sorted(keys)[0]


def with_reconcile(intent: Intent, **policy: Any) -> Intent:
    data: dict[str, Any] = dump_intent(intent)
    data["fabric"]["reconcile"] = policy
    return parse_intent(data)


def pass_now(controller: Controller) -> list[RunInfo]:
    """One pass over every switch, then the newest run of each (what the worker does for an
    operator's reconcile-now request)."""
    reconciler = service(controller)
    reconciler.loop(controller.access()).run_pass()
    return reconciler.last_runs()


def test_injected_drift_is_detected_within_one_interval_and_corrected(
    controller: Controller,
) -> None:
    intent = with_reconcile(controller.fabric.intent, interval_s=30, jitter_pct=20)
    roll_out(controller, intent)
    reconciler = service(controller)
    loop = reconciler.loop(controller.access())
    first = loop.tick(0.0)
    assert first is not None
    assert {r.switch: r.status for r in first} == dict.fromkeys(ALL, "converged")
    # The next pass is at most one interval plus its jitter away: 30 s x 1.2 = 36 s.
    assert loop.next_at is not None
    assert 30 * 0.8 <= loop.next_at <= 30 * 1.2

    key = static_wred_key(controller, "leaf1")
    redis = controller.fabric.switches["leaf1"].store.client(4)
    wanted = redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold")
    redis.hset(f"WRED_PROFILE|{key}", "green_max_threshold", "999999")
    assert loop.tick(loop.next_at - 0.001) is None  # not due yet: nothing read

    second = loop.tick(loop.next_at)
    assert second is not None
    runs = {r.switch: r for r in second}
    assert runs["leaf1"].status == "corrected"
    assert runs["leaf1"].drift == (
        Drift("WRED_PROFILE", key, "green_max_threshold", wanted, "999999"),
    )
    assert {runs[n].status for n in ("leaf2", "spine1", "spine2")} == {"converged"}
    assert redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold") == wanted

    events = reconciler.drift(limit=10, offset=0).items
    assert [
        (e.switch, e.table, e.key, e.field, e.expected, e.observed, e.action) for e in events
    ] == [("leaf1", "WRED_PROFILE", key, "green_max_threshold", wanted, "999999", "corrected")]
    last = {r.switch: r for r in reconciler.last_runs()}
    assert (last["leaf1"].status, last["leaf1"].drift_count, last["leaf1"].version) == (
        "corrected",
        1,
        1,
    )


def test_alert_mode_records_the_drift_and_leaves_the_switch_alone(controller: Controller) -> None:
    roll_out(controller, with_reconcile(controller.fabric.intent, mode="alert"))
    key = static_wred_key(controller, "leaf2")
    redis = controller.fabric.switches["leaf2"].store.client(4)
    redis.hset(f"WRED_PROFILE|{key}", "green_min_threshold", "1234")
    sets = controller.fabric.switches["leaf2"].sets.count

    runs = {r.switch: r for r in pass_now(controller)}
    assert runs["leaf2"].status == "alerted"
    assert runs["leaf2"].drift_count == 1
    assert redis.hget(f"WRED_PROFILE|{key}", "green_min_threshold") == "1234"
    assert controller.fabric.switches["leaf2"].sets.count == sets
    event = service(controller).drift(limit=5, offset=0, switch="leaf2").items[0]
    assert (event.field, event.observed, event.action) == ("green_min_threshold", "1234", "alerted")


def test_thresholds_the_agent_moves_are_not_drift(controller: Controller) -> None:
    roll_out(controller, controller.fabric.intent)
    redis = controller.fabric.switches["leaf1"].store.client(4)
    for name in ("green_min_threshold", "green_max_threshold"):
        redis.hset("WRED_PROFILE|SLUICE_Q_Ethernet0_3", name, "40000")

    runs = {r.switch: r for r in pass_now(controller)}
    assert runs["leaf1"].status == "converged"
    assert redis.hget("WRED_PROFILE|SLUICE_Q_Ethernet0_3", "green_min_threshold") == "40000"


def test_a_missing_entry_and_a_stray_sluice_entry_are_drift_and_corrected(
    controller: Controller,
) -> None:
    roll_out(controller, controller.fabric.intent)
    redis = controller.fabric.switches["spine1"].store.client(4)
    dscp = redis.hgetall("DSCP_TO_TC_MAP|SLUICE")
    redis.delete("PORT_QOS_MAP|Ethernet0")  # referencing entries first would be refused
    redis.hset("SCHEDULER|SLUICE_SCHED_STRAY", mapping={"type": "DWRR", "weight": "5"})

    loop_runs = {r.switch: r for r in service(controller).loop(controller.access()).run_pass()}
    run = loop_runs["spine1"]
    assert run.status == "corrected"
    stray = {d for d in run.drift if d.key == "SLUICE_SCHED_STRAY"}
    assert stray == {
        Drift("SCHEDULER", "SLUICE_SCHED_STRAY", "type", None, "DWRR"),
        Drift("SCHEDULER", "SLUICE_SCHED_STRAY", "weight", None, "5"),
    }
    missing = {d for d in run.drift if d.table == "PORT_QOS_MAP"}
    desired = controller.fabric.desired()["spine1"][("PORT_QOS_MAP", "Ethernet0")]
    assert missing == {
        Drift("PORT_QOS_MAP", "Ethernet0", name, value, None) for name, value in desired.items()
    }
    assert not redis.exists("SCHEDULER|SLUICE_SCHED_STRAY")
    assert redis.hgetall("PORT_QOS_MAP|Ethernet0") == desired
    assert redis.hgetall("DSCP_TO_TC_MAP|SLUICE") == dscp


def test_an_unreachable_switch_gets_a_run_saying_so(controller: Controller) -> None:
    roll_out(controller, controller.fabric.intent)
    controller.fabric.switches["spine2"].stop()
    runs = {r.switch: r for r in pass_now(controller)}
    assert runs["spine2"].status == "unreachable"
    assert runs["spine2"].error
    assert {runs[n].status for n in ("leaf1", "leaf2", "spine1")} == {"converged"}


def test_the_loop_leaves_switches_alone_while_a_rollout_runs(controller: Controller) -> None:
    roll_out(controller, controller.fabric.intent)
    controller.store_intent(with_reconcile(controller.fabric.intent, interval_s=5))
    info = controller.rollouts.start(RolloutPolicy(None), actor=OPERATOR)
    controller.runner().step(info.id)  # pending -> running
    assert service(controller).loop(controller.access()).run_pass() == []
