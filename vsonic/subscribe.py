"""gNMI Subscribe as sonic-gnmi serves origin ``sonic-db``, on asyncio.

Sources (sonic-net/sonic-gnmi 5ec1c20b): gnmi_server/client_subscribe.go (``Run``, ``recv``,
``send``) and sonic_data_client/mixed_db_client.go (``OnceRun``, ``PollRun``, ``StreamRun``,
``dbFieldSubscribe``, ``dbTableKeySubscribe``, ``dbSingleTableKeySubscribe``); every rule was
also compared with the running server (tests/realsonic/test_vsonic_diff_server.py).

- The request's encoding is not looked at: values are JSON_IETF (a STREAM field: string).
- Paths naming no database or several fail the Subscribe at once: NOT_FOUND "… Target
  conflict in path". Everything else that fails, fails while it runs: the values of the
  paths before it may have gone out, then the stream ends INVALID_ARGUMENT with the message
  ("Failed to find <DB> <TABLE> …" for a table with no key in redis, prefixed
  "streamOnChangeSubscription error:  " under ON_CHANGE and "OnceRun error: " under ONCE).
- ONCE: each path's value in a message of its own (a path that reads nothing: none), then
  ``sync_response``; the stream then stays open until the client ends it. A client that
  half-closes its side ends a ONCE or POLL with INVALID_ARGUMENT "queue: disposed".
- POLL: the values and a sync at once, then at each Poll; a path that had a value and reads
  nothing now is sent as a delete. A request that is not a Poll ends the stream like a
  half-close. A path that fails stops the polling silently.
- STREAM: every subscription sends its initial value, then the sync; ``updates_only`` does
  not skip it. SAMPLE (``sample_interval`` 0 is the 1 s minimum, anything below it fails
  "invalid interval: …") or ON_CHANGE; TARGET_DEFINED fails "unsupported subscription mode".
  A half-closed request side changes nothing.
  - A field path sends its value as ``string_val`` (``""`` while it is absent): ON_CHANGE
    when it changed, SAMPLE at every tick.
  - A table or entry path sends ``{key: fields}`` (a table) or the entry's fields, ``{}``
    when there is none. Its updates follow the keyspace events of the switch's redis (the
    change feed, ``vsonic.changes``), exactly those sonic-gnmi follows: after an ``hset``
    the written entry is read (a table path: ``{key: fields}`` at the table path), and sent
    unless it equals the last one read; after a ``del`` or ``hdel`` a table path sends a
    delete of the table path (no key named) and an entry path sends nothing; other events
    (``hincrby``) are not followed. ON_CHANGE sends each as it comes; SAMPLE keeps them in a
    cache and sends the cache at each tick (a delete as a delete of the path, the key then
    ``{}``), so a SAMPLE is the value the events brought in, not a fresh read;
    ``updates_only`` empties the cache after each tick (``{}`` when nothing came).
- One message per path: sonic-gnmi runs each subscription on a goroutine of its own.

A redis without keyspace events (not started by vsonic) gets the same answers from a re-read
every ``Timing.on_change_poll_s``, each difference standing for the event that caused it.
A stream holds no thread: it waits on the event loop; reads run on the loop's executor.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.answers import Read, entry_json, read_path
from vsonic.changes import feed_for
from vsonic.db import SEPARATORS, Fields, read_table
from vsonic.errors import InvalidRequestError, PathNotFoundError, UnsupportedError
from vsonic.gnmi_codec import elem_names, json_text
from vsonic.gotext import go_duration
from vsonic.paths import DbPath, check_origin, parse_path, request_db
from vsonic.switch import Switch, Targets

NS_PER_S = 1_000_000_000
STREAM = gnmi_pb2.SubscriptionList.Mode.Value("STREAM")
ONCE = gnmi_pb2.SubscriptionList.Mode.Value("ONCE")
POLL = gnmi_pb2.SubscriptionList.Mode.Value("POLL")
SAMPLE = gnmi_pb2.SubscriptionMode.Value("SAMPLE")
ON_CHANGE = gnmi_pb2.SubscriptionMode.Value("ON_CHANGE")
HSET, HDEL, DEL = "hset", "hdel", "del"
QUEUE_DISPOSED = "queue: disposed"  # what sonic-gnmi's send loop ends with once closed
ON_CHANGE_PREFIX = "streamOnChangeSubscription error:  "


@dataclass(frozen=True)
class Timing:
    min_sample_s: float = 1.0  # sonic-gnmi MinSampleInterval
    # sonic-gnmi re-reads an ON_CHANGE field this often; vsonic re-reads every path this
    # often where redis publishes no keyspace events.
    on_change_poll_s: float = 0.2


@dataclass(frozen=True)
class Sub:
    proto_path: Any
    path: DbPath | None  # None: the path failed to parse (``problem`` says why)
    mode: int  # SAMPLE or ON_CHANGE under STREAM; unused under ONCE and POLL
    period_s: float = 0.0
    problem: str | None = None

    @property
    def db_path(self) -> DbPath:
        assert self.path is not None
        return self.path

    @property
    def is_field(self) -> bool:
        return self.db_path.field is not None

    def event_key(self, db: int, rkey: str) -> str | None:
        """The key a keyspace event for ``rkey`` names for this subscription (``""`` for an
        entry path), None when the event is not one it follows (sonic-gnmi psubscribes
        ``TABLE<sep>*`` for a table and ``TABLE<sep>KEY`` for an entry)."""
        path = self.db_path
        if path.db != db or path.table is None:
            return None
        if path.key is not None or path.field is not None:
            return "" if rkey == path.rkey() else None
        prefix = path.table + SEPARATORS[db]
        return rkey[len(prefix) :] if rkey.startswith(prefix) else None


@dataclass(frozen=True)
class Plan:
    switch: Switch
    prefix: Any
    mode: int
    updates_only: bool
    subs: tuple[Sub, ...]
    # A fleet server sends the values due at one moment (the initial values, one tick's
    # samples) in one notification: 576 messages a second per switch is more than one
    # process serving a few hundred switches can send (docs/vsonic.md).
    batched: bool = False

    def following(self, db: int, rkey: str | None) -> list[int]:
        """The subscriptions a keyspace event for ``rkey`` may concern (all: a resync)."""
        if rkey is None:
            return list(range(len(self.subs)))
        table = rkey.partition(SEPARATORS[db])[0]
        return sorted(self._by_key.get((db, rkey), []) + self._by_table.get((db, table), []))

    @cached_property
    def _by_key(self) -> dict[tuple[int, str], list[int]]:
        index: dict[tuple[int, str], list[int]] = {}
        for i, sub in enumerate(self.subs):
            path = sub.path
            if path is not None and path.table is not None and path.key is not None:
                index.setdefault((path.db, path.rkey()), []).append(i)
        return index

    @cached_property
    def _by_table(self) -> dict[tuple[int, str], list[int]]:
        index: dict[tuple[int, str], list[int]] = {}
        for i, sub in enumerate(self.subs):
            path = sub.path
            if path is not None and path.table is not None and path.key is None:
                index.setdefault((path.db, path.table), []).append(i)
        return index


@dataclass
class _State:
    """What one STREAM subscription remembers between events and ticks."""

    last: Any = None  # the last value read after an hset (sonic-gnmi's dedupe) or of a field
    cache: dict[str, Any] = field(default_factory=dict)  # SAMPLE: what the next tick sends
    deleted: bool = False  # SAMPLE: a del/hdel came since the last tick
    seen: dict[str, Fields] = field(default_factory=dict)  # re-reading: the last read


Requests = asyncio.Queue[Any]
_EOF = object()


class SubscribeSession:
    def __init__(
        self,
        targets: Targets,
        wall_ns: Callable[[], int],
        monotonic: Callable[[], float],
        timing: Timing,
    ) -> None:
        self._targets = targets
        self._wall_ns = wall_ns
        self._monotonic = monotonic
        self._timing = timing

    def plan(self, request: Any) -> Plan:
        """What sonic-gnmi checks before it starts: the target, the origin, one database."""
        switch = self._targets.resolve(request.prefix.target)
        if not request.subscription:
            raise PathNotFoundError("Invalid subscription path: No Subscription")
        prefix_elems = elem_names(request.prefix)
        for sub in request.subscription:
            check_origin(sub.path.origin or request.prefix.origin)
        request_db([prefix_elems + elem_names(s.path) for s in request.subscription])
        subs = tuple(self._sub(request, s, switch) for s in request.subscription)
        return Plan(
            switch, request.prefix, request.mode, request.updates_only, subs, self._targets.fleet
        )

    def _sub(self, request: Any, sub: Any, switch: Switch) -> Sub:
        origin = sub.path.origin or request.prefix.origin
        try:
            path = parse_path(origin, elem_names(request.prefix) + elem_names(sub.path))
        except PathNotFoundError as error:
            return Sub(sub.path, None, sub.mode, problem=error.message)
        if request.mode == STREAM and sub.mode == ON_CHANGE and not switch.on_change:
            # A switch whose gNMI server only samples refuses the mode (UNIMPLEMENTED, as for
            # any feature it lacks) rather than pretending to stream changes.
            raise UnsupportedError(f"ON_CHANGE is not supported for {path.text()}")
        period_s = sub.sample_interval / NS_PER_S or self._timing.min_sample_s
        return Sub(sub.path, path, sub.mode, period_s)

    async def run(self, plan: Plan, requests: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
        """The responses of one Subscribe RPC, until it ends (an InvalidRequestError with
        sonic-gnmi's message) or is cancelled."""
        incoming: Requests = asyncio.Queue()
        reader = asyncio.create_task(_read_requests(requests, incoming))
        try:
            if plan.mode == ONCE:
                runner = self._once(plan, incoming)
            elif plan.mode == POLL:
                runner = self._polls(plan, incoming)
            else:
                runner = self._stream(plan)
            async for response in runner:
                yield response
        finally:
            reader.cancel()

    # -- ONCE and POLL ---------------------------------------------------------------------------

    async def _once(self, plan: Plan, incoming: Requests) -> AsyncIterator[Any]:
        for sub in plan.subs:
            try:
                found = await _read(plan.switch, sub)
            except PathNotFoundError as error:
                raise InvalidRequestError(f"OnceRun error: {error.message}") from None
            if found is not None:
                yield self._update(plan, sub.proto_path, _typed(found))
        yield gnmi_pb2.SubscribeResponse(sync_response=True)
        await _closed(incoming, polls_allowed=False)

    async def _polls(self, plan: Plan, incoming: Requests) -> AsyncIterator[Any]:
        had = [False] * len(plan.subs)
        while True:
            failed = False
            for i, sub in enumerate(plan.subs):
                try:
                    found = await _read(plan.switch, sub)
                except PathNotFoundError:
                    failed = True  # sonic-gnmi's PollRun returns: no answer from now on
                    break
                if found is not None:
                    had[i] = True
                    yield self._update(plan, sub.proto_path, _typed(found))
                elif had[i]:
                    had[i] = False
                    yield self._delete(plan, sub.proto_path)
            if failed:
                await _closed(incoming, polls_allowed=True)
            yield gnmi_pb2.SubscribeResponse(sync_response=True)
            request = await incoming.get()
            if request is _EOF or not request.HasField("poll"):
                raise InvalidRequestError(QUEUE_DISPOSED)

    # -- STREAM ----------------------------------------------------------------------------------

    def _check_stream(self, sub: Sub) -> None:
        """What ends a STREAM before its sync (sonic-gnmi ``StreamRun`` and the routines it
        starts)."""
        if sub.mode not in (SAMPLE, ON_CHANGE):
            name = gnmi_pb2.SubscriptionMode.Name(sub.mode)
            raise InvalidRequestError(f"unsupported subscription mode, {name}")
        if sub.mode == SAMPLE and sub.period_s < self._timing.min_sample_s:
            requested = go_duration(round(sub.period_s * NS_PER_S))
            minimum = go_duration(round(self._timing.min_sample_s * NS_PER_S))
            raise InvalidRequestError(
                f"invalid interval: {requested}. It cannot be less than {minimum}"
            )
        if sub.problem is not None:
            prefix = ON_CHANGE_PREFIX if sub.mode == ON_CHANGE else ""
            raise InvalidRequestError(prefix + sub.problem)

    async def _stream(self, plan: Plan) -> AsyncIterator[Any]:
        for sub in plan.subs:
            self._check_stream(sub)
        events: asyncio.Queue[tuple[int, str | None, str]] = asyncio.Queue()
        unwatch = self._watch(plan, events)
        try:
            states = [_State() for _ in plan.subs]
            initial = []
            for sub, state in zip(plan.subs, states, strict=True):
                try:
                    value = await _stream_value(plan.switch, sub, state)
                except PathNotFoundError as error:
                    prefix = ON_CHANGE_PREFIX if sub.mode == ON_CHANGE else ""
                    raise InvalidRequestError(prefix + error.message) from None
                initial.append(self._update(plan, sub.proto_path, _stream_typed(sub, value)))
                if sub.mode == SAMPLE and not sub.is_field and not plan.updates_only:
                    state.cache = dict(value)
            for response in self._sent(plan, initial):
                yield response
            yield gnmi_pb2.SubscribeResponse(sync_response=True)
            async for response in self._follow(plan, states, events, unwatch is None):
                yield response
        finally:
            if unwatch is not None:
                unwatch()

    def _watch(
        self, plan: Plan, events: asyncio.Queue[tuple[int, str | None, str]]
    ) -> Callable[[], None] | None:
        """Hand the feed's events to this stream's loop; None when there is no feed."""
        feed = feed_for(plan.switch.store)
        if feed is None:
            return None
        loop = asyncio.get_running_loop()
        dbs = {s.db_path.db for s in plan.subs}

        def on_event(db: int, rkey: str | None, event: str) -> None:
            if db not in dbs:
                return
            # A server stopped with this stream open closes its loop before the stream can
            # unwatch: the event then has no one to go to.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(events.put_nowait, (db, rkey, event))

        return feed.watch(on_event)

    async def _follow(
        self,
        plan: Plan,
        states: list[_State],
        events: asyncio.Queue[tuple[int, str | None, str]],
        rereading: bool,
    ) -> AsyncIterator[Any]:
        """After the sync: SAMPLE ticks, ON_CHANGE fields re-read, events followed."""
        now = self._monotonic()
        poll_s = self._timing.on_change_poll_s
        due: dict[int, float] = {}
        for i, sub in enumerate(plan.subs):
            if sub.mode == SAMPLE:
                due[i] = now + sub.period_s
            elif rereading:
                due[i] = now + poll_s
        while True:
            wait_s = min(due.values()) - self._monotonic() if due else None
            batch = await _next_events(events, wait_s)
            for db, rkey, event in batch:
                for i in plan.following(db, rkey):
                    sub = plan.subs[i]
                    async for response in self._on_event(plan, sub, states[i], db, rkey, event):
                        yield response
            now = self._monotonic()
            ticked = []
            for i in [i for i, at in due.items() if at <= now]:
                sub, state = plan.subs[i], states[i]
                due[i] = now + (sub.period_s if sub.mode == SAMPLE else poll_s)
                if rereading and not sub.is_field and sub.db_path.table is not None:
                    for db, rkey, event in await _reread(plan.switch, sub, state):
                        async for response in self._on_event(plan, sub, state, db, rkey, event):
                            ticked.append(response)
                if sub.is_field:
                    before = state.last
                    value = await _stream_value(plan.switch, sub, state)
                    if sub.mode == SAMPLE or value != before:
                        ticked.append(self._update(plan, sub.proto_path, _stream_typed(sub, value)))
                elif sub.mode == SAMPLE:
                    ticked.extend(self._tick(plan, sub, state))
            for response in self._sent(plan, ticked):
                yield response

    async def _on_event(
        self, plan: Plan, sub: Sub, state: _State, db: int, rkey: str | None, event: str
    ) -> AsyncIterator[Any]:
        """What one keyspace event means for one subscription."""
        path = sub.db_path
        if path.table is None or db != path.db:
            return
        if sub.is_field:  # any write to its entry (sonic-gnmi re-reads a field every 200 ms)
            if sub.mode == ON_CHANGE and (rkey is None or sub.event_key(db, rkey) is not None):
                before = state.last
                value = await _stream_value(plan.switch, sub, state)
                if value != before:
                    yield self._update(plan, sub.proto_path, _stream_typed(sub, value))
            return
        if rkey is None:  # the feed reconnected: whatever changed meanwhile, read it again
            for held in await asyncio.to_thread(_current_keys, plan.switch, sub):
                async for response in self._on_event(plan, sub, state, db, _rkey(sub, held), HSET):
                    yield response
            return
        key = sub.event_key(db, rkey)
        if key is None:
            return
        if event in (DEL, HDEL):
            if sub.db_path.key is not None:
                return  # an entry path: sonic-gnmi sends nothing
            if sub.mode == ON_CHANGE:
                yield self._delete(plan, sub.proto_path)
            else:
                state.cache[key] = {}
                state.deleted = True
            return
        if event != HSET:
            return
        fields = await asyncio.to_thread(plan.switch.store.read_hash, db, rkey)
        entry = entry_json(fields or {})
        value = entry if sub.db_path.key is not None else {key: entry}
        if value == state.last:
            return
        state.last = value
        if sub.mode == ON_CHANGE:
            yield self._update(plan, sub.proto_path, _stream_typed(sub, value))
        else:
            state.cache.update(value)

    def _tick(self, plan: Plan, sub: Sub, state: _State) -> list[Any]:
        """A SAMPLE tick of a table or entry path: the cache (a pending delete alone)."""
        if state.deleted:
            state.deleted = False
            sent = [self._delete(plan, sub.proto_path)]
        else:
            sent = [self._update(plan, sub.proto_path, _stream_typed(sub, state.cache))]
        if plan.updates_only:
            state.cache = {}
        return sent

    # -- messages --------------------------------------------------------------------------------

    def _sent(self, plan: Plan, responses: list[Any]) -> list[Any]:
        """The responses due at one moment as sent: one each, or in a fleet one notification
        holding all their updates and deletes (``Plan.batched``)."""
        if not plan.batched or len(responses) < 2:
            return responses
        merged = self._note(plan)
        for response in responses:
            merged.update.update.extend(response.update.update)
            merged.update.delete.extend(response.update.delete)
        return [merged]

    def _note(self, plan: Plan) -> Any:
        response = gnmi_pb2.SubscribeResponse()
        response.update.timestamp = self._wall_ns()
        response.update.prefix.CopyFrom(plan.prefix)
        return response

    def _update(self, plan: Plan, proto_path: Any, value: Any) -> Any:
        response = self._note(plan)
        update = response.update.update.add()
        update.path.CopyFrom(proto_path)
        update.val.CopyFrom(value)
        return response

    def _delete(self, plan: Plan, proto_path: Any) -> Any:
        response = self._note(plan)
        response.update.delete.add().CopyFrom(proto_path)
        return response


async def _read_requests(requests: AsyncIterator[Any], incoming: Requests) -> None:
    """Every request after the first, then ``_EOF`` when the client half-closes."""
    with contextlib.suppress(Exception):  # a cancelled or broken call: the RPC is over
        async for request in requests:
            incoming.put_nowait(request)
    incoming.put_nowait(_EOF)


async def _closed(incoming: Requests, polls_allowed: bool) -> None:
    """Wait for the client to end the request side (or, where Polls are not expected, send
    anything), then end as sonic-gnmi does once its queue is disposed."""
    while True:
        request = await incoming.get()
        if request is _EOF or not (polls_allowed and request.HasField("poll")):
            raise InvalidRequestError(QUEUE_DISPOSED)


async def _next_events(
    events: asyncio.Queue[tuple[int, str | None, str]], timeout_s: float | None
) -> list[tuple[int, str | None, str]]:
    """The events queued now, waiting up to ``timeout_s`` for the first."""
    try:
        wait_s = None if timeout_s is None else max(0.0, timeout_s)
        # asyncio.timeout, not wait_for, which in Python 3.11 loses a cancel that lands as
        # the first event arrives (the stream then runs on after its client left).
        async with asyncio.timeout(wait_s):
            first = await events.get()
    except TimeoutError:
        return []
    batch = [first]
    with contextlib.suppress(asyncio.QueueEmpty):
        while True:  # everything already queued: one script writes many keys
            batch.append(events.get_nowait())
    return batch


async def _read(switch: Switch, sub: Sub) -> Read | None:
    """A ONCE or POLL path's value, read off the event loop (a store may block on Redis)."""
    if sub.problem is not None:
        raise PathNotFoundError(sub.problem)
    return await asyncio.to_thread(read_path, switch.store, sub.db_path)


async def _stream_value(switch: Switch, sub: Sub, state: _State) -> Any:
    """A STREAM path's value now: a field's string (``""`` when absent), else the JSON."""
    return await asyncio.to_thread(_stream_read, switch, sub, state)


def _stream_read(switch: Switch, sub: Sub, state: _State) -> Any:
    path = sub.db_path
    if path.field is not None:
        fields = switch.store.read_hash(path.db, path.rkey()) or {}
        value = fields.get(path.field, "")
        state.last = value
        return value
    if path.key is not None:
        entry = switch.store.read_hash(path.db, path.rkey())
        state.seen = {} if entry is None else {"": entry}
        return entry_json(entry or {})
    found = read_path(switch.store, path)
    if path.table is not None:
        state.seen = read_table(switch.store, path.db, path.table)
    return {} if found is None else found.json


def _current_keys(switch: Switch, sub: Sub) -> list[str]:
    path = sub.db_path
    if path.key is not None:
        return [""]
    return sorted(read_table(switch.store, path.db, str(path.table)))


def _rkey(sub: Sub, key: str) -> str:
    path = sub.db_path
    return path.rkey() if path.key is not None else f"{path.table}{SEPARATORS[path.db]}{key}"


async def _reread(switch: Switch, sub: Sub, state: _State) -> list[tuple[int, str, str]]:
    """Without a change feed: the events that turn the last read into this one."""
    path = sub.db_path

    def read() -> dict[str, Fields]:
        if path.key is not None:
            fields = switch.store.read_hash(path.db, path.rkey())
            return {} if fields is None else {"": fields}
        return read_table(switch.store, path.db, str(path.table))

    now = await asyncio.to_thread(read)
    events = [
        (path.db, _rkey(sub, key), HSET)
        for key, fields in now.items()
        if state.seen.get(key) != fields
    ]
    events += [(path.db, _rkey(sub, key), DEL) for key in state.seen.keys() - now.keys()]
    state.seen = now
    return events


def _typed(found: Read) -> Any:
    return found.typed_value(json_text(found.json) if found.proto is None else b"")


def _stream_typed(sub: Sub, value: Any) -> Any:
    if sub.is_field:
        return gnmi_pb2.TypedValue(string_val=value)
    return gnmi_pb2.TypedValue(json_ietf_val=json_text(value))
