"""gNMI Subscribe to SONiC switches: STREAM (SAMPLE, ON_CHANGE), ONCE and POLL over origin
``sonic-db``, and one supervised stream per switch.

Same targets, credentials (username/password metadata), TLS and channel options as Get/Set
(``controller.southbound.gnmi``); the channel is asyncio gRPC (``grpc.aio``) so one collector
process holds hundreds of streams on one event loop instead of a thread each. Why our own
call (pygnmi's generated messages, responses taken as bytes for a per-stream decoder) and not
``pygnmi``'s ``subscribe2``: pygnmi runs each subscription on a thread
that swallows errors (a stream that dies looks like a quiet one, so staleness and reconnects
could not be told apart), has no asyncio form, and a client is bound to one target, while a
fleet server needs the prefix target per switch on a shared channel (docs/southbound.md).

Paths: SONiC's MixedDbClient (origin ``sonic-db``) does not translate port or queue names to
counter objects (reference: sonic-gnmi test/test_gnmi_countersdb.py), so counters are read
the way SONiC lays them out: the name maps first (``COUNTERS_QUEUE_NAME_MAP``,
``COUNTERS_PORT_NAME_MAP``), then ``COUNTERS/<oid>`` per object. The maps are subscribed
ON_CHANGE too: when one changes (ports added, syncd restarted) the stream is re-made with the
new oids. A stream that ends or fails is re-opened with backoff and jitter; a switch that
restarts is subscribed afresh, maps included.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple, Protocol

import grpc  # type: ignore[import-untyped]
import orjson
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.southbound.gnmi import ChannelOptions, GnmiTarget, TlsOptions
from controller.southbound.paths import ORIGIN
from controller.southbound.retry import RetryPolicy, backoff_delay

log = logging.getLogger("controller.southbound.subscribe")

INSTANCE = "localhost"
NS_PER_S = 1_000_000_000
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
QUEUE_NAME_MAP = ("COUNTERS_DB", INSTANCE, "COUNTERS_QUEUE_NAME_MAP")
PORT_NAME_MAP = ("COUNTERS_DB", INSTANCE, "COUNTERS_PORT_NAME_MAP")
AGENT_STATE = ("STATE_DB", INSTANCE, "SLUICE_AGENT_STATE")
COUNTERS = ("COUNTERS_DB", INSTANCE, "COUNTERS")


def counters_path(oid: str) -> tuple[str, ...]:
    """``/COUNTERS_DB/localhost/COUNTERS/oid:0x...``: one object's counters, by its oid."""
    if not oid.startswith("oid:"):
        raise ValueError(f"{oid!r} is not a SAI object id; resolve names through the maps")
    return (*COUNTERS, oid)


class ListMode(Enum):
    STREAM = "STREAM"
    ONCE = "ONCE"
    POLL = "POLL"


class SubMode(Enum):
    SAMPLE = "SAMPLE"
    ON_CHANGE = "ON_CHANGE"


@dataclass(frozen=True)
class Subscription:
    elems: tuple[str, ...]
    mode: SubMode = SubMode.ON_CHANGE
    sample_interval_s: float = 0.0  # SAMPLE: 0 is the server's minimum (1 s on SONiC)


class Change(NamedTuple):
    """One update (``value`` the decoded JSON) or delete (``value`` None) at ``elems``. (A
    tuple: one is made per update, hundreds of thousands a second in a collector.)"""

    elems: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class Notification:
    timestamp_ns: int
    changes: tuple[Change, ...]


SYNC = Notification(0, ())  # marks the end of the initial values (sync_response)


def _path(elems: Sequence[str]) -> Any:
    return gnmi_pb2.Path(origin=ORIGIN, elem=[gnmi_pb2.PathElem(name=e) for e in elems])


