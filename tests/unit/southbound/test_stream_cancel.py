"""A supervised stream stops when its task is cancelled, even where the gRPC layer under it
answers the cancel with an ``RpcError`` (status CANCELLED) rather than ``CancelledError``:
the drift watch's and the collector's shutdown cancel their streams and wait for them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pydantic import SecretStr

from controller.reconcile import watch
from controller.southbound.faults import Fault
from controller.southbound.gnmi import GnmiTarget
from controller.southbound.retry import RetryPolicy
from controller.southbound.subscribe import (
    Notification,
    StreamEnd,
    Subscription,
    SupervisedStream,
    never,
)

TARGET = GnmiTarget("leaf1", "127.0.0.1", 9, "admin", SecretStr("x"))


async def wait_until_cancelled_then_rpc_error() -> None:
    """Waits until cancelled, then raises what grpc.aio can raise for a call cancelled under
    a cancelled task: an RpcError with status CANCELLED, not CancelledError."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        empty = grpc.aio.Metadata()
        raise grpc.aio.AioRpcError(grpc.StatusCode.CANCELLED, empty, empty, "cancelled") from None


class CancelAnsweredWithRpcError:
    """A named fake of the session: its Subscribe waits until cancelled, then raises what
    grpc.aio can raise for a call cancelled under it."""

    kind = "test"

    def __init__(self) -> None:
        self.subscribes = 0

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        self.subscribes += 1
        await wait_until_cancelled_then_rpc_error()
        return ()

    def synced(self) -> Fault | None:
        return None

    def notification(self, note: Notification, *, synced: bool) -> bool:
        return False

    def ended(self, end: StreamEnd) -> float | None:
        return 0.0

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        await never()


def test_a_cancel_the_grpc_layer_turns_into_an_rpc_error_still_stops_the_stream() -> None:
    async def scenario() -> tuple[bool, int]:
        session = CancelAnsweredWithRpcError()
        stream = SupervisedStream(TARGET, None, session, RetryPolicy(), rand=lambda: 0.5)
        task = asyncio.create_task(stream.run())
        while session.subscribes == 0:
            await asyncio.sleep(0)
        task.cancel()
        # a hang guard, not a timing: without the fix the stream subscribes again for ever
        done, _ = await asyncio.wait({task}, timeout=30)
        stopped = task in done and task.cancelled()
        if not stopped:
            task.cancel()
        return stopped, session.subscribes

    stopped, subscribes = asyncio.run(scenario())
    assert stopped, f"the stream went on after its cancel ({subscribes} Subscribes)"
    assert subscribes == 1


def test_the_drift_watchs_probe_for_absent_tables_stops_when_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The watch's probe for tables a switch lacked loops on any RpcError (the stream notices
    # a switch that went away); a cancel that grpc.aio answers with CANCELLED must end it, or
    # the watcher's close waits for it (WatcherThread.close's 60 s timeout in the drift tests).
    probing = asyncio.Event()

    async def cancel_answered_with_rpc_error(*_: Any) -> frozenset[str]:
        probing.set()
        await wait_until_cancelled_then_rpc_error()
        return frozenset()

    monkeypatch.setattr(watch, "database_tables", cancel_answered_with_rpc_error)
    policy = watch.WatchPolicy(appear_probe_s=0.001)
    switch = watch.SwitchWatch("leaf1", watch.Debouncer(0.1, lambda _s, _t: None), policy)
    switch.absent = frozenset({"WRED_PROFILE"})

    async def cancel_the_probe() -> None:
        probe = asyncio.ensure_future(switch.changed(None, TARGET))
        await probing.wait()
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(probe, 5)

    asyncio.run(cancel_the_probe())


def test_the_drift_watchs_probe_stops_when_cancelled_as_a_recheck_arrives() -> None:
    # The worker asks for a recheck after each write (`recheck`): a cancel in the same turn of
    # the loop as that wake-up must still end the probe. Python 3.11's asyncio.wait_for
    # returns the awaited result when it is already done as the cancel lands, so the cancel
    # was lost and the probe waited on (the drift test's 60 s close in the run of 1716724).
    policy = watch.WatchPolicy(appear_probe_s=3600)
    switch = watch.SwitchWatch("leaf1", watch.Debouncer(0.1, lambda _s, _t: None), policy)

    async def cancel_as_the_recheck_arrives() -> None:
        probe = asyncio.ensure_future(switch.changed(None, TARGET))
        await asyncio.sleep(0)  # the probe waits for a recheck
        switch.recheck()
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(probe, 5)

    asyncio.run(cancel_as_the_recheck_arrives())
