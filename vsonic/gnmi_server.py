"""The gNMI server of the virtual switch: grpcio with pygnmi's generated servicer.

It answers origin ``sonic-db`` the way sonic-gnmi's MixedDbClient does
(sonic-gnmi gnmi_server/server.go, sonic_data_client/mixed_db_client.go): Capabilities
advertises JSON, JSON_IETF and PROTO; Get reads a table, an entry or a field (or the whole
CONFIG_DB), with sonic-gnmi's missing-table
rule (``Switch.read_for_get``); Set takes JSON_IETF values only, is all-or-nothing per
request, runs as GCU would (``vsonic/gcu.py``) and is refused as UNKNOWN (``vsonic/answers.py``);
Subscribe serves STREAM (SAMPLE at 1 s minimum, ON_CHANGE), ONCE
and POLL and refuses TARGET_DEFINED. Username and password travel as gRPC metadata, checked
on every call; TLS is optional.

Time (wall clock for timestamps, monotonic for schedules) and the stores are passed in; the
server binds the address it is given and stops when the shutdown event is set.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from vsonic.answers import PROTO, check_get_encoding, get_value, set_errors_as_status
from vsonic.errors import InvalidRequestError, VsonicError
from vsonic.gnmi_codec import (
    JSON,
    JSON_IETF,
    db_path,
    decode_ietf,
    errors_as_status,
    notification,
    status_for,
    typed_json_text,
)
from vsonic.paths import ORIGIN
from vsonic.setops import OpKind, SetOp
from vsonic.subscribe import SubscribeSession, Timing
from vsonic.switch import Targets

GNMI_VERSION = "0.8.0"  # the proto revision pygnmi 0.8.15 ships (pygnmi.spec.v080)


@dataclass(frozen=True)
class Clock:
    wall_ns: Callable[[], int] = time.time_ns
    monotonic: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def matches(self, username: str, password: str) -> bool:
        # Constant-time compares: a wrong password takes as long as a nearly right one.
        user_ok = hmac.compare_digest(username.encode(), self.username.encode())
        pass_ok = hmac.compare_digest(password.encode(), self.password.encode())
        return user_ok and pass_ok


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path


class GnmiService(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    """The four gNMI RPCs over a set of switch targets."""

    def __init__(
        self,
        targets: Targets,
        clock: Clock,
        credentials: Credentials | None,
        timing: Timing | None = None,
    ) -> None:
        self._targets = targets
        self._clock = clock
        self._credentials = credentials
        self._timing = timing or Timing()
        self._closing = threading.Event()

    def close(self) -> None:
        """Called on server shutdown; the server then cancels open Subscribe streams."""
        self._closing.set()

    def _authenticate(self, context: Any) -> None:
        if self._credentials is None:
            return
        metadata = dict(context.invocation_metadata())
        username = str(metadata.get("username", ""))
        password = str(metadata.get("password", ""))
        if not self._credentials.matches(username, password):
            # Never echo what was sent: the message names no user and no password.
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failed")

    def Capabilities(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._authenticate(context)
        return gnmi_pb2.CapabilityResponse(
            supported_models=[
                gnmi_pb2.ModelData(name=ORIGIN, organization="SONiC", version="0.1.0")
            ],
            supported_encodings=[JSON, JSON_IETF, PROTO],
            gNMI_version=GNMI_VERSION,
        )

    def Get(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._authenticate(context)
        with errors_as_status(context):
            encoding = check_get_encoding(request.encoding)
            switch = self._targets.resolve(request.prefix.target)
            notifications = []
            for path in request.path:
                where = db_path(request.prefix, path)
                if encoding == PROTO:
                    found, value = switch.read_for_get(where)
                    val = get_value(value, encoding, where.text()) if found else None
                else:  # JSON text, a table's kept from the last Get while unwritten
                    found, text = switch.json_for_get(where)
                    val = typed_json_text(text, encoding)
                if not found:
                    continue
                update = gnmi_pb2.Update(path=path, val=val)
                notifications.append(
                    notification(self._clock.wall_ns, request.prefix, [update], [])
                )
            return gnmi_pb2.GetResponse(notification=notifications)

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._authenticate(context)
        with set_errors_as_status(context):
            switch = self._targets.resolve(request.prefix.target)
            ops, results = self._set_ops(request)
            switch.apply(ops)
            return gnmi_pb2.SetResponse(
                prefix=request.prefix, response=results, timestamp=self._clock.wall_ns()
            )

    def _set_ops(self, request: Any) -> tuple[list[SetOp], list[Any]]:
        ops: list[SetOp] = []
        results: list[Any] = []
        op_enum = gnmi_pb2.UpdateResult.Operation
        for path in request.delete:
            ops.append(SetOp(OpKind.DELETE, db_path(request.prefix, path)))
            results.append(gnmi_pb2.UpdateResult(path=path, op=op_enum.Value("DELETE")))
        for kind, updates in ((OpKind.REPLACE, request.replace), (OpKind.UPDATE, request.update)):
            for update in updates:
                target = db_path(request.prefix, update.path)
                value = decode_ietf(update.val, target.text())
                ops.append(SetOp(kind, target, value))
                results.append(gnmi_pb2.UpdateResult(path=update.path, op=op_enum.Value(kind.name)))
        return ops, results

    async def Subscribe(  # noqa: N802
        self, request_iterator: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[Any]:
        """A coroutine, not a thread per stream: open streams are bounded by memory only.
        The stream ends when the client goes away (the RPC is cancelled) or on ``close``."""
        if not self._authorised(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failed")
        session = SubscribeSession(
            self._targets, self._clock.wall_ns, self._clock.monotonic, self._timing
        )
        try:
            first = await anext(aiter(request_iterator), None)
            if first is None or not first.HasField("subscribe"):
                raise InvalidRequestError("the first SubscribeRequest must carry a subscribe")
            plan = session.plan(first.subscribe)
            async for response in session.run(plan, request_iterator):
                yield response
        except VsonicError as error:
            await context.abort(status_for(error), error.message)

    def _authorised(self, context: Any) -> bool:
        if self._credentials is None:
            return True
        metadata = dict(context.invocation_metadata())
        return self._credentials.matches(
            str(metadata.get("username", "")), str(metadata.get("password", ""))
        )


@dataclass
class RunningServer:
    """A grpc.aio server on its own event loop thread."""

    server: Any
    port: int
    service: GnmiService
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    pool: concurrent.futures.ThreadPoolExecutor

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop answering; open streams are cancelled after ``grace_s``. The loop and the
        thread pool are stopped even if the server's own stop fails or hangs."""
        if not self.thread.is_alive():
            return
        self.service.close()
        try:
            stopped = asyncio.run_coroutine_threadsafe(self.server.stop(grace_s), self.loop)
            stopped.result(timeout=grace_s + 30)
        except Exception:  # stopping regardless: the process is going away
            pass
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.pool.shutdown(wait=False, cancel_futures=True)