def subscribe_request(
    subs: Sequence[Subscription],
    mode: ListMode,
    prefix_target: str | None = None,
    updates_only: bool = False,
) -> Any:
    """The first (and for STREAM and ONCE, only) SubscribeRequest."""
    entries = [
        gnmi_pb2.Subscription(
            path=_path(s.elems),
            mode=gnmi_pb2.SubscriptionMode.Value(s.mode.value),
            sample_interval=int(s.sample_interval_s * NS_PER_S),
        )
        for s in subs
    ]
    prefix = gnmi_pb2.Path(target=prefix_target) if prefix_target else None
    return gnmi_pb2.SubscribeRequest(
        subscribe=gnmi_pb2.SubscriptionList(
            prefix=prefix,
            subscription=entries,
            mode=gnmi_pb2.SubscriptionList.Mode.Value(mode.value),
            encoding=JSON_IETF,
            updates_only=updates_only,
        )
    )


def _json(text: bytes) -> Any:
    """orjson for speed; the standard library for what orjson refuses (text that is not
    UTF-8, NaN, integers beyond 64 bits), so the answer is exactly ``json.loads``'s."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text.decode())


def _value(val: Any) -> Any:
    ietf = val.json_ietf_val  # b"" unless set: the common case costs one lookup
    if ietf:
        return _json(ietf)
    kind = val.WhichOneof("value")
    if kind == "json_ietf_val":
        return json.loads(ietf.decode())  # empty text: json's own error
    if kind == "json_val":
        return _json(val.json_val)
    if kind == "string_val":
        return val.string_val
    return None


class PathNames:
    """A gNMI path's element names by its wire bytes, for one stream: a stream carries the
    same few thousand paths every interval, and reading the elements of a protobuf path
    costs several times more than serialising it and looking it up. Bounded: past
    ``limit`` paths it starts afresh."""

    def __init__(self, limit: int = 65_536) -> None:
        self._names: dict[bytes, tuple[str, ...]] = {}
        self._limit = limit

    def __call__(self, path: Any) -> tuple[str, ...]:
        key = path.SerializeToString()
        names = self._names.get(key)
        if names is None:
            if len(self._names) >= self._limit:
                self._names.clear()
            names = self._names[key] = tuple([e.name for e in path.elem])
        return names


def _names(path: Any) -> tuple[str, ...]:
    return tuple([e.name for e in path.elem])


def decode(response: Any, names: Callable[[Any], tuple[str, ...]] = _names) -> Notification | None:
    """A SubscribeResponse as a Notification (SYNC for sync_response; None for nothing).
    ``names`` reads a path's element names (a stream passes its ``PathNames``)."""
    if response.sync_response:
        return SYNC
    if not response.HasField("update"):
        return None
    note = response.update
    prefix = tuple([e.name for e in note.prefix.elem])
    if prefix:
        changes = [Change(prefix + names(u.path), _value(u.val)) for u in note.update]
        changes += [Change(prefix + names(d), None) for d in note.delete]
    else:
        changes = [Change(names(u.path), _value(u.val)) for u in note.update]
        changes += [Change(names(d), None) for d in note.delete]
    return Notification(int(note.timestamp), tuple(changes))


Decoder = Callable[[bytes], Notification | None]
"""One stream's decoder: a SubscribeResponse as gRPC received it (its serialized bytes) to a
Notification, or None for nothing to hand on."""

SUBSCRIBE = "/gnmi.gNMI/Subscribe"  # the RPC's method path (gnmi.proto: service gNMI)


def reference_decoder() -> Decoder:
    """Each response through protobuf's objects and ``decode``, with a path cache of its own
    (one per stream)."""
    names = PathNames()
    parse = gnmi_pb2.SubscribeResponse.FromString
    return lambda raw: decode(parse(raw), names)


