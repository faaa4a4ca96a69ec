"""gNMI Subscribe to SONiC switches: STREAM (SAMPLE, ON_CHANGE), ONCE and POLL over origin
``sonic-db``, and supervised streams per switch; an OpenConfig switch's queue state over
origin ``openconfig`` (``QueueStateSession``, docs/openconfig.md "Counters").

Same targets, credentials (username/password metadata), TLS and channel options as Get/Set:
channels come from ``controller.southbound.gnmi.open_channel``, asyncio ones (``grpc.aio``)
here, so one collector process holds hundreds of streams on one event loop instead of a
thread each. Why our own call (pygnmi's generated messages, responses taken as bytes for a
per-stream decoder) and not ``pygnmi``'s ``subscribe2``: pygnmi runs each subscription on a
thread that swallows errors (a stream that dies looks like a quiet one, so staleness and reconnects
could not be told apart), has no asyncio form, and a client is bound to one target, while a
fleet server needs the prefix target per switch on a shared channel (docs/southbound.md).

What SONiC's own server (sonic-net/sonic-gnmi, sonic_data_client/mixed_db_client.go) asks of
a client, and what is done about it here:
- One database per Subscribe ("Target conflict in path" otherwise): a switch gets one stream
  per database, each a ``SupervisedStream`` with its own ``StreamSession``.
- A Subscribe naming a table the switch does not hold fails whole ("Failed to find <DB>
  <TABLE>"; a key path is accepted and answered ``{}``): each session subscribes to what
  exists and learns when the rest appears (``StreamSession.changed``, or a key it follows).
- The request side stays open until the call ends (``subscribe``): a half-closed Subscribe is
  ended with "queue: disposed", and a ONCE stays open after its sync.
- Counters: the server does not translate port or queue names to counter objects (reference:
  sonic-gnmi test/test_gnmi_countersdb.py), so they are read the way SONiC lays them out: the
  name maps (``COUNTERS_QUEUE_NAME_MAP``, ``COUNTERS_PORT_NAME_MAP``) and the ``COUNTERS``
  table, subscribed whole (one message a tick, where a path per object costs a message per
  object per tick).
A stream that ends or fails is re-opened with backoff and jitter; a switch that restarts is
subscribed afresh. Failures are named (``controller.southbound.faults``) and logged once per
change.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple, Protocol

import grpc  # type: ignore[import-untyped]
import orjson
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.openconfig.counters import QUEUE_STATE
from controller.openconfig.entries import ORIGIN as OPENCONFIG
from controller.openconfig.entries import parse_segment
from controller.southbound.faults import Fault, FaultLog, Reason, absent_table, classify, redact
from controller.southbound.gnmi import ChannelOptions, GnmiTarget, TlsOptions, open_channel
from controller.southbound.paths import ORIGIN
from controller.southbound.retry import RetryPolicy, backoff_delay

log = logging.getLogger("controller.southbound.subscribe")

INSTANCE = "localhost"
NS_PER_S = 1_000_000_000
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
QUEUE_NAME_MAP = ("COUNTERS_DB", INSTANCE, "COUNTERS_QUEUE_NAME_MAP")
PORT_NAME_MAP = ("COUNTERS_DB", INSTANCE, "COUNTERS_PORT_NAME_MAP")
# Ingress priority groups (sonic-swss portsorch.cpp, written where PG counters are polled).
PG_NAME_MAP = ("COUNTERS_DB", INSTANCE, "COUNTERS_PG_NAME_MAP")
AGENT_STATE = ("STATE_DB", INSTANCE, "SLUICE_AGENT_STATE")
AGENT_GLOBAL = "global"  # the key a running agent writes at every loop (its heartbeat)
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
    """``elems`` under ``origin``; under ``openconfig`` an element may carry its keys,
    spelled ``name[key=value]`` (``*`` for every entry)."""

    elems: tuple[str, ...]
    mode: SubMode = SubMode.ON_CHANGE
    sample_interval_s: float = 0.0  # SAMPLE: 0 is the server's minimum (1 s on SONiC)
    origin: str = ORIGIN


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


def _path(elems: Sequence[str], origin: str = ORIGIN) -> Any:
    if origin != OPENCONFIG:  # a SONiC key may hold brackets: its elements are names
        return gnmi_pb2.Path(origin=origin, elem=[gnmi_pb2.PathElem(name=e) for e in elems])
    keyed = [parse_segment(e) for e in elems]
    return gnmi_pb2.Path(
        origin=origin, elem=[gnmi_pb2.PathElem(name=n, key=dict(k)) for n, k in keyed]
    )


def subscribe_request(
    subs: Sequence[Subscription],
    mode: ListMode,
    prefix_target: str | None = None,
    updates_only: bool = False,
) -> Any:
    """The first (and for STREAM and ONCE, only) SubscribeRequest."""
    entries = [
        gnmi_pb2.Subscription(
            path=_path(s.elems, s.origin),
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
    if kind in ("uint_val", "int_val"):  # an OpenConfig counter64 sent as a typed scalar
        return getattr(val, kind)
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


def keyed_names(path: Any) -> tuple[str, ...]:
    """A path's elements with their keys, ``queue[name=SLUICE_Q3]`` (an OpenConfig path's
    entries are named by keys, where SONiC's are path elements)."""
    return tuple(
        e.name + "".join(f"[{k}={v}]" for k, v in sorted(e.key.items())) for e in path.elem
    )


