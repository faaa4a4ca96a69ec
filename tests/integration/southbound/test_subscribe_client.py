"""The Subscribe client over real gRPC against a fleet vsonic (in-memory switches): ONCE,
POLL, and STREAM ON_CHANGE driven by the fleet store's change log, each switch picked by the
prefix target on one shared channel."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from pydantic import SecretStr

from controller.southbound.faults import Fault, Reason
from controller.southbound.gnmi import GnmiTarget, open_channel, session_tls
from controller.southbound.retry import RetryPolicy
from controller.southbound.subscribe import (
    AGENT_STATE,
    QUEUE_NAME_MAP,
    SYNC,
    CounterSession,
    ListMode,
    Notification,
    StreamEnd,
    StreamPolicy,
    Subscription,
    SupervisedStream,
    counters_path,
    never,
    read_once,
    subscribe,
)
from controller.telemetry.ingest import SwitchHandler
from controller.telemetry.state import SwitchTelemetry
from vsonic.db import COUNTERS_DB, STATE_DB, Store
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.redis_process import free_port
from vsonic.seed import default_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PASSWORD = "subscribe-client-test"


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[tuple[RunningServer, GnmiService]]:
    service = GnmiService(
        fleet_targets(["rack0", "rack1"], default_ports(2)), Clock(), Credentials("admin", PASSWORD)
    )
    running = start_server("127.0.0.1:0", service, switch_tls)
    try:
        yield running, service
    finally:
        running.stop(grace_s=0.2)


@pytest.fixture
def target(switch_tls: TlsFiles) -> Callable[[int, str], GnmiTarget]:
    """A switch of the fleet server on ``port`` as the client reaches it, over TLS."""
    tls = session_tls(insecure=False, ca=switch_tls.cert)

    def make(port: int, name: str) -> GnmiTarget:
        secret = SecretStr(PASSWORD)
        return GnmiTarget(name, "127.0.0.1", port, "admin", secret, tls=tls, prefix_target=name)

    return make


def _store(service: GnmiService, name: str) -> Store:
    return service._targets.resolve(name).store


def test_once_poll_and_on_change_on_one_shared_channel(
    fleet: tuple[RunningServer, GnmiService], target: Callable[[int, str], GnmiTarget]
) -> None:
    running, service = fleet
    rack0, rack1 = target(running.port, "rack0"), target(running.port, "rack1")
    store = _store(service, "rack1")

    async def scenario() -> None:
        channel = open_channel(rack0, aio=True)
        try:
            maps = await read_once(channel, rack0, [QUEUE_NAME_MAP], deadline_s=10)
            # 2 ports x 8 queues, named as SONiC names them.
            assert sorted(maps[QUEUE_NAME_MAP])[:2] == ["Ethernet0:0", "Ethernet0:1"]
            assert len(maps[QUEUE_NAME_MAP]) == 16

            polls: asyncio.Queue[bool] = asyncio.Queue()

            async def poll_requests() -> AsyncIterator[None]:
                while await polls.get():
                    yield None

            state = Subscription((*AGENT_STATE, "global"))
            polled = subscribe(channel, rack1, [state], ListMode.POLL, polls=poll_requests())
            assert await anext(polled) is SYNC  # nothing there yet
            store.write_atomically(STATE_DB, {"SLUICE_AGENT_STATE|global": {"mode": "dynamic"}})
            polls.put_nowait(True)
            note = await anext(polled)
            assert note.changes[0].value == {"mode": "dynamic"}
            assert await anext(polled) is SYNC
            await polled.aclose()

            stream = subscribe(channel, rack1, [Subscription(AGENT_STATE)])
            initial = await anext(stream)
            assert initial.changes[0].value == {"global": {"mode": "dynamic"}}
            assert await anext(stream) is SYNC
            # rack0's write is not rack1's business; rack1's own write arrives at once.
            _store(service, "rack0").write_atomically(
                STATE_DB, {"SLUICE_AGENT_STATE|global": {"mode": "fallback"}}
            )
            store.write_atomically(STATE_DB, {"SLUICE_AGENT_STATE|global": {"mode": "stopped"}})
            change = await asyncio.wait_for(anext(stream), 10)
            # As sonic-gnmi sends it: the written entry, keyed, at the table path.
            assert [(c.elems[-1], c.value) for c in change.changes] == [
                ("SLUICE_AGENT_STATE", {"global": {"mode": "stopped"}})
            ]
            await stream.aclose()
        finally:
            await channel.close()

    asyncio.run(scenario())


GONE_OID = "oid:0x1000000deadbeef"


def test_an_object_the_maps_name_without_counters_is_an_error_not_silence(
    fleet: tuple[RunningServer, GnmiService], target: Callable[[int, str], GnmiTarget]
) -> None:
    """The maps name a queue whose counters the switch does not hold (a stale map): the
    stream reports it at its sync, and the others' counters arrive regardless."""
    running, service = fleet
    store = _store(service, "rack0")
    queues = store.read_hash(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP") or {}
    store.write_atomically(
        COUNTERS_DB, {"COUNTERS_QUEUE_NAME_MAP": {**queues, "Ethernet0:9": GONE_OID}}
    )
    handler = SwitchHandler(SwitchTelemetry("rack0", {}, {}), threading.Lock())
    session = CounterSession(handler, StreamPolicy())

    async def scenario() -> SupervisedStream:
        channel = open_channel(target(running.port, "rack0"), aio=True)
        stream = SupervisedStream(
            target(running.port, "rack0"), channel, session, StreamPolicy().retry, rand=lambda: 0.5
        )
        task = asyncio.create_task(stream.run())
        try:
            while not handler.telemetry.stream_up:
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await channel.close()
        return stream

    stream = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert session.empty is not None
    assert session.empty.paths == (counters_path(GONE_OID),)
    assert GONE_OID in str(session.empty)
    assert stream.last_error == "EmptySubscription"
    assert handler.telemetry.faults["counters"].reason is Reason.EMPTY
    # 2 ports x 8 queues and both ports delivered their counters, each found by its map.
    assert handler.telemetry.updates == 18
    assert handler.telemetry.unknown_oids == 0


class _RecordingSession:
    """A session that subscribes the queue map, records how each Subscribe ended and answers
    the wait ``waits`` lists (None: the supervisor's backoff); with ``resubscribe`` each first
    notification asks for a new Subscribe, as a changed name map does."""

    kind = "recording"

    def __init__(self, waits: list[float | None], *, resubscribe: bool = False) -> None:
        self.ends: list[StreamEnd] = []
        self._waits = iter(waits)
        self._resubscribe = resubscribe

    async def subscriptions(self, channel: object, target: GnmiTarget) -> list[Subscription]:
        return [Subscription(QUEUE_NAME_MAP)]

    def synced(self) -> Fault | None:
        return None

    def notification(self, note: Notification, *, synced: bool) -> bool:
        return self._resubscribe

    def ended(self, end: StreamEnd) -> float | None:
        self.ends.append(end)
        return next(self._waits)

    async def changed(self, channel: object, target: GnmiTarget) -> None:
        await never()


def _supervise(
    target: GnmiTarget, session: _RecordingSession, retry: RetryPolicy, rounds: int
) -> tuple[SupervisedStream, list[float]]:
    """Runs the stream until it has waited ``rounds`` times; its stream and the waits."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == rounds:
            raise asyncio.CancelledError  # the way a collector stops a stream

    async def scenario() -> SupervisedStream:
        channel = open_channel(target, aio=True)
        stream = SupervisedStream(target, channel, session, retry, rand=lambda: 0.0, sleep=sleep)
        try:
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(stream.run(), 60)
        finally:
            await channel.close()
        return stream

    return asyncio.run(scenario()), waits


RETRY = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)  # with rand 0: waits of half the step


def test_a_supervised_stream_to_a_gone_switch_backs_off_further_and_names_the_status(
    target: Callable[[int, str], GnmiTarget],
) -> None:
    session = _RecordingSession([None, None, 30.0, None])
    gone = target(free_port(), "rack0")  # nobody listens there
    stream, waits = _supervise(gone, session, RETRY, rounds=4)
    # Steps 2, 4 s; the session's own wait (a switch that refuses, say) leaves the backoff
    # where it was; then 8 s.
    assert waits == [1.0, 2.0, 30.0, 4.0]
    assert [end.error for end in session.ends] == ["UNAVAILABLE"] * 4
    assert stream.failures == 4
    assert stream.last_error == "UNAVAILABLE"


def test_a_failure_retried_is_logged_once_with_the_switch_the_paths_and_the_cause(
    target: Callable[[int, str], GnmiTarget], caplog: pytest.LogCaptureFixture
) -> None:
    gone = target(free_port(), "rack0")
    with caplog.at_level(logging.INFO, logger="controller.southbound.subscribe"):
        stream, _ = _supervise(gone, _RecordingSession([None] * 5), RETRY, rounds=5)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines  # five failures, one line
    assert lines[0].startswith(
        "rack0: recording stream (COUNTERS_DB/localhost/COUNTERS_QUEUE_NAME_MAP): unreachable: "
    )
    assert "Connection refused" in lines[0]
    assert stream.fault is not None
    assert stream.fault.reason is Reason.UNREACHABLE


def test_a_supervised_stream_that_delivered_starts_its_backoff_again(
    fleet: tuple[RunningServer, GnmiService], target: Callable[[int, str], GnmiTarget]
) -> None:
    running, _ = fleet
    session = _RecordingSession([None, None, None], resubscribe=True)
    stream, waits = _supervise(target(running.port, "rack1"), session, RETRY, rounds=3)
    assert waits == [0.5, 0.5, 0.5]  # the first step each time: nothing failed
    assert session.ends == [StreamEnd(None)] * 3
    assert (stream.failures, stream.last_error) == (0, None)
