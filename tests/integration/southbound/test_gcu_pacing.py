"""The southbound against switches that take as long as GCU does, refuse what GCU refuses,
and carry on with a Set after the client gave up (vsonic's GCU behaviour, real gRPC, real
Redis). Times are scaled down: a read deadline of 1 s stands for the old 10 s one."""

from __future__ import annotations

import logging
import time

import pytest
from pydantic import SecretStr

from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.rollout.switches import Converged, converge_switch
from controller.sonic.gcu import GcuPace
from controller.sonic.model import SwitchConfig
from controller.southbound.gnmi import CallPolicy, SessionPool
from controller.southbound.retry import RetryPolicy
from vsonic.gcu import SCOPE_REFUSAL, GcuBehaviour

from .conftest import USERNAME, Fabric

AGENT_TABLES = {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"}
READ_DEADLINE_S = 1.0  # what every RPC got before Sets had their own deadline (scaled)
# GCU's pace scaled down so far that every Set fits its deadline by the estimate: the Set
# deadline these tests give is the one each Set gets.
NEGLIGIBLE = GcuPace(per_set_s=0.0, per_change_s=0.0001, load_margin=1.0)


def access_to(fabric: Fabric, pool: SessionPool, batch_size: int = 100) -> GnmiAccess:
    def resolve(ref: str) -> SecretStr:
        return SecretStr(fabric.password)

    return GnmiAccess(pool, resolve, username=USERNAME, batch_size=batch_size, tls=fabric.tls)


def pool_with(set_deadline_s: float, pace: GcuPace = NEGLIGIBLE) -> SessionPool:
    policy = CallPolicy(
        deadline_s=READ_DEADLINE_S,
        retry=RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05),
        set_deadline_s=set_deadline_s,
        progress_every_s=0.5,
        pace=pace,
    )
    return SessionPool(policy=policy, sleep=time.sleep)


class InMemoryAdoptions:
    """Adoption records kept in memory (``controller/store/adoption_store.py`` keeps them in
    PostgreSQL): these tests are about pacing, not adoption."""

    def __init__(self) -> None:
        self.baselines: dict[str, SwitchConfig] = {}

    def baseline(self, switch: str) -> SwitchConfig | None:
        return self.baselines.get(switch)

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None:
        self.baselines[switch] = baseline

    def release(self, switch: str, by: str) -> None:
        self.baselines.pop(switch, None)


def pace(fabric: Fabric, name: str, gcu: GcuBehaviour) -> None:
    model = fabric.switches[name].model
    assert model is not None
    model.gcu = gcu


def first_rollout(fabric: Fabric, name: str, access: GnmiAccess) -> Converged:
    """Bring the fresh switch ``name`` to the intent. Its QUEUE, BUFFER_QUEUE and
    PORT_QOS_MAP entries are added, which takes each port down and up: allowed."""
    switch = next(s for s in fabric.intent.switches if s.name == name)
    desired = fabric.desired()[name]
    return converge_switch(
        access, switch, desired, {}, allow_port_flaps=True, adoptions=InMemoryAdoptions(), by="test"
    )


def test_a_set_slower_than_the_read_deadline_completes_and_reports_progress(
    fabric: Fabric, caplog: pytest.LogCaptureFixture
) -> None:
    pace(fabric, "spine1", GcuBehaviour(per_set_s=1.5 * READ_DEADLINE_S))
    desired = fabric.desired()["spine1"]
    caplog.set_level(logging.INFO, logger="controller.southbound.gnmi")
    with pool_with(set_deadline_s=10.0) as pool:
        converged = first_rollout(fabric, "spine1", access_to(fabric, pool))
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
    # The switch takes 0.8 s per Set; the client waits 0.4 s, then reads back for up to four
    # Set deadlines more until the switch shows the outcome: applied after the client left.
    pace(fabric, "leaf1", GcuBehaviour(per_set_s=0.8))
    desired = fabric.desired()["leaf1"]
    with pool_with(set_deadline_s=0.4) as pool:
        access = access_to(fabric, pool)
        converged = first_rollout(fabric, "leaf1", access)
        sent = pool.session(fabric.targets()["leaf1"]).rpc_counts["Set"]
    assert converged.result.status == "applied_verified", converged.result.reason
    vswitch = fabric.switches["leaf1"]
    # QoS tables in one Set, the agent's queue entries in another, its global entry (the
    # orders' version) last: each sent once, none resent.
    assert sent == vswitch.sets.count == converged.result.set_requests == 3
    assert vswitch.model is not None
    assert set(vswitch.model.applied.values()) == {1}
    stored = vswitch.config_db()
    assert all(stored.get(f"{t}|{k}") == fields for (t, k), fields in desired.items())


