"""The southbound against switches that take as long as GCU does, refuse what GCU refuses,
and carry on with a Set after the client gave up (vsonic's GCU behaviour, real gRPC, real
Redis). Times are scaled down: a read deadline of 1 s stands for the old 10 s one."""

from __future__ import annotations

import logging
import time

import pytest
from pydantic import SecretStr

from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.rollout.switches import converge_switch
from controller.southbound.gnmi import CallPolicy, SessionPool
from controller.southbound.retry import RetryPolicy
from vsonic.gcu import NO_YANG_MODEL, GcuBehaviour

from .conftest import USERNAME, Fabric

AGENT_TABLES = {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"}
READ_DEADLINE_S = 1.0  # what every RPC got before Sets had their own deadline (scaled)


def access_to(fabric: Fabric, pool: SessionPool, batch_size: int = 100) -> GnmiAccess:
    def resolve(ref: str) -> SecretStr:
        return SecretStr(fabric.password)

    return GnmiAccess(pool, resolve, username=USERNAME, batch_size=batch_size, tls=fabric.tls)


def pool_with(set_deadline_s: float) -> SessionPool:
    policy = CallPolicy(
        deadline_s=READ_DEADLINE_S,
        retry=RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05),
        set_deadline_s=set_deadline_s,
        progress_every_s=0.5,
    )
    return SessionPool(policy=policy, sleep=time.sleep)


def pace(fabric: Fabric, name: str, gcu: GcuBehaviour) -> None:
    model = fabric.switches[name].model
    assert model is not None
    model.gcu = gcu


def test_a_set_slower_than_the_read_deadline_completes_and_reports_progress(
    fabric: Fabric, caplog: pytest.LogCaptureFixture
) -> None:
    pace(fabric, "spine1", GcuBehaviour(per_set_s=1.5 * READ_DEADLINE_S))
    switch = next(s for s in fabric.intent.switches if s.name == "spine1")
    desired = fabric.desired()["spine1"]
    caplog.set_level(logging.INFO, logger="controller.southbound.gnmi")
    with pool_with(set_deadline_s=10.0) as pool:
        converged = converge_switch(access_to(fabric, pool), switch, desired, {})
    assert converged.result.status == "applied_verified"
    assert converged.running is not None
    assert {k: v for k, v in converged.running.items() if k in desired} == desired
    assert "still running after" in caplog.text
    model = fabric.switches["spine1"].model
    assert model is not None
    assert set(model.applied.values()) == {1}


def test_a_set_the_client_gave_up_on_is_not_resent_and_each_op_is_applied_once(
    fabric: Fabric,
) -> None:
    # The switch takes 0.8 s per Set; the client waits 0.4 s, then reads back for up to two
    # Set deadlines more until the switch shows the outcome: applied after the client left.
    pace(fabric, "leaf1", GcuBehaviour(per_set_s=0.8))
    switch = next(s for s in fabric.intent.switches if s.name == "leaf1")
    desired = fabric.desired()["leaf1"]
    with pool_with(set_deadline_s=0.4) as pool:
        access = access_to(fabric, pool)
        converged = converge_switch(access, switch, desired, {})
        session = access.session(switch)
        sent = session.rpc_counts["Set"]
    assert converged.result.status == "applied_verified", converged.result.reason
    vswitch = fabric.switches["leaf1"]
    # QoS tables in one Set, the agent's queue entries in another, its global entry (the
    # orders' version) last: each sent once, none resent.
    assert sent == vswitch.sets.count == converged.result.set_requests == 3
    assert vswitch.model is not None
    assert set(vswitch.model.applied.values()) == {1}
    stored = vswitch.config_db()
    assert all(stored.get(f"{t}|{k}") == fields for (t, k), fields in desired.items())


def test_a_switch_without_the_yang_extension_gets_its_qos_tables_and_is_told_why(
    fabric: Fabric,
) -> None:
    pace(fabric, "leaf2", GcuBehaviour(yang_extension=False))
    switch = next(s for s in fabric.intent.switches if s.name == "leaf2")
    desired = fabric.desired()["leaf2"]
    with pool_with(set_deadline_s=10.0) as pool:
        converged = converge_switch(access_to(fabric, pool), switch, desired, {})
    result = converged.result
    assert result.status == "failed"
    reason = result.reason or ""
    assert NO_YANG_MODEL in reason
    assert "SLUICE_AGENT, SLUICE_AGENT_QUEUE" in reason
    assert "sonic-sluice-agent.yang" in reason
    assert "/usr/local/yang-models" in reason
    assert result.failed_op is not None
    assert result.failed_op.table in AGENT_TABLES
    stored = fabric.switches["leaf2"].config_db()
    qos = {k: v for k, v in desired.items() if k[0] not in AGENT_TABLES}
    assert qos
    assert all(stored.get(f"{t}|{k}") == fields for (t, k), fields in qos.items())
    assert not any(key.split("|")[0] in AGENT_TABLES for key in stored)
    assert result.ops_written == len(qos)


def test_a_fresh_switch_is_read_in_one_get_whatever_tables_it_holds(fabric: Fabric) -> None:
    vswitch = fabric.switches["spine2"]
    with pool_with(set_deadline_s=10.0) as pool:
        session = pool.session(fabric.targets()["spine2"])
        assert session.get_tables(OWNED_TABLES) == {
            k: v for k, v in _stored_config(fabric, "spine2").items() if k[0] in OWNED_TABLES
        }
    assert vswitch.gets.count == 1


def _stored_config(fabric: Fabric, name: str) -> dict[tuple[str, str], dict[str, str]]:
    """CONFIG_DB straight from Redis, keyed (table, key)."""
    config: dict[tuple[str, str], dict[str, str]] = {}
    for key, fields in fabric.switches[name].config_db().items():
        table, _, entry = key.partition("|")
        config[(table, entry)] = fields
    return config