def decode(response: Any, names: Callable[[Any], tuple[str, ...]] = _names) -> Notification | None:
    """A SubscribeResponse as a Notification (SYNC for sync_response; None for nothing).
    ``names`` reads a path's element names (a stream passes its ``PathNames``)."""
    if response.sync_response:
        return SYNC
    if not response.HasField("update"):
        return None
    note = response.update
    prefix = names(note.prefix) if note.prefix.elem else ()
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


def keyed_decoder() -> Decoder:
    """``decode`` keeping each element's keys (``keyed_names``): an OpenConfig stream's."""
    parse = gnmi_pb2.SubscribeResponse.FromString
    return lambda raw: decode(parse(raw), keyed_names)


class EndpointChannels:
    """One asyncio channel per endpoint, TLS and stream kind (``lane``), opened on first use:
    the switches of a fleet server share one per kind (streams to them multiplex over one
    HTTP/2 connection), and one switch's streams of different kinds never share one.
    sonic-gnmi keeps one Subscribe per client connection: a second Subscribe on the same
    connection closes the first without a word (gnmi_server/server.go ``Subscribe``, "Delete
    duplicate client"; ``-enable_stream_multiplexing`` is off by default). Each channel has
    connections of its own (``ChannelOptions``: a local subchannel pool)."""

    def __init__(self, options: ChannelOptions | None = None) -> None:
        self._options = options
        self._open: dict[tuple[str, TlsOptions | None, str], Any] = {}

    def for_target(self, target: GnmiTarget, lane: str = "") -> Any:
        key = (target.endpoint, target.tls, lane)
        channel = self._open.get(key)
        if channel is None:
            channel = self._open[key] = open_channel(target, self._options, aio=True)
        return channel

    async def close(self) -> None:
        for channel in self._open.values():
            await channel.close()
        self._open.clear()


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
    compiled core, without building protobuf objects for them.

    The request side stays open until the call ends: sonic-gnmi ends a Subscribe whose
    client half-closed with ``INVALID_ARGUMENT: queue: disposed``, often before it sent
    anything (gnmi_server/client_subscribe.go stops its queue when the request stream
    ends), and after a ONCE's sync it keeps the stream open, so a ONCE is cancelled here once
    its sync arrived."""
    first = subscribe_request(subs, mode, target.prefix_target)
    ended = asyncio.Event()

    async def requests() -> AsyncIterator[Any]:
        yield first
        if polls is not None:
            async for _ in polls:
                yield gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll())
        await ended.wait()  # half-closing would end the call on sonic-gnmi

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
                if note is SYNC and mode is ListMode.ONCE:
                    return
    finally:
        ended.set()
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
# what a database holds


GET = "/gnmi.gNMI/Get"


async def database_tables(
    channel: Any, target: GnmiTarget, database: str, deadline_s: float
) -> frozenset[str]:
    """The tables ``database`` holds now: one Get of its root (sonic-gnmi answers a
    database path with every table, ``{table: {key: {field: value}}}``), keeping only the
    names. What a Subscribe may name: sonic-gnmi fails a whole Subscribe that names a table
    it does not hold."""
    request = gnmi_pb2.GetRequest(
        prefix=gnmi_pb2.Path(target=target.prefix_target) if target.prefix_target else None,
        path=[_path((database, INSTANCE))],
        encoding=JSON_IETF,
    )
    get = channel.unary_unary(
        GET,
        request_serializer=gnmi_pb2.GetRequest.SerializeToString,
        response_deserializer=gnmi_pb2.GetResponse.FromString,
    )
    reply = await get(request, metadata=metadata(target), timeout=deadline_s)
    tables: set[str] = set()
    for note in reply.notification:
        for update in note.update:
            value = _value(update.val)
            if isinstance(value, dict):
                tables.update(str(name) for name in value)
    return frozenset(tables)


def table_subscriptions(database: str, tables: Iterable[str]) -> list[Subscription]:
    """``/<database>/localhost/<TABLE>`` ON_CHANGE for each table."""
    return [Subscription((database, INSTANCE, table)) for table in sorted(tables)]


def paths_text(subs: Sequence[Subscription]) -> str:
    """The paths of a Subscribe for a log line: ``COUNTERS_DB/localhost/{A,B}``."""
    if not subs:
        return "nothing"
    heads = {s.elems[:2] for s in subs}
    if len(heads) != 1:
        return ", ".join("/".join(s.elems) for s in subs)
    tails = ["/".join(s.elems[2:]) for s in subs]
    shown = ",".join(tails[:6]) + (f",… ({len(tails)} paths)" if len(tails) > 6 else "")
    head = "/".join(next(iter(heads)))
    return f"{head}/{shown}" if len(tails) == 1 else f"{head}/{{{shown}}}"


# ---------------------------------------------------------------------------------------------
# one supervised stream per switch and database


class StreamEnd(NamedTuple):
    """How one Subscribe of a supervised stream ended: ``error`` None when the server ended it
    (or the session asked to subscribe again), else the gRPC status code's name or the
    exception's type name; ``code`` the status of a failed RPC; ``fault`` the failure named
    (``controller.southbound.faults``: its cause from the details, the password taken out)."""

    error: str | None
    code: Any = None  # grpc.StatusCode
    fault: Fault | None = None


def _failed_rpc(error: grpc.RpcError, target: GnmiTarget) -> StreamEnd:
    code = error.code() if hasattr(error, "code") else None
    name = code.name if code is not None else "UNKNOWN"
    details = error.details() if hasattr(error, "details") else None
    text = redact(str(details or "no message"), target.password.get_secret_value())
    return StreamEnd(name, code, classify(name, text))


class StreamSession(Protocol):
    """A caller's part of a supervised stream: what to subscribe to, and what to do with
    what arrives. The collector's are ``CounterSession`` and ``AgentStateSession``; the drift
    watch's is ``controller.reconcile.watch.SwitchWatch``."""

    kind: str  # the stream's kind in logs and metrics: ``counters``, ``drift_watch``

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        """The paths of the next Subscribe (it may read the switch first); none: nothing to
        subscribe to yet (the stream waits for ``changed``)."""

    def synced(self) -> Fault | None:
        """The initial values are in (sync_response); a problem found in them, named (kept
        as the stream's fault; the stream goes on), or None."""

    def notification(self, note: Notification, *, synced: bool) -> bool:
        """One notification (``synced``: after the initial values); True to end this
        Subscribe and subscribe again (the paths it should cover moved)."""

    def ended(self, end: StreamEnd) -> float | None:
        """The Subscribe ended or failed; the wait before the next one, or None for the
        backoff. (A cancelled stream reports nothing: its canceller knows.)"""

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        """Returns when the paths to cover moved while a Subscribe runs (a table that was
        absent appeared): the stream then subscribes again. A session that learns this from
        its notifications never returns."""