def test_a_set_gcu_takes_over_three_deadlines_to_apply_is_read_back_and_sent_once(
    fabric: Fabric,
) -> None:
    # GCU takes 1.5 s, almost four times the 0.4 s the client gives a Set (a loaded switch
    # took 3x and more). Until now the client read back for two deadlines, resent what was
    # still missing behind the running Set, and reported the switch unreachable although
    # the first Set applied; now it reads back for four and sends each Set once.
    pace(fabric, "leaf1", GcuBehaviour(per_set_s=1.5))
    with pool_with(set_deadline_s=0.4) as pool:
        converged = first_rollout(fabric, "leaf1", access_to(fabric, pool))
    assert converged.result.status == "applied_verified", converged.result.reason
    vswitch = fabric.switches["leaf1"]
    # QoS; the agent's queue entries; its global entry last, once the queues it reads exist
    assert vswitch.sets.count == converged.result.set_requests == 3
    assert vswitch.model is not None
    assert set(vswitch.model.applied.values()) == {1}


def test_a_set_whose_outcome_never_shows_in_time_is_unknown_and_never_sent_again(
    fabric: Fabric,
) -> None:
    # GCU takes 2.5 s; the client gives 0.2 s and reads back for 4 x 0.2 s more: the state is
    # unknown, not unreachable, and nothing is resent while the switch may still apply it.
    pace(fabric, "leaf2", GcuBehaviour(per_set_s=2.5))
    vswitch = fabric.switches["leaf2"]
    assert vswitch.model is not None
    with pool_with(set_deadline_s=0.2) as pool:
        converged = first_rollout(fabric, "leaf2", access_to(fabric, pool))
        result = converged.result
        assert (result.status, result.set_requests, result.ops_written) == ("unknown", 1, 0)
        assert "not sent again" in (result.reason or "")
        assert converged.running is None
        # The switch finishes the Set on its own, once.
        deadline = time.monotonic() + 10
        while not vswitch.model.applied and time.monotonic() < deadline:
            time.sleep(0.1)
    assert vswitch.sets.count == 1
    assert vswitch.model.applied
    assert set(vswitch.model.applied.values()) == {1}


def test_a_leafs_first_rollout_goes_in_sets_that_fit_the_deadline_one_flap_per_port(
    fabric: Fabric, caplog: pytest.LogCaptureFixture
) -> None:
    # GCU at 0.25 s a Set and 0.05 s a change, the client at the same pace with its load
    # margin of 2 and a 3 s Set deadline: at most 25 changes a Set. The leaf's first
    # rollout (79 QoS ops, about 66 changes as one Set: 3.5 s here, 73 s on a real switch)
    # goes in Sets that each finish in time, each port's changes in one of them. The pace is
    # five times the first one this test had (0.05 s, 0.01 s, 0.6 s; the same 25 changes a
    # Set): a Set's margin over its deadline, 1.5 s, is then what a loaded machine's
    # scheduling needs (at load 11 a Set of 0.3 s once outlived 0.6 s).
    pace(fabric, "leaf1", GcuBehaviour(per_set_s=0.25, per_op_s=0.05))
    client = GcuPace(per_set_s=0.25, per_change_s=0.05, load_margin=2.0)
    caplog.set_level(logging.INFO)
    with pool_with(set_deadline_s=3.0, pace=client) as pool:
        converged = first_rollout(fabric, "leaf1", access_to(fabric, pool))
    assert converged.result.status == "applied_verified", converged.result.reason
    assert "reading back" not in caplog.text  # no Set outlived its deadline
    vswitch = fabric.switches["leaf1"]
    assert vswitch.model is not None
    ports = ("Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52")
    assert vswitch.model.port_flaps == dict.fromkeys(ports, 1)
    # The profiles with Ethernet0's block, a Set per other port, the agent's queue entries,
    # its global entry.
    assert vswitch.sets.count == converged.result.set_requests == 6


def test_a_switch_without_the_yang_extension_gets_its_qos_tables_and_is_told_why(
    fabric: Fabric,
) -> None:
    pace(fabric, "leaf2", GcuBehaviour(yang_extension=False))
    desired = fabric.desired()["leaf2"]
    with pool_with(set_deadline_s=10.0) as pool:
        converged = first_rollout(fabric, "leaf2", access_to(fabric, pool))
    result = converged.result
    assert result.status == "failed"
    reason = result.reason or ""
    assert SCOPE_REFUSAL in reason
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
