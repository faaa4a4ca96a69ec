"""A staged rollout across a mixed fleet: leaf2 speaks OpenConfig (vsonic's origin
``openconfig``, each Set checked against the published openconfig-qos models), the other
three SONiC's CONFIG_DB; state in PostgreSQL, every switch over real gRPC.

What each switch holds is read directly (Redis, the OpenConfig tree), not through the code
under test.
"""

from __future__ import annotations

from typing import Any

from controller.accept import compile_dialects
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.openconfig.entries import entries_from_tree
from controller.services.rollouts import RolloutPolicy
from tests.yang.openconfig_models import entrywise_qos_check
from vsonic.openconfig import OpenConfigTree

from .conftest import OPERATOR, Controller, full_dump, statuses
from .test_reconcile import pass_now
from .test_rollout import second_version

OPENCONFIG = "leaf2"
ALL = ("leaf1", "leaf2", "spine1", "spine2")


def mixed(intent: Intent) -> Intent:
    data: dict[str, Any] = dump_intent(intent)
    for switch in data["switches"]:
        if switch["name"] == OPENCONFIG:
            switch["dialect"] = "openconfig"
    return parse_intent(data)


def test_a_staged_rollout_brings_a_sonic_and_an_openconfig_switch_to_one_intent(
    controller: Controller,
) -> None:
    model = controller.fabric.switches[OPENCONFIG].model
    assert model is not None
    model.openconfig = OpenConfigTree(check=entrywise_qos_check())
    intent = mixed(controller.fabric.intent)
    controller.store_intent(intent)
    policy = RolloutPolicy(None, canary=("leaf2",), batch_size=3, allow_port_flaps=True)
    info = controller.rollouts.start(policy, actor=OPERATOR)
    assert {r.switch: r.batch for r in info.results}["leaf2"] == 0  # the canary goes alone

    controller.runner().run_until_idle()

    done = controller.rollouts.get(info.id)
    assert done.state == "completed"
    assert statuses(done) == dict.fromkeys(ALL, "applied_verified")
    desired = compile_dialects(intent)
    # The OpenConfig switch holds sluice's openconfig-qos entries and no CONFIG_DB of its.
    assert entries_from_tree(model.openconfig.document()) == desired[OPENCONFIG]
    ours = controller.fabric.switches[OPENCONFIG].config_db()
    assert not [key for key in ours if "SLUICE" in key]
    # A SONiC switch of the same rollout holds its CONFIG_DB entries.
    leaf1 = controller.fabric.switches["leaf1"].config_db()
    for (table, key), fields in desired["leaf1"].items():
        assert leaf1.get(f"{table}|{key}") == fields, f"leaf1 {table}|{key}"

    # A reconcile pass finds every switch converged, the OpenConfig one included; a leaf
    # changed behind sluice's back on it is found and put back.
    runs = {r.switch: r.status for r in pass_now(controller)}
    assert runs == dict.fromkeys(ALL, "converged")
    queue = model.openconfig.tree["queues"]["queue"][0]
    queue["config"]["queue-id"] = 0
    runs = {r.switch: r.status for r in pass_now(controller)}
    assert runs[OPENCONFIG] == "corrected"
    assert entries_from_tree(model.openconfig.document()) == desired[OPENCONFIG]

    # A second version (a weight changed, a class removed) and its rollback: both dialects
    # come back to exactly what they held.
    dump_before = full_dump(controller.fabric)
    controller.store_intent(second_version(intent))
    policy = RolloutPolicy(None, batch_size=4, allow_port_flaps=True)
    second = controller.rollouts.start(policy, actor=OPERATOR)
    controller.runner().run_until_idle()
    assert statuses(controller.rollouts.get(second.id)) == dict.fromkeys(ALL, "applied_verified")
    moved = entries_from_tree(model.openconfig.document())
    assert moved == compile_dialects(second_version(intent))[OPENCONFIG]
    assert moved != desired[OPENCONFIG]
    controller.rollouts.rollback(second.id, actor=OPERATOR)
    controller.runner().run_until_idle()
    rolled = controller.rollouts.get(second.id)
    assert statuses(rolled, "rollback") == dict.fromkeys(ALL, "applied_verified")
    assert entries_from_tree(model.openconfig.document()) == desired[OPENCONFIG]
    assert full_dump(controller.fabric) == dump_before