def open_channel(target: GnmiTarget, options: ChannelOptions | None = None) -> Any:
    """An asyncio channel to ``target`` with the same TLS and options as Get/Set's."""
    grpc_options: list[tuple[str, Any]] = list((options or ChannelOptions()).as_grpc())
    if target.tls is None:
        return grpc.aio.insecure_channel(target.endpoint, options=grpc_options)
    credentials = _credentials(target.tls)
    if target.tls.server_name:
        grpc_options.append(("grpc.ssl_target_name_override", target.tls.server_name))
    return grpc.aio.secure_channel(target.endpoint, credentials, options=grpc_options)


class EndpointChannels:
    """One asyncio channel per endpoint and TLS, opened on first use: the switches of a
    fleet server share it (streams to them multiplex over one HTTP/2 connection)."""

    def __init__(self, options: ChannelOptions | None = None) -> None:
        self._options = options
        self._open: dict[tuple[str, TlsOptions | None], Any] = {}

    def for_target(self, target: GnmiTarget) -> Any:
        key = (target.endpoint, target.tls)
        channel = self._open.get(key)
        if channel is None:
            channel = self._open[key] = open_channel(target, self._options)
        return channel

    async def close(self) -> None:
        for channel in self._open.values():
            await channel.close()
        self._open.clear()


def _credentials(tls: TlsOptions) -> Any:
    return grpc.ssl_channel_credentials(
        root_certificates=tls.root_cert.read_bytes() if tls.root_cert else None,
        private_key=tls.client_key.read_bytes() if tls.client_key else None,
        certificate_chain=tls.client_cert.read_bytes() if tls.client_cert else None,
    )


def metadata(target: GnmiTarget) -> list[tuple[str, str]]:
    """SONiC's password auth reads these two metadata keys (sonic-gnmi basicAuth.go)."""
    return [("username", target.username), ("password", target.password.get_secret_value())]


async def subscribe(
    channel: Any,
    target: GnmiTarget,
    subs: Sequence[Subscription],
    mode: ListMode = ListMode.STREAM,
    polls: AsyncIterator[None] | None = None,
    deadline_s: float | None = None,
    decoder: Decoder | None = None,
) -> AsyncGenerator[Notification, None]:
    """The notifications of one Subscribe RPC. ONCE ends after SYNC; POLL sends a Poll for
    each item of ``polls``; STREAM runs until the server ends it or it fails (grpc errors
    propagate: the caller decides whether to reconnect). ``deadline_s`` bounds ONCE/POLL.
    The responses arrive as bytes (no deserializer on the call) and go through ``decoder``
    (``reference_decoder()`` when None): the collector's takes counter batches whole in its
    compiled core, without building protobuf objects for them."""
    first = subscribe_request(subs, mode, target.prefix_target)

    async def requests() -> AsyncIterator[Any]:
        yield first
        if polls is not None:
            async for _ in polls:
                yield gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll())

    method = channel.stream_stream(
        SUBSCRIBE, request_serializer=gnmi_pb2.SubscribeRequest.SerializeToString
    )
    call = method(requests(), metadata=metadata(target), timeout=deadline_s)
    decoded = decoder if decoder is not None else reference_decoder()
    try:
        async for raw in call:
            note = decoded(raw)
            if note is not None:
                yield note
    finally:
        call.cancel()


async def read_once(
    channel: Any, target: GnmiTarget, elems: Sequence[tuple[str, ...]], deadline_s: float
) -> dict[tuple[str, ...], Any]:
    """Subscribe ONCE: the current value at each path (absent paths are left out)."""
    subs = [Subscription(e) for e in elems]
    values: dict[tuple[str, ...], Any] = {}
    notes = subscribe(channel, target, subs, ListMode.ONCE, deadline_s=deadline_s)
    async with aclosing(notes):
        async for note in notes:
            for change in note.changes:
                values[change.elems] = change.value
    return values


# ---------------------------------------------------------------------------------------------
# one supervised stream per switch