async def never() -> None:
    """``StreamSession.changed`` of a session that needs no other signal."""
    await asyncio.Event().wait()


def being_cancelled() -> bool:
    """Whether the running task has a cancel request pending (``Task.cancelling``)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class SupervisedStream:
    """Keeps one switch subscribed (STREAM) until cancelled, on what ``session`` asks for; on
    any end or failure waits (backoff with jitter from ``rand``, from the start again once a
    Subscribe synced) and subscribes again. A failure is logged once per change of its
    reason or cause (``FaultLog``), with the switch, the paths and the cause, not once per
    retry; ``fault`` is the current one."""

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
        sync_timeout_s: float = 60.0,
    ) -> None:
        self.target = target
        self.session = session
        # A Subscribe that has not synced by then is given up: a server can leave one open
        # and silent (sonic-gnmi does to the first of two on one connection).
        self._sync_timeout_s = sync_timeout_s
        self._channel = channel
        self._decoder = decoder  # makes each Subscribe's decoder
        self._retry = retry  # its ``attempts`` is ignored: retried for as long as it is wanted
        self._rand = rand
        self._sleep = sleep
        self._faults = FaultLog()
        self._paths = "nothing"
        self.failures = 0
        self.last_error: str | None = None

    @property
    def fault(self) -> Fault | None:
        return self._faults.current

    async def run(self) -> None:
        retry_index = 0
        while True:
            delivered = False
            try:
                delivered = await self._one_subscribe()
                end = StreamEnd(None)
            except grpc.RpcError as error:
                end = _failed_rpc(error, self.target)
            except TimeoutError:
                cause = f"no sync_response within {self._sync_timeout_s:g} s"
                end = StreamEnd("TimeoutError", None, Fault(Reason.DEADLINE, cause))
            except Exception as error:  # a malformed answer: count it and subscribe again
                fault = Fault(Reason.MALFORMED, f"{type(error).__name__}: {error}"[:300])
                end = StreamEnd(type(error).__name__, None, fault)
            if being_cancelled():
                # grpc.aio can answer a call cancelled under a cancelled task with an RpcError
                # (CANCELLED) instead of CancelledError: a stream asked to stop stops, and
                # its owner's shutdown, which waits for it, does not hang.
                raise asyncio.CancelledError
            self.last_error = end.error
            self.failures += end.error is not None
            if end.fault is not None:
                self._record(end.fault)
            wait = self.session.ended(end)
            if wait is None:
                retry_index = 0 if delivered else retry_index + 1
                wait = backoff_delay(self._retry, retry_index, self._rand())
            await self._sleep(wait)

    def _record(self, fault: Fault) -> None:
        if not self._faults.changed(fault):
            return
        level = logging.INFO if fault.reason is Reason.ABSENT else logging.WARNING
        log.log(
            level,
            "%s: %s stream (%s): %s; subscribing again until it works",
            self.target.name,
            self.session.kind,
            self._paths,
            fault,
        )

    def _up(self, problem: Fault | None) -> None:
        if problem is not None:
            self.last_error = "EmptySubscription" if problem.reason is Reason.EMPTY else None
            self._record(problem)
        elif self._faults.recovered():
            log.info(
                "%s: %s stream (%s) is up again", self.target.name, self.session.kind, self._paths
            )

    async def _one_subscribe(self) -> bool:
        """One Subscribe until it ends or the session's paths move; True once it synced or
        the session asked to subscribe again, False when nothing was delivered (so
        consecutive failures back off further)."""
        subs = await self.session.subscriptions(self._channel, self.target)
        self._paths = paths_text(subs)
        changed = asyncio.ensure_future(self.session.changed(self._channel, self.target))
        tasks: list[asyncio.Future[Any]] = [changed]
        try:
            if not subs:  # nothing to cover yet: wait for something to appear
                self._up(self.session.synced())
                await changed
                return True
            reading = asyncio.ensure_future(self._read(subs))
            tasks.append(reading)
            done, _ = await asyncio.wait({reading, changed}, return_when=asyncio.FIRST_COMPLETED)
            if reading in done:
                return reading.result()
            changed.result()  # raises what the session's wait raised
            return True  # the paths moved: subscribe again at once
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _read(self, subs: Sequence[Subscription]) -> bool:
        synced = False
        notes = subscribe(self._channel, self.target, subs, decoder=self._decoder())
        async with aclosing(notes), asyncio.timeout(self._sync_timeout_s) as deadline:
            async for note in notes:
                if note is SYNC:
                    synced = True
                    deadline.reschedule(None)
                    self._up(self.session.synced())
                    continue
                if self.session.notification(note, synced=synced):
                    return True
        return synced


# ---------------------------------------------------------------------------------------------
# the collector's sessions: counters (COUNTERS_DB) and the agent's state (STATE_DB)


class Handler(Protocol):
    """What the collector's streams report to (``controller.collector``)."""

    def notification(self, note: Notification) -> None:
        """One notification: name maps, counter hashes (by object or as a whole table), the
        agent's state."""

    def counter_oids(self) -> list[str]:
        """Every oid the name maps name now."""

    def stream_up(self, up: bool) -> None:
        """The counters stream has synced (True), or ended or failed (False)."""

    def fault(self, stream: str, fault: Fault | None) -> None:
        """A stream's current fault (None: it works)."""


