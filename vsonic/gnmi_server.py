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
import contextlib
import hmac
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from vsonic.answers import (
    PROTO,
    check_get_encoding,
    names_entry,
    no_valid_entry,
    read_path,
    set_errors_as_status,
)
from vsonic.appl_db import Producer
from vsonic.errors import InvalidRequestError, InvalidValueError, UnsupportedError, VsonicError
from vsonic.gnmi_codec import (
    JSON,
    JSON_IETF,
    check_request_db,
    db_path,
    decode_ietf,
    errors_as_status,
    is_openconfig,
    json_text,
    keyed_elems,
    notification,
    status_for,
)
from vsonic.gotext import go_path
from vsonic.openconfig import ORIGIN as OC_ORIGIN
from vsonic.openconfig import OcOp
from vsonic.openconfig_state import OpenConfigStream
from vsonic.paths import ORIGIN
from vsonic.setops import OpKind, SetOp
from vsonic.subscribe import QUEUE_DISPOSED, SubscribeSession, Timing
from vsonic.switch import Switch, Targets

GNMI_VERSION = "0.7.0"  # what sonic-gnmi 5ec1c20b answers (gnmi_server/server.go)
GET_ALL = gnmi_pb2.GetRequest.DataType.Value("ALL")
OPENCONFIG_ORG = "OpenConfig working group"
# The models a switch playing an OpenConfig target serves, by the revision the tests check
# its Sets against (oc-config-validate's openconfig/public; docs/openconfig.md).
OPENCONFIG_MODELS = (("openconfig-qos", "2026-01-16"), ("openconfig-interfaces", "2024-12-05"))


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


class Connections:
    """The Subscribe streams open on each client connection (gRPC's peer address), so that a
    new one ends the one before it, as sonic-gnmi does; ``multiplexed`` keeps them all."""

    def __init__(self, multiplexed: bool) -> None:
        self.multiplexed = multiplexed
        self._streams: dict[str, asyncio.Event] = {}

    def register(self, peer: str) -> asyncio.Event:
        """The new stream's event, set once another Subscribe on ``peer`` displaces it."""
        mine = asyncio.Event()
        if not self.multiplexed:
            before = self._streams.get(peer)
            if before is not None:
                before.set()
            self._streams[peer] = mine
        return mine

    def unregister(self, peer: str, mine: asyncio.Event) -> None:
        if self._streams.get(peer) is mine:
            del self._streams[peer]