def start_server(
    address: str,
    service: GnmiService,
    tls: TlsFiles | None = None,
    max_workers: int = 32,
) -> RunningServer:
    """Bind ``address`` (``127.0.0.1:0`` picks a free port) and start answering.

    The server is asyncio gRPC (``grpc.aio``) on a thread of its own: Subscribe streams are
    coroutines, so their number is not bounded by a thread pool; the unary RPCs (Capabilities,
    Get, Set) keep their synchronous code and run on ``max_workers`` threads."""
    loop = asyncio.new_event_loop()
    ready: concurrent.futures.Future[tuple[Any, int]] = concurrent.futures.Future()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)

    async def start() -> None:
        server = grpc.aio.server(migration_thread_pool=pool)
        gnmi_pb2_grpc.add_gNMIServicer_to_server(service, server)
        if tls is None:
            port = server.add_insecure_port(address)
        else:
            creds = grpc.ssl_server_credentials([(tls.key.read_bytes(), tls.cert.read_bytes())])
            port = server.add_secure_port(address, creds)
        await server.start()
        ready.set_result((server, port))

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as error:  # a bind failure reaches the caller below
            ready.set_exception(error)
            return
        loop.run_forever()
        # Stopped: the reads Subscribe ran on the default executor end with the loop.
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()

    thread = threading.Thread(target=run, name=f"gnmi-{address}", daemon=True)
    thread.start()
    try:
        server, port = ready.result(timeout=30)
    except RuntimeError as error:
        raise OSError(f"could not bind gNMI server to {address}: {error}") from error
    if port == 0:
        raise OSError(f"could not bind gNMI server to {address}")
    return RunningServer(
        server=server, port=port, service=service, loop=loop, thread=thread, pool=pool
    )


def serve(
    address: str,
    service: GnmiService,
    shutdown: threading.Event,
    tls: TlsFiles | None = None,
    on_ready: Callable[[int], None] | None = None,
) -> None:
    """Serve until ``shutdown`` is set, then stop (ending open streams)."""
    running = start_server(address, service, tls)
    try:
        if on_ready is not None:
            on_ready(running.port)
        shutdown.wait()
    finally:
        running.stop()