class StreamEnd(NamedTuple):
    """How one Subscribe of a supervised stream ended: ``error`` None when the server ended it
    (or the session asked to subscribe again), else the gRPC status code's name or the
    exception's type name (never its text: gRPC details may echo request metadata); ``code``
    the status of a failed RPC."""

    error: str | None
    code: Any = None  # grpc.StatusCode


def _failed_rpc(error: grpc.RpcError) -> StreamEnd:
    code = error.code() if hasattr(error, "code") else None
    return StreamEnd(code.name if code is not None else "UNKNOWN", code)


class StreamSession(Protocol):
    """A caller's part of a supervised stream: what to subscribe to, and what to do with
    what arrives. The collector's is ``CounterSession``; the drift watch's is
    ``controller.reconcile.watch.SwitchWatch``."""

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        """The paths of the next Subscribe (it may read the switch first)."""

    def synced(self) -> str | None:
        """The initial values are in (sync_response); a problem found in them, named (kept
        as the stream's ``last_error``; the stream goes on), or None."""

    def notification(self, note: Notification, *, synced: bool) -> bool:
        """One notification (``synced``: after the initial values); True to end this
        Subscribe and subscribe again (the paths it should cover moved)."""

    def ended(self, end: StreamEnd) -> float | None:
        """The Subscribe ended or failed; the wait before the next one, or None for the
        backoff. (A cancelled stream reports nothing: its canceller knows.)"""


class SupervisedStream:
    """Keeps one switch subscribed (STREAM) until cancelled, on what ``session`` asks for; on
    any end or failure waits (backoff with jitter from ``rand``, from the start again once a
    Subscribe synced) and subscribes again."""

    def __init__(
        self,
        target: GnmiTarget,
        channel: Any,
        session: StreamSession,
        retry: RetryPolicy,
        *,
        rand: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        decoder: Callable[[], Decoder] = reference_decoder,
    ) -> None:
        self.target = target
        self.session = session
        self._channel = channel
        self._decoder = decoder  # makes each Subscribe's decoder
        self._retry = retry  # its ``attempts`` is ignored: retried for as long as it is wanted
        self._rand = rand
        self._sleep = sleep
        self.failures = 0
        self.last_error: str | None = None

    async def run(self) -> None:
        retry_index = 0
        while True:
            delivered = False
            try:
                delivered = await self._one_subscribe()
                end = StreamEnd(None)
            except grpc.RpcError as error:
                end = _failed_rpc(error)
            except Exception as error:  # a malformed answer: count it and subscribe again
                end = StreamEnd(type(error).__name__)
            self.last_error = end.error
            self.failures += end.error is not None
            wait = self.session.ended(end)
            if wait is None:
                retry_index = 0 if delivered else retry_index + 1
                wait = backoff_delay(self._retry, retry_index, self._rand())
            await self._sleep(wait)

    async def _one_subscribe(self) -> bool:
        """One Subscribe until it ends; True once it synced or the session asked to subscribe
        again, False when nothing was delivered (so consecutive failures back off further)."""
        subs = await self.session.subscriptions(self._channel, self.target)
        synced = False
        notes = subscribe(self._channel, self.target, subs, decoder=self._decoder())
        async with aclosing(notes):
            async for note in notes:
                if note is SYNC:
                    synced = True
                    problem = self.session.synced()
                    if problem is not None:
                        self.last_error = problem
                    continue
                if self.session.notification(note, synced=synced):
                    return True
        return synced


# ---------------------------------------------------------------------------------------------
# the collector's session: counters by oid


class Handler(Protocol):
    """What a counter stream reports to (the collector implements it)."""

    def name_maps(self, queues: Mapping[str, str], ports: Mapping[str, str]) -> list[str]:
        """The maps just read; returns the oids to subscribe to."""

    def notification(self, note: Notification) -> bool:
        """One notification; True when a name map changed and the stream must be re-made."""

    def stream_up(self, up: bool) -> None:
        """The stream has synced (True), or ended or failed (False)."""