class EmptySubscription(Exception):
    """Counter objects the name maps name that the switch answered nothing for (sonic-gnmi
    answers ``{}`` for a key that does not exist): a map that names objects the switch no
    longer holds, reported rather than taken for quiet counters."""

    def __init__(self, paths: Sequence[tuple[str, ...]]) -> None:
        self.paths = tuple(paths)
        shown = ", ".join("/".join(p) for p in self.paths[:3])
        more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
        super().__init__(f"{len(self.paths)} counter object(s) answered nothing: {shown}{more}")


def objects_without_counters(
    named: Iterable[str], delivered: Iterable[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """The counter paths of the oids in ``named`` that no hash with a member was delivered
    for (``delivered``: the paths of the non-empty hashes of the initial values)."""
    have = {d[3] for d in delivered if len(d) == 4 and d[:3] == COUNTERS}
    return [counters_path(oid) for oid in named if oid not in have]


def counter_hashes(change: Change) -> list[tuple[str, Any]]:
    """The ``(oid, value)`` counter hashes one change carries: one for an object's path, every
    object of the table for the table's path (a whole-table answer)."""
    elems, value = change
    if len(elems) == 4 and elems[2] == "COUNTERS" and elems[:3] == COUNTERS:
        return [(elems[3], value)]
    if elems == COUNTERS and isinstance(value, dict):
        return list(value.items())
    return []


@dataclass(frozen=True)
class StreamPolicy:
    """``counter_mode`` ON_CHANGE follows each flex-counter write; SAMPLE reads every
    ``sample_interval_s`` (SONiC's minimum is 1 s); ``agent_state_mode`` the same for the
    agent's state. Reconnects back off per ``retry``
    (its ``attempts`` is ignored: a stream is retried for as long as it is wanted)."""

    counter_mode: SubMode = SubMode.ON_CHANGE
    agent_state_mode: SubMode = SubMode.ON_CHANGE
    sample_interval_s: float = 1.0
    connect_deadline_s: float = 10.0
    # How often a stream that follows the maps alone (the switch had no COUNTERS table)
    # subscribes again with the table once the maps name objects: the maps may have been
    # written before the counters and then never change (``CounterSession.changed``).
    counters_recheck_s: float = 5.0
    retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(base_delay_s=0.2, max_delay_s=10.0)
    )


def stream_subscriptions(policy: StreamPolicy, *, counters: bool = True) -> list[Subscription]:
    """The counters stream: the name maps (queues, ports, priority groups) ON_CHANGE
    (key-less hashes: sonic-gnmi answers ``{}`` while one is absent, never "Failed to find")
    and, unless ``counters`` is False,
    the whole COUNTERS table in the counter mode: one subscription for every object, which
    sonic-gnmi answers with one message a tick (a subscription per object costs a message per
    object per tick, and a redis connection each on the switch: docs/telemetry.md)."""
    counter_interval = policy.sample_interval_s if policy.counter_mode is SubMode.SAMPLE else 0.0
    subs = [Subscription(QUEUE_NAME_MAP), Subscription(PORT_NAME_MAP), Subscription(PG_NAME_MAP)]
    if counters:
        subs.append(Subscription(COUNTERS, policy.counter_mode, counter_interval))
    return subs


def _absent_or_fault(handler: Handler, kind: str, end: StreamEnd, table: tuple[str, ...]) -> bool:
    """True when the Subscribe failed only because ``table`` (database, instance, name) is
    not on the switch: a state the session follows, not a fault. Anything else is the
    stream's fault from here."""
    fault = end.fault
    absent = (
        fault is not None
        and fault.reason is Reason.ABSENT
        and absent_table(fault.cause) == (table[0], table[2])
    )
    handler.fault(kind, None if absent else fault)
    return absent


class CounterSession:
    """The collector's COUNTERS_DB stream of one switch: both name maps ON_CHANGE and the
    whole COUNTERS table (``stream_subscriptions``). The initial values are applied maps
    first, at the sync, so no hash waits for its map; an oid the maps name that has no
    counters then is reported (``EmptySubscription``). On a switch with no counters yet
    (sonic-gnmi: "Failed to find COUNTERS_DB COUNTERS") it subscribes to the maps alone and
    again with the table once a map names objects: at a map's change, or, when the maps named
    objects from the start (written before the first counters, and then quiet), after
    ``counters_recheck_s``."""

    kind = "counters"

    def __init__(
        self,
        handler: Handler,
        policy: StreamPolicy,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._handler = handler
        self._policy = policy
        self._sleep = sleep
        self._counters = True  # whether the switch holds a COUNTERS table, as last seen
        self._initial: list[Notification] = []
        # Set at each sync: the objects that delivered nothing (None when every one did).
        self.empty: EmptySubscription | None = None

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        self._initial = []
        return stream_subscriptions(self._policy, counters=self._counters)

    def synced(self) -> Fault | None:
        holds_counters = [any(counter_hashes(c) for c in n.changes) for n in self._initial]
        for counters_now in (False, True):  # the maps first: every hash finds its object
            for note, holds in zip(self._initial, holds_counters, strict=True):
                if holds is counters_now:
                    self._handler.notification(note)
        delivered = [
            (*COUNTERS, str(oid))
            for note in self._initial
            for change in note.changes
            for oid, value in counter_hashes(change)
            if value
        ]
        self._initial = []
        missing = objects_without_counters(self._handler.counter_oids(), delivered)
        self.empty = EmptySubscription(missing) if missing and self._counters else None
        self._handler.stream_up(True)
        fault = Fault(Reason.EMPTY, str(self.empty)) if self.empty is not None else None
        self._handler.fault(self.kind, fault)
        return fault

    def notification(self, note: Notification, *, synced: bool) -> bool:
        if not synced:
            self._initial.append(note)
            return False
        self._handler.notification(note)
        if not self._counters and self._handler.counter_oids():
            self._counters = True  # a map names objects now: their counters will follow
            return True
        return False

    def ended(self, end: StreamEnd) -> float | None:
        self._handler.stream_up(False)
        if _absent_or_fault(self._handler, self.kind, end, COUNTERS):
            self._counters = False
            return 0.0
        return None

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        if self._counters:
            await never()
        while True:
            await self._sleep(self._policy.counters_recheck_s)
            if self._handler.counter_oids():
                self._counters = True  # their counters may be there now: try the table
                return


class QueueStateSession:
    """The collector's counters stream of an OpenConfig switch: every interface queue's
    ``openconfig-qos`` state (``QUEUE_STATE``, origin ``openconfig``) in the counter mode.
    Its notifications go to the handler as they come, before the sync as after it: there are
    no name maps to apply first (``controller.openconfig.counters``)."""

    kind = "counters"

    def __init__(self, handler: Handler, policy: StreamPolicy) -> None:
        self._handler = handler
        self._policy = policy

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        sample = self._policy.counter_mode is SubMode.SAMPLE
        interval = self._policy.sample_interval_s if sample else 0.0
        return [Subscription(QUEUE_STATE, self._policy.counter_mode, interval, OPENCONFIG)]

    def synced(self) -> Fault | None:
        self._handler.stream_up(True)
        self._handler.fault(self.kind, None)
        return None

    def notification(self, note: Notification, *, synced: bool) -> bool:
        self._handler.notification(note)
        return False

    def ended(self, end: StreamEnd) -> float | None:
        self._handler.stream_up(False)
        self._handler.fault(self.kind, end.fault)
        return None

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        await never()


class AgentStateSession:
    """The collector's STATE_DB stream of one switch: the agent's state table ON_CHANGE. A
    switch without an agent has no ``SLUICE_AGENT_STATE`` and sonic-gnmi refuses the whole
    Subscribe for it ("Failed to find STATE_DB SLUICE_AGENT_STATE"); the stream then follows
    the one key every running agent writes at each loop, ``SLUICE_AGENT_STATE|global`` (a key
    path is accepted while it is absent, answered ``{}``, and streamed once written), and
    subscribes to the whole table again once it appears. Both in the policy's
    ``agent_state_mode``."""

    kind = "agent_state"

    def __init__(self, handler: Handler, policy: StreamPolicy | None = None) -> None:
        self._handler = handler
        self._present = True  # whether the table exists, as last seen
        policy = policy or StreamPolicy()
        self._mode = policy.agent_state_mode
        self._interval_s = policy.sample_interval_s if self._mode is SubMode.SAMPLE else 0.0

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        path = AGENT_STATE if self._present else (*AGENT_STATE, AGENT_GLOBAL)
        return [Subscription(path, self._mode, self._interval_s)]

    def synced(self) -> Fault | None:
        self._handler.fault(self.kind, None)
        return None

    def notification(self, note: Notification, *, synced: bool) -> bool:
        self._handler.notification(note)
        if self._present:
            return False
        self._present = any(change.value for change in note.changes)
        return self._present  # the agent wrote its state: the whole table now

    def ended(self, end: StreamEnd) -> float | None:
        if _absent_or_fault(self._handler, self.kind, end, AGENT_STATE):
            self._present = False
            return 0.0
        return None

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        await never()
