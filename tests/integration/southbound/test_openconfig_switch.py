"""An OpenConfig switch end to end over real gRPC: vsonic answering origin ``openconfig``
(vsonic/openconfig.py), every Set it takes checked against the published openconfig-qos
models (oc-config-validate's pyangbind bindings, tests/yang/openconfig_models.py: vsonic
ships without them, so the test passes the check in).

The controller's side is the product's: the intent compiled in the switch's dialect
(``controller.accept.compile_dialects``), the session's OpenConfig path scheme, the apply
with read-back, the reconcile pass that finds and repairs drift. What the switch holds is
read from its tree directly, not through gNMI.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from controller.accept import compile_dialects
from controller.errors import SouthboundRejected
from controller.intent.loader import parse_intent
from controller.intent.models import Intent, ReconcileMode
from controller.intent.models import Switch as IntentSwitch
from controller.openconfig.entries import TABLES, entries_from_tree
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.reconcile.apply import ApplyResult, apply_plan_to_switch
from controller.reconcile.loop import Target, reconcile_switch
from controller.sonic.diff import plan_switch
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.southbound.credentials import resolve_secret
from controller.southbound.gnmi import SessionPool, SwitchSession, target_for_switch
from tests.yang.openconfig_models import entrywise_qos_check
from vsonic.db import MemoryStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, RunningServer, start_server
from vsonic.openconfig import OpenConfigTree
from vsonic.switch import Switch, Targets

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
SWITCH = "leaf2"
USERNAME = "admin"
QUEUES, _, CLASSIFIERS, _, PROFILES, _, INTERFACES = (t.table for t in TABLES)


@dataclass
class OpenConfigSwitch:
    model: Switch
    server: RunningServer
    intent: Intent
    password: str

    @property
    def tree(self) -> OpenConfigTree:
        return self.model.openconfig

    @property
    def switch(self) -> IntentSwitch:
        return next(s for s in self.intent.switches if s.name == SWITCH)

    def desired(self) -> SwitchConfig:
        return compile_dialects(self.intent)[SWITCH]

    def resolve(self, ref: str) -> SecretStr:
        return resolve_secret(ref, environ={"SLUICE_GNMI_PASSWORD": self.password})

    def holds(self) -> SwitchConfig:
        """Sluice's entries in the switch's tree, read directly."""
        return entries_from_tree(self.tree.document())


@pytest.fixture(scope="module")
def oc_switch() -> Iterator[OpenConfigSwitch]:
    raw = yaml.safe_load(EXAMPLE.read_text())
    for switch in raw["switches"]:
        if switch["name"] == SWITCH:
            switch["dialect"] = "openconfig"
    password = secrets.token_hex(12)
    model = Switch(SWITCH, MemoryStore(), openconfig=OpenConfigTree(check=entrywise_qos_check()))
    service = GnmiService(Targets([model], fleet=False), Clock(), Credentials(USERNAME, password))
    server = start_server("127.0.0.1:0", service)
    try:
        for switch in raw["switches"]:
            if switch["name"] == SWITCH:
                switch["gnmi"] = {"address": "127.0.0.1", "port": server.port}
        yield OpenConfigSwitch(model, server, parse_intent(raw), password)
    finally:
        server.stop(grace_s=0.2)


@pytest.fixture
def pool() -> Iterator[SessionPool]:
    with SessionPool() as sessions:
        yield sessions


def session_of(oc: OpenConfigSwitch, pool: SessionPool) -> SwitchSession:
    return pool.session(target_for_switch(oc.switch, oc.resolve, username=USERNAME, tls=None))


@dataclass(frozen=True)
class FirstApply:
    """The first apply to the switch, from an empty tree: what it planned and its result,
    and the tree and writes it left."""

    read_before: SwitchConfig
    plan: Plan
    result: ApplyResult
    tree: dict[str, Any]
    writes: tuple[str, ...]


@pytest.fixture(scope="module")
def first_apply(oc_switch: OpenConfigSwitch) -> FirstApply:
    """Applied once per module: every Set the models check costs seconds."""
    oc_switch.tree.tree = {}
    oc_switch.tree.writes.clear()
    desired = oc_switch.desired()
    with SessionPool() as pool:
        session = session_of(oc_switch, pool)
        read_before = session.get_tables(OWNED_TABLES)
        plan = plan_switch(SWITCH, desired, read_before, desired)
        result = apply_plan_to_switch(session, plan)
    tree = copy.deepcopy(oc_switch.tree.tree)
    return FirstApply(read_before, plan, result, tree, tuple(oc_switch.tree.writes))


@pytest.fixture
def converged(
    oc_switch: OpenConfigSwitch, first_apply: FirstApply, pool: SessionPool
) -> SwitchSession:
    """A session to the switch holding what the first apply left."""
    assert first_apply.result.status == "applied_verified", first_apply.result.reason
    oc_switch.tree.tree = copy.deepcopy(first_apply.tree)
    oc_switch.tree.writes.clear()
    return session_of(oc_switch, pool)


def test_apply_writes_each_entry_once_reads_back_and_replans_empty(
    oc_switch: OpenConfigSwitch, first_apply: FirstApply, converged: SwitchSession
) -> None:
    desired = oc_switch.desired()
    assert first_apply.read_before == {}  # no /qos yet: NOT_FOUND reads as nothing
    plan, result = first_apply.plan, first_apply.result
    assert result.status == "applied_verified", result.reason
    assert result.set_requests == 1
    assert oc_switch.holds() == desired
    keys = {t.table: (t.kind, t.name, t.key) for t in TABLES}
    expected = ["update /qos/{}/{}[{}={}]".format(*keys[op.table], op.key) for op in plan.ops]
    assert sorted(first_apply.writes) == sorted(expected)
    assert oc_switch.model.applied == {}
    assert plan_switch(SWITCH, desired, converged.get_tables(OWNED_TABLES), desired).is_empty


def test_drift_behind_sluices_back_is_found_and_repaired(
    oc_switch: OpenConfigSwitch, converged: SwitchSession, pool: SessionPool
) -> None:
    desired = oc_switch.desired()
    qos = oc_switch.tree.tree
    profile = qos["queue-management-profiles"]["queue-management-profile"][0]
    wanted = copy.deepcopy(profile["wred"]["uniform"]["config"])
    profile["wred"]["uniform"]["config"]["min-threshold"] = "1"
    port = qos["interfaces"]["interface"][0]
    port["output"]["scheduler-policy"]["config"]["name"] = "OPERATOR_POLICY"
    # The operator's own queue on the same port: not sluice's, never touched.
    port["output"]["queues"]["queue"].append({"name": "OPS", "config": {"name": "OPS"}})

    access = GnmiAccess(pool, oc_switch.resolve, username=USERNAME, tls=None)
    target = Target(oc_switch.switch, 1, desired)
    run = reconcile_switch(access, target, ReconcileMode.CORRECT, lambda: datetime.now(UTC))
    assert run.status == "corrected", run.error
    drifted = {(d.table, d.key, d.field) for d in run.drift}
    assert (PROFILES, profile["name"], "wred/uniform/config/min-threshold") in drifted
    assert (INTERFACES, port["interface-id"], "output/scheduler-policy/config/name") in drifted
    assert oc_switch.holds() == desired
    # A Set replaces the tree with its checked copy: read it anew.
    qos = oc_switch.tree.tree
    profile = qos["queue-management-profiles"]["queue-management-profile"][0]
    assert profile["wred"]["uniform"]["config"] == wanted
    port = qos["interfaces"]["interface"][0]
    assert {"name": "OPS", "config": {"name": "OPS"}} in port["output"]["queues"]["queue"]
    again = reconcile_switch(access, target, ReconcileMode.CORRECT, lambda: datetime.now(UTC))
    assert again.status == "converged"


def test_the_models_refuse_a_bad_set_and_the_switch_keeps_what_it_had(
    oc_switch: OpenConfigSwitch, converged: SwitchSession
) -> None:
    before = oc_switch.tree.document()
    fields = dict(oc_switch.desired()[(QUEUES, "SLUICE_Q3")])
    broken = Op("change", QUEUES, "SLUICE_Q3", {**fields, "config/queue-id": '"three"'}, fields)
    with pytest.raises(SouthboundRejected, match="openconfig-qos refuses the Set"):
        converged.set([broken])
    assert oc_switch.tree.document() == before
    # Through the apply: the switch's refusal is the result, its own words naming the op.
    result = apply_plan_to_switch(converged, Plan(SWITCH, (broken,)))
    assert (result.status, result.ops_written, result.failed_op) == ("failed", 0, broken)
    assert "/qos/queues/queue[name=SLUICE_Q3]" in (result.reason or "")
    assert "openconfig-qos refuses the Set" in (result.reason or "")
    assert oc_switch.tree.document() == before


def test_a_dropped_class_and_a_released_port_go_and_the_read_back_agrees(
    oc_switch: OpenConfigSwitch, converged: SwitchSession
) -> None:
    before = oc_switch.desired()
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    data["service_classes"] = [c for c in data["service_classes"] if c["queue"] != 2]
    for switch in data["switches"]:
        if switch["name"] == SWITCH:
            switch["dialect"] = "openconfig"
            released = switch["ports"].pop()["name"]
    after = compile_dialects(parse_intent(data))[SWITCH]
    plan = plan_switch(SWITCH, after, converged.get_tables(OWNED_TABLES), before)
    assert {op.kind for op in plan.ops} >= {"change", "delete"}
    result = apply_plan_to_switch(converged, plan)
    assert result.status == "applied_verified", result.reason
    assert oc_switch.holds() == after
    assert (QUEUES, "SLUICE_Q2") not in oc_switch.holds()
    ports = {p["interface-id"]: p for p in oc_switch.tree.tree["interfaces"]["interface"]}
    # The released port's entry and key leaves stay (the port is the operator's); sluice's
    # leaves of it are gone, which ``holds() == after`` above says too.
    assert ports[released]["config"] == {"interface-id": released}
    assert "SLUICE" not in json.dumps(ports[released])
    terms = {
        t["id"]
        for c in oc_switch.tree.tree["classifiers"]["classifier"]
        for t in c["terms"]["term"]
    }
    assert "Q2" not in terms
