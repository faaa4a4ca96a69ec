"""The collector's stream sessions without a server: what they subscribe to on a switch that
lacks a table (sonic-gnmi fails the whole Subscribe for it), when they subscribe again, the
initial values applied maps first, objects the maps name without counters, and the faults
they hand the metrics."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from controller.southbound.faults import Fault, Reason, classify
from controller.southbound.subscribe import (
    AGENT_STATE,
    COUNTERS,
    PG_NAME_MAP,
    PORT_NAME_MAP,
    QUEUE_NAME_MAP,
    AgentStateSession,
    Change,
    CounterSession,
    Notification,
    StreamEnd,
    StreamPolicy,
    SubMode,
    Subscription,
    counters_path,
)
from controller.telemetry.ingest import SwitchHandler
from controller.telemetry.state import QueueId, SwitchTelemetry

S = 1_000_000_000
QUEUES = {"Ethernet0:3": "oid:0x153", "Ethernet4:3": "oid:0x163"}
PORTS = {"Ethernet0": "oid:0x1"}


def _handler() -> SwitchHandler:
    return SwitchHandler(SwitchTelemetry("leaf1", {"Ethernet0": 25e9}, {}), threading.Lock())


def _subs(session: CounterSession | AgentStateSession) -> Sequence[Subscription]:
    return asyncio.run(session.subscriptions(None, None))  # type: ignore[arg-type]


def _absent(database: str, table: str) -> StreamEnd:
    details = f"streamOnChangeSubscription error:  Failed to find {database} {table} <nil> []"
    return StreamEnd("INVALID_ARGUMENT", None, classify("INVALID_ARGUMENT", details))


def _note(ts: int, *changes: tuple[tuple[str, ...], Any]) -> Notification:
    return Notification(ts, tuple(Change(elems, value) for elems, value in changes))


def test_initial_values_are_applied_maps_first_so_no_hash_is_unknown() -> None:
    handler = _handler()
    session = CounterSession(handler, StreamPolicy())
    _subs(session)
    # sonic-gnmi sends each path's initial value in a message of its own, in any order.
    table = {oid: {"SAI_QUEUE_STAT_PACKETS": "10"} for oid in QUEUES.values()}
    assert not session.notification(_note(S, (COUNTERS, table)), synced=False)
    assert not session.notification(_note(S, (QUEUE_NAME_MAP, QUEUES)), synced=False)
    assert not session.notification(_note(S, (PORT_NAME_MAP, PORTS)), synced=False)
    assert handler.telemetry.updates == 0  # nothing applied before the sync
    fault = session.synced()
    telemetry = handler.telemetry
    assert (telemetry.updates, telemetry.unknown_oids) == (2, 0)
    # The port's oid is named but has no counters: reported, not taken for a quiet port.
    assert fault is not None
    assert fault.reason is Reason.EMPTY
    assert session.empty is not None
    assert session.empty.paths == (counters_path("oid:0x1"),)
    assert telemetry.faults["counters"] == fault
    assert telemetry.stream_up


def test_an_object_answered_with_an_empty_hash_has_no_counters() -> None:
    handler = _handler()
    session = CounterSession(handler, StreamPolicy())
    _subs(session)
    table = {"oid:0x153": {"SAI_QUEUE_STAT_PACKETS": "1"}, "oid:0x163": {}, "oid:0x1": {}}
    session.notification(_note(S, (QUEUE_NAME_MAP, QUEUES), (PORT_NAME_MAP, PORTS)), synced=False)
    session.notification(_note(S, (COUNTERS, table)), synced=False)
    session.synced()
    assert session.empty is not None
    assert session.empty.paths == (counters_path("oid:0x163"), counters_path("oid:0x1"))
    assert handler.telemetry.updates == 1  # the empty hashes are no update either
    assert QueueId("Ethernet4", "3") not in handler.telemetry.queues


def test_a_switch_without_counters_is_followed_by_its_maps_until_they_name_objects() -> None:
    handler = _handler()
    session = CounterSession(handler, StreamPolicy())
    assert [s.elems[2] for s in _subs(session)][-1] == "COUNTERS"
    assert session.ended(_absent("COUNTERS_DB", "COUNTERS")) == 0.0  # at once, not a backoff
    assert "counters" not in handler.telemetry.faults  # a state, not a failure
    assert [s.elems for s in _subs(session)] == [QUEUE_NAME_MAP, PORT_NAME_MAP, PG_NAME_MAP]
    session.notification(_note(S, (QUEUE_NAME_MAP, {})), synced=False)
    assert session.synced() is None
    assert not session.notification(_note(2 * S, (PORT_NAME_MAP, {})), synced=True)
    assert session.notification(_note(3 * S, (QUEUE_NAME_MAP, QUEUES)), synced=True)
    assert [s.elems[2] for s in _subs(session)][-1] == "COUNTERS"


def test_maps_that_named_objects_before_the_counters_existed_bring_the_table_back() -> None:
    # A switch that wrote its maps before its first counters (SONiC at boot, or its Redis
    # restarted under the data plane): the maps-only stream syncs with the objects named and
    # then hears nothing, so it subscribes with the table again after the recheck interval.
    handler = _handler()
    session = CounterSession(handler, StreamPolicy(counters_recheck_s=7.0), sleep=_record)
    _subs(session)
    session.ended(_absent("COUNTERS_DB", "COUNTERS"))
    assert [s.elems for s in _subs(session)] == [QUEUE_NAME_MAP, PORT_NAME_MAP, PG_NAME_MAP]
    session.notification(_note(S, (QUEUE_NAME_MAP, QUEUES)), synced=False)
    assert session.synced() is None
    slept.clear()
    asyncio.run(asyncio.wait_for(session.changed(None, None), 1))  # type: ignore[arg-type]
    assert slept == [7.0]
    assert [s.elems[2] for s in _subs(session)][-1] == "COUNTERS"


def test_maps_naming_nothing_keep_the_stream_on_the_maps_alone() -> None:
    handler = _handler()
    session = CounterSession(handler, StreamPolicy(counters_recheck_s=7.0), sleep=_record)
    _subs(session)
    session.ended(_absent("COUNTERS_DB", "COUNTERS"))
    _subs(session)
    slept.clear()

    async def three_rechecks() -> None:
        changed = asyncio.ensure_future(session.changed(None, None))  # type: ignore[arg-type]
        while len(slept) < 3:
            await asyncio.sleep(0)
        assert not changed.done()
        changed.cancel()

    asyncio.run(three_rechecks())
    assert [s.elems for s in _subs(session)] == [QUEUE_NAME_MAP, PORT_NAME_MAP, PG_NAME_MAP]


slept: list[float] = []


async def _record(seconds: float) -> None:
    slept.append(seconds)
    await asyncio.sleep(0)


def test_a_failure_is_the_streams_fault_until_it_syncs_again() -> None:
    handler = _handler()
    session = CounterSession(handler, StreamPolicy())
    refused = classify("UNAUTHENTICATED", "Unauthenticated")
    assert session.ended(StreamEnd("UNAUTHENTICATED", None, refused)) is None  # the backoff
    assert handler.telemetry.faults == {"counters": refused}
    assert not handler.telemetry.stream_up
    _subs(session)
    session.synced()
    assert handler.telemetry.faults == {}


def test_agent_state_is_followed_by_its_heartbeat_key_until_the_table_exists() -> None:
    handler = _handler()
    session = AgentStateSession(handler)
    assert [s.elems for s in _subs(session)] == [AGENT_STATE]
    assert session.ended(_absent("STATE_DB", "SLUICE_AGENT_STATE")) == 0.0
    assert [s.elems for s in _subs(session)] == [(*AGENT_STATE, "global")]
    # sonic-gnmi answers a key that does not exist with {}; the stream waits for it.
    assert not session.notification(_note(S, ((*AGENT_STATE, "global"), {})), synced=False)
    assert session.synced() is None
    heartbeat = {"heartbeat": "1000", "mode": "dynamic", "algorithm": "mqecn"}
    assert session.notification(_note(2 * S, ((*AGENT_STATE, "global"), heartbeat)), synced=True)
    assert handler.telemetry.agent is not None
    assert handler.telemetry.agent.mode == "dynamic"
    assert [s.elems for s in _subs(session)] == [AGENT_STATE]  # every queue's state now
    # A key deleted under a table subscription: sonic-gnmi sends {key: {}} and a table delete.
    threshold = {"Ethernet0|3": {"threshold_bytes": "5000", "basis": "computed"}}
    session.notification(_note(3 * S, (AGENT_STATE, threshold)), synced=True)
    assert QueueId("Ethernet0", "3") in handler.telemetry.agent_queues
    gone = _note(4 * S, (AGENT_STATE, {"Ethernet0|3": {}}), (AGENT_STATE, None))
    assert not session.notification(gone, synced=True)
    assert handler.telemetry.agent_queues == {}
    assert handler.telemetry.agent is not None  # the table delete took only its key


def test_agent_state_streams_in_the_policys_mode_table_and_heartbeat_key_alike() -> None:
    sampled = StreamPolicy(agent_state_mode=SubMode.SAMPLE, sample_interval_s=2.0)
    session = AgentStateSession(_handler(), sampled)
    assert [(s.elems, s.mode, s.sample_interval_s) for s in _subs(session)] == [
        (AGENT_STATE, SubMode.SAMPLE, 2.0)
    ]
    session.ended(_absent("STATE_DB", "SLUICE_AGENT_STATE"))
    assert [(s.elems, s.mode, s.sample_interval_s) for s in _subs(session)] == [
        ((*AGENT_STATE, "global"), SubMode.SAMPLE, 2.0)
    ]
    # The counters' mode is not the agent's: ON_CHANGE unless the policy says otherwise.
    counters_sampled = StreamPolicy(counter_mode=SubMode.SAMPLE)
    (sub,) = _subs(AgentStateSession(_handler(), counters_sampled))
    assert (sub.mode, sub.sample_interval_s) == (SubMode.ON_CHANGE, 0.0)


def test_other_failures_of_the_agent_stream_are_its_own_fault() -> None:
    handler = _handler()
    session = AgentStateSession(handler)
    conflict = Fault(Reason.REFUSED, "NOT_FOUND: Target conflict in path", "NOT_FOUND")
    assert session.ended(StreamEnd("NOT_FOUND", None, conflict)) is None
    assert handler.telemetry.faults == {"agent_state": conflict}