async def _until(displaced: asyncio.Event, responses: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``responses`` until another Subscribe on the connection displaces this one, which then
    ends as sonic-gnmi's does once its queue is disposed."""
    ended = asyncio.ensure_future(displaced.wait())
    following: asyncio.Future[Any] | None = None
    try:
        while True:
            following = asyncio.ensure_future(anext(responses))
            await asyncio.wait({following, ended}, return_when=asyncio.FIRST_COMPLETED)
            if ended.done():
                raise InvalidRequestError(QUEUE_DISPOSED)
            try:
                response = following.result()
            except StopAsyncIteration:
                return
            yield response
    finally:
        ended.cancel()
        # However this ends (displaced, or the call cancelled under it), the step of
        # ``responses`` still running is stopped first: the caller closes the generator next,
        # which fails while a step runs ("aclose(): asynchronous generator is already
        # running") and would leave that step reading the switch for a stream nobody reads.
        if following is not None and not following.done():
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await following


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
        self._connections = Connections(multiplexed=targets.fleet)

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
        """sonic-gnmi's answer (``sonic-db``); a standalone switch playing an OpenConfig
        target lists the OpenConfig models it serves instead, as a vendor's target does
        (a CapabilityRequest names no target: a fleet server answers as SONiC)."""
        self._authenticate(context)
        models = [gnmi_pb2.ModelData(name=ORIGIN, organization="SONiC", version="0.1.0")]
        if not self._targets.fleet and self._targets.resolve("").dialect == OC_ORIGIN:
            models = [
                gnmi_pb2.ModelData(name=name, organization=OPENCONFIG_ORG, version=version)
                for name, version in OPENCONFIG_MODELS
            ]
        return gnmi_pb2.CapabilityResponse(
            supported_models=models,
            supported_encodings=[JSON, JSON_IETF, PROTO],
            gNMI_version=GNMI_VERSION,
        )

    def Get(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._authenticate(context)
        with errors_as_status(context):
            if request.type != GET_ALL:
                name = gnmi_pb2.GetRequest.DataType.Name(request.type)
                raise UnsupportedError(f"unsupported request type: {name}")
            if is_openconfig(request.prefix, request.path):
                return self._openconfig_get(request)
            encoding = check_get_encoding(request.encoding)
            switch = self._targets.resolve(request.prefix.target)
            check_request_db(request.prefix, request.path)
            notifications = []
            for path in request.path:
                where = db_path(request.prefix, path)
                if encoding == JSON_IETF:  # JSON text, a table's kept from the last Get
                    found, text = switch.json_for_get(where)
                    val = gnmi_pb2.TypedValue(json_ietf_val=text) if found else None
                else:
                    read = read_path(switch.store, where, encoding)
                    val = None if read is None else read.typed_value(json_text(read.json))
                if val is None:
                    if names_entry(where):
                        raise no_valid_entry(path)
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
            updated = [*(u.path for u in request.replace), *(u.path for u in request.update)]
            if is_openconfig(request.prefix, [*request.delete, *updated]):
                return self._openconfig_set(switch, request)
            paths = [*request.delete, *(u.path for u in request.replace)]
            database = check_request_db(request.prefix, [*paths, *(u.path for u in request.update)])
            if database not in ("CONFIG_DB", "APPL_DB"):
                raise UnsupportedError(f"Set RPC does not support {database}")
            ops, results = self._set_ops(request)
            if database == "APPL_DB":
                with switch.set_lock:
                    Producer(switch.store).apply(ops)
            else:
                switch.apply(ops)
            return gnmi_pb2.SetResponse(
                prefix=request.prefix, response=results, timestamp=self._clock.wall_ns()
            )

    def _openconfig_get(self, request: Any) -> Any:
        """Origin ``openconfig``: the node at each path, JSON_IETF (vsonic/openconfig.py)."""
        if request.encoding != JSON_IETF:
            raise UnsupportedError(f"origin {OC_ORIGIN}: vsonic answers JSON_IETF only")
        switch = self._targets.resolve(request.prefix.target)
        notifications = []
        for path in request.path:
            value = switch.openconfig.get(keyed_elems(request.prefix, path))
            update = gnmi_pb2.Update(
                path=path, val=gnmi_pb2.TypedValue(json_ietf_val=json_text(value))
            )
            notifications.append(notification(self._clock.wall_ns, request.prefix, [update], []))
        return gnmi_pb2.GetResponse(notification=notifications)

    def _openconfig_set(self, switch: Switch, request: Any) -> Any:
        """Origin ``openconfig``: all of the request or none, checked whole."""
        ops: list[OcOp] = []
        results: list[Any] = []
        op_enum = gnmi_pb2.UpdateResult.Operation
        for path in request.delete:
            ops.append(OcOp("delete", keyed_elems(request.prefix, path)))
            results.append(gnmi_pb2.UpdateResult(path=path, op=op_enum.Value("DELETE")))
        for kind, updates in (("replace", request.replace), ("update", request.update)):
            for update in updates:
                value = decode_ietf(update.val)
                ops.append(OcOp(kind, keyed_elems(request.prefix, update.path), value))
                results.append(
                    gnmi_pb2.UpdateResult(path=update.path, op=op_enum.Value(kind.upper()))
                )
        with switch.set_lock:
            switch.openconfig.apply(ops)
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
                if update.HasField("val"):
                    value = decode_ietf(update.val)
                elif kind is OpKind.REPLACE:
                    value = None  # a replace without a value removes
                else:
                    raise InvalidValueError(f"Invalid update {go_path(update.path)}")
                ops.append(SetOp(kind, target, value))
                results.append(gnmi_pb2.UpdateResult(path=update.path, op=op_enum.Value(kind.name)))
        return ops, results

    async def Subscribe(  # noqa: N802
        self, request_iterator: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[Any]:
        """A coroutine, not a thread per stream: open streams are bounded by memory only.
        The stream ends when the client goes away (the RPC is cancelled) or on ``close``.

        As sonic-gnmi keys its Subscribe clients by connection (gnmi_server/server.go
        ``Subscribe``: "Delete duplicate client"), a standalone switch's new Subscribe on a
        connection ends the one it had there with INVALID_ARGUMENT "queue: disposed". A fleet
        server multiplexes, as sonic-gnmi does with ``-enable_stream_multiplexing``: its
        switches share connections."""
        if not self._authorised(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failed")
        session = SubscribeSession(
            self._targets, self._clock.wall_ns, self._clock.monotonic, self._timing
        )
        peer = context.peer()  # read while the call is alive: grpc.aio's context dies with it
        displaced = self._connections.register(peer)
        try:
            first = await anext(aiter(request_iterator), None)
            if first is None:
                await context.abort(grpc.StatusCode.ABORTED, "stream EOF received before init")
                return
            if not first.HasField("subscribe"):
                raise InvalidRequestError(f"first message must be SubscriptionList: {first}")
            responses = self._responses(session, first.subscribe, request_iterator)
            try:
                followed = (
                    responses if self._connections.multiplexed else _until(displaced, responses)
                )
                async for response in followed:
                    yield response
            finally:
                await responses.aclose()
        except VsonicError as error:
            await context.abort(status_for(error), error.message)
        finally:
            self._connections.unregister(peer, displaced)

    def _responses(
        self, session: SubscribeSession, request: Any, request_iterator: AsyncIterator[Any]
    ) -> AsyncGenerator[Any, None]:
        """Origin ``sonic-db`` as sonic-gnmi answers it; ``openconfig``: queue state
        (vsonic/openconfig_state.py)."""
        if not is_openconfig(request.prefix, [s.path for s in request.subscription]):
            return session.run(session.plan(request), request_iterator)
        stream = OpenConfigStream(
            self._targets.resolve(request.prefix.target),
            request,
            self._clock.wall_ns,
            self._timing.min_sample_s,
            self._timing.on_change_poll_s,
        )
        return stream.run()

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