class EmptySubscription(Exception):
    """Counter paths the switch answered with a sync response and no data: SONiC's answer to
    a path that names nothing (a counter by port name instead of oid, or an oid that is gone),
    reported rather than taken for a quiet counter."""

    def __init__(self, paths: Sequence[tuple[str, ...]]) -> None:
        self.paths = tuple(paths)
        shown = ", ".join("/".join(p) for p in self.paths[:3])
        more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
        super().__init__(
            f"{len(self.paths)} counter path(s) answered only with sync: {shown}{more}"
        )


def paths_without_data(
    subs: Sequence[Subscription], delivered: Sequence[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """The counter subscriptions no update before the sync response fell under. (Every
    prefix of every delivered path in a set: linear, where testing each subscription
    against each update was 579 x 579 per switch at each subscribe.)"""
    under = {d[:k] for d in delivered for k in range(1, len(d) + 1)}
    counters = [s.elems for s in subs if s.elems[: len(COUNTERS)] == COUNTERS]
    return [p for p in counters if p not in under]


@dataclass(frozen=True)
class StreamPolicy:
    """``counter_mode`` ON_CHANGE follows each flex-counter write; SAMPLE reads every
    ``sample_interval_s`` (SONiC's minimum is 1 s). Reconnects back off per ``retry``
    (its ``attempts`` is ignored: a stream is retried for as long as it is wanted)."""

    counter_mode: SubMode = SubMode.ON_CHANGE
    sample_interval_s: float = 1.0
    connect_deadline_s: float = 10.0
    retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(base_delay_s=0.2, max_delay_s=10.0)
    )


def stream_subscriptions(oids: Sequence[str], policy: StreamPolicy) -> list[Subscription]:
    """The name maps and agent state ON_CHANGE; each counter object by its oid."""
    counter_interval = policy.sample_interval_s if policy.counter_mode is SubMode.SAMPLE else 0.0
    subs = [Subscription(QUEUE_NAME_MAP), Subscription(PORT_NAME_MAP), Subscription(AGENT_STATE)]
    subs += [Subscription(counters_path(o), policy.counter_mode, counter_interval) for o in oids]
    return subs


class CounterSession:
    """The collector's part of a switch's supervised stream: read both name maps (ONCE), then
    stream the maps and the agent state ON_CHANGE and each counter by its oid; a map that
    changes makes the stream again with the new oids."""

    def __init__(self, handler: Handler, policy: StreamPolicy) -> None:
        self._handler = handler
        self._policy = policy
        self._switch = ""
        self._subs: list[Subscription] = []
        self._delivered: list[tuple[str, ...]] = []
        # Set at each sync: the paths that delivered nothing (None when every one did).
        self.empty: EmptySubscription | None = None

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        maps = await read_once(
            channel, target, [QUEUE_NAME_MAP, PORT_NAME_MAP], self._policy.connect_deadline_s
        )
        oids = self._handler.name_maps(
            _as_map(maps.get(QUEUE_NAME_MAP)), _as_map(maps.get(PORT_NAME_MAP))
        )
        self._switch = target.name
        self._subs = stream_subscriptions(oids, self._policy)
        self._delivered = []
        return self._subs

    def synced(self) -> str | None:
        """A counter path that answered only with sync is an error, logged once per stream."""
        missing = paths_without_data(self._subs, self._delivered)
        self.empty = EmptySubscription(missing) if missing else None
        self._handler.stream_up(True)
        if self.empty is None:
            return None
        log.warning("%s: %s", self._switch, self.empty)
        return "EmptySubscription"

    def notification(self, note: Notification, *, synced: bool) -> bool:
        if not synced:
            self._delivered.extend(change.elems for change in note.changes)
        return self._handler.notification(note)

    def ended(self, end: StreamEnd) -> float | None:
        self._handler.stream_up(False)
        return None


def _as_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}
