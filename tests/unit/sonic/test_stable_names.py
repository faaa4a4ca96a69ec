"""Profiles are named by what they are for, so a threshold, lambda or weight change is a field
change on the same profile and never repoints a queue (a repoint takes the port down on a
SONiC switch, controller/sonic/gcu.py); only a change of the intent's structure does."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from controller.intent.loader import dump_intent, load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import Plan, SwitchConfig

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
# sonic-wred-profile.yang: the profile name.
WRED_NAME = re.compile(r"[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}")
PORT_CRITICAL = {"QUEUE", "BUFFER_QUEUE", "PORT_QOS_MAP"}
IN_PLACE = {"WRED_PROFILE", "SCHEDULER", "BUFFER_PROFILE"}
AGENT_TABLES = {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"}


def example() -> dict[str, Any]:
    return dump_intent(load_intent_file(EXAMPLE))


def service_class(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in data["service_classes"] if c["name"] == name)


def leaf1(data: dict[str, Any] | Intent) -> SwitchConfig:
    intent = data if isinstance(data, Intent) else parse_intent(data)
    return compile_fleet(intent)["leaf1"]


def plan_between(before: SwitchConfig, after: SwitchConfig) -> Plan:
    """What a rollout of ``after`` writes on a switch that runs ``before``."""
    return plan_switch("leaf1", after, before, before)


def rpc_lambda(data: dict[str, Any]) -> None:
    service_class(data, "rpc")["ecn_lambda"] = 0.8  # standard ECN, strict, with a PIAS stage


def storage_weight(data: dict[str, Any]) -> None:
    service_class(data, "storage")["scheduling"]["weight"] = 60


def tuned_weights(data: dict[str, Any]) -> None:
    # What the demo's tuner proposes: the tenants' DWRR weights follow demand.
    service_class(data, "storage")["scheduling"]["weight"] = 60
    service_class(data, "analytics")["scheduling"]["weight"] = 25
    service_class(data, "best-effort")["scheduling"]["weight"] = 15


def fabric_lambda(data: dict[str, Any]) -> None:
    data["fabric"]["ecn_lambda"] = 0.08  # the demo's bad config: every K, and dynamic_th


def best_effort_to_standard(data: dict[str, Any]) -> None:
    service_class(data, "best-effort")["ecn"] = "standard"  # both static: same profile


@pytest.mark.parametrize(
    "change", [rpc_lambda, storage_weight, tuned_weights, fabric_lambda, best_effort_to_standard]
)
def test_a_threshold_lambda_or_weight_change_is_made_in_place(change: Any) -> None:
    before = leaf1(example())
    data = example()
    change(data)
    after = leaf1(data)
    plan = plan_between(before, after)
    qos = [op for op in plan.ops if op.table not in AGENT_TABLES]
    assert qos, "the change reaches the switch"
    # Same names: every entry the new version wants is one the switch already has.
    assert set(after) == set(before)
    assert {op.kind for op in qos} == {"change"}
    assert {op.table for op in qos} <= IN_PLACE
    assert not any(op.table in PORT_CRITICAL for op in plan.ops)
    assert plan.port_flaps == ()
    assert plan.ports_down == ()


def test_a_lambda_change_moves_the_thresholds_of_the_profiles_the_queues_already_use() -> None:
    before = leaf1(example())
    data = example()
    rpc_lambda(data)
    plan = plan_between(before, leaf1(data))
    moved = {op.key for op in plan.ops if op.table == "WRED_PROFILE"}
    # rpc (queue 6) and its PIAS stage (queue 5), on each of leaf1's two port speeds.
    assert moved == {f"SLUICE_WRED_{s}G_Q{q}" for s in (25, 100) for q in (5, 6)}
    used = {before[("QUEUE", f"Ethernet{p}|{q}")]["wred_profile"] for p in (0, 4) for q in (5, 6)}
    assert used == {"SLUICE_WRED_25G_Q5", "SLUICE_WRED_25G_Q6"}
    # K = 25 Gb/s x 40 us x 0.8 = 100 000 B (was 125 000 B at the fabric's lambda 1).
    op = next(op for op in plan.ops if op.key == "SLUICE_WRED_25G_Q6")
    assert (op.old_fields["green_max_threshold"], op.fields["green_max_threshold"]) == (
        "125000",
        "100000",
    )


def test_names_stay_within_sonics_limits_and_carry_the_prefix() -> None:
    config = leaf1(example())
    for table in ("WRED_PROFILE", "BUFFER_PROFILE", "SCHEDULER"):
        names = [key for t, key in config if t == table]
        assert names
        for name in names:
            assert WRED_NAME.fullmatch(name), name
            assert name.startswith("SLUICE_"), name
    # One static profile per port speed and static queue, one buffer profile per port group.
    wred = sorted(key for t, key in config if t == "WRED_PROFILE" and "_WRED_" in key)
    assert wred == sorted(f"SLUICE_WRED_{s}G_Q{q}" for s in (25, 100) for q in (1, 5, 6))
    buffers = [key for t, key in config if t == "BUFFER_PROFILE"]
    assert len(buffers) == 2
    assert {name.split("_")[2] for name in buffers} == {"25G", "100G"}


def test_a_structural_change_repoints_and_the_plan_names_the_ports() -> None:
    before = leaf1(example())
    data = example()
    data["fabric"]["egress_pool"] = "egress_lossless_pool"  # a profile in use keeps its pool
    plan = plan_between(before, leaf1(data))
    repointed = [op for op in plan.ops if op.table == "BUFFER_QUEUE"]
    assert len(repointed) == 4 * 6  # every sluice queue of leaf1's four ports
    assert plan.ports_down == ("Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52")
    flap = plan.port_flaps[0]
    assert (flap.port, flap.table, flap.key) == ("Ethernet0", "BUFFER_QUEUE", "Ethernet0|1")
    old = before[("BUFFER_QUEUE", "Ethernet0|1")]["profile"]
    assert old in flap.reason
    assert "takes 4 port(s) down" in plan.summary()


# --- the upgrade path --------------------------------------------------------------------------


def _digest(fields: dict[str, str]) -> str:
    canonical = ";".join(f"{k}={fields[k]}" for k in sorted(fields))
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def content_named(config: SwitchConfig) -> SwitchConfig:
    """``config`` as sluice named it before stable names: a static WRED profile
    ``SLUICE_WRED_<speed>G_<digest of its fields>`` (equal values shared one profile), a
    buffer profile ``SLUICE_BUF_<digest of its fields>``, the queues pointing at those."""
    renamed: dict[str, str] = {}
    for (table, key), fields in config.items():
        if table == "WRED_PROFILE" and key.startswith("SLUICE_WRED_"):
            speed = key.split("_")[2]
            renamed[key] = f"SLUICE_WRED_{speed}_{_digest(fields)}"
        elif table == "BUFFER_PROFILE":
            renamed[key] = f"SLUICE_BUF_{_digest(fields)}"
    old: SwitchConfig = {}
    for (table, key), fields in config.items():
        old[(table, renamed.get(key, key))] = {f: renamed.get(v, v) for f, v in fields.items()}
    return old


def test_a_switch_on_content_named_profiles_is_migrated_by_one_plan() -> None:
    after = leaf1(example())
    running = content_named(after)
    assert set(running) != set(after)
    plan = plan_between(running, after)
    at = {(op.kind, op.table, op.key): i for i, op in enumerate(plan.ops)}
    repoints = [op for op in plan.ops if op.table in PORT_CRITICAL]
    # Each new profile is added before a queue is repointed to it, and the old profiles go
    # after the last repoint.
    for op in repoints:
        assert op.kind == "change"
        for field, name in op.fields.items():
            table = "BUFFER_PROFILE" if field == "profile" else "WRED_PROFILE"
            if name != op.old_fields.get(field):
                assert at[("add", table, name)] < at[("change", op.table, op.key)]
    deleted = [op for op in plan.ops if op.kind == "delete"]
    assert {op.table for op in deleted} == {"WRED_PROFILE", "BUFFER_PROFILE"}
    assert min(at[("delete", op.table, op.key)] for op in deleted) > max(
        at[("change", op.table, op.key)] for op in repoints
    )
    assert plan.ports_down == ("Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52")
    assert all("SLUICE_" in flap.reason for flap in plan.port_flaps)
    migrated = apply_plan(running, plan)
    assert plan_switch("leaf1", after, migrated, after).ops == ()
    # ... and from then on, tuning never repoints again.
    data = example()
    tuned_weights(data)
    rpc_lambda(data)
    assert plan_between(migrated, leaf1(data)).port_flaps == ()
