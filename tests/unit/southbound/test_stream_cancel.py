"""A supervised stream stops when its task is cancelled, even where the gRPC layer under it
answers the cancel with an ``RpcError`` (status CANCELLED) rather than ``CancelledError``:
the drift watch's and the collector's shutdown cancel their streams and wait for them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc  # type: ignore[import-untyped]
from pydantic import SecretStr

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


class CancelAnsweredWithRpcError:
    """A named fake of the session: its Subscribe waits until cancelled, then raises what
    grpc.aio can raise for a call cancelled under it."""

    kind = "test"

    def __init__(self) -> None:
        self.subscribes = 0

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        self.subscribes += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            empty = grpc.aio.Metadata()
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.CANCELLED, empty, empty, "cancelled"
            ) from None
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
