"""gNMI Subscribe as sonic-gnmi's MixedDbClient serves it, on asyncio (sonic-gnmi
gnmi_server/client_subscribe.go).

- ONCE: the current value of every path, then ``sync_response``, then the stream ends.
- POLL: the same, then again for every Poll the client sends.
- STREAM: each subscription is SAMPLE (every ``sample_interval``; 0 means the 1 s minimum,
  anything below 1 s is refused) or ON_CHANGE; TARGET_DEFINED is refused with sonic-gnmi's
  "unsupported subscription mode". ``updates_only`` skips the initial values. The SAMPLE
  subscriptions due at one tick are sent as one Notification with an Update each (gNMI's
  Notification carries a list of updates under one timestamp), and so are the initial values
  of every subscription: a collector subscribed to every queue and port counter object of a
  switch gets one message a second, not 576, which is what lets one server process offer a
  few hundred switches' counters.

ON_CHANGE follows writes: the switch's change feed (``vsonic.changes``: Redis keyspace
notifications, as sonic-gnmi uses for table and key paths, or a fleet switch's in-memory
change log) names each key written, and only the subscriptions that cover it are read again.
Only a Redis without keyspace notifications falls back to re-reading every
``Timing.on_change_poll_s``. A table subscription reports each changed entry at
``<table>/<key>`` and each removed entry as a delete, as sonic-gnmi does. A field subscription
carries the value as ``string_val``, like sonic-gnmi's field subscriber.

A stream holds no thread: it waits on the event loop; reads run on the loop's executor.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.changes import feed_for
from vsonic.db import SEPARATORS, redis_key
from vsonic.errors import InvalidRequestError, PathNotFoundError, UnsupportedError
from vsonic.gnmi_codec import (
    JSON_IETF,
    check_encoding,
    child_path,
    db_path,
    json_text,
    notification,
    typed_json,
)
from vsonic.paths import DbPath
from vsonic.switch import Switch, Targets

NS_PER_S = 1_000_000_000
STREAM = gnmi_pb2.SubscriptionList.Mode.Value("STREAM")
ONCE = gnmi_pb2.SubscriptionList.Mode.Value("ONCE")
POLL = gnmi_pb2.SubscriptionList.Mode.Value("POLL")
SAMPLE = gnmi_pb2.SubscriptionMode.Value("SAMPLE")
ON_CHANGE = gnmi_pb2.SubscriptionMode.Value("ON_CHANGE")


@dataclass(frozen=True)
class Timing:
    min_sample_s: float = 1.0  # sonic-gnmi MinSampleInterval
    on_change_poll_s: float = 0.2  # the re-read period when no change feed exists


@dataclass(frozen=True)
class Sub:
    proto_path: Any
    path: DbPath
    mode: int
    period_s: float
    suppress_redundant: bool

    def covers(self, db: int, rkey: str) -> bool:
        """True when a write to ``rkey`` in ``db`` may change this subscription's value."""
        path = self.path
        if path.db != db or path.table is None:
            return False
        if rkey == path.table:  # a key-less hash (COUNTERS_DB name maps)
            return True
        if path.key is None:
            return rkey.startswith(path.table + SEPARATORS[db])
        return rkey == redis_key(db, path.table, path.key)


@dataclass(frozen=True)
class Plan:
    switch: Switch
    prefix: Any
    mode: int
    encoding: int
    updates_only: bool
    subs: tuple[Sub, ...]


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
        """Check a SubscriptionList the way sonic-gnmi does before any data is sent."""
        encoding = check_encoding(request.encoding)
        switch = self._targets.resolve(request.prefix.target)
        if not request.subscription:
            raise InvalidRequestError("the SubscriptionList has no subscription")
        subs = tuple(self._sub(request, s, switch) for s in request.subscription)
        for sub in subs:
            _snapshot(switch, sub.path)  # refuses unreadable paths (a whole COUNTERS_DB) up front
        return Plan(switch, request.prefix, request.mode, encoding, request.updates_only, subs)

    def _sub(self, request: Any, sub: Any, switch: Switch) -> Sub:
        path = db_path(request.prefix, sub.path)
        if request.mode != STREAM:
            return Sub(sub.path, path, sub.mode, 0.0, False)
        if sub.mode == ON_CHANGE and not switch.on_change:
            # A switch whose gNMI server only samples refuses the mode (UNIMPLEMENTED, as for
            # any feature it lacks) rather than pretending to stream changes.
            raise UnsupportedError(f"ON_CHANGE is not supported for {path.text()}")
        if sub.mode == ON_CHANGE:
            return Sub(sub.path, path, ON_CHANGE, self._timing.on_change_poll_s, False)
        if sub.mode != SAMPLE:
            name = gnmi_pb2.SubscriptionMode.Name(sub.mode)
            raise InvalidRequestError(f"unsupported subscription mode, {name}")
        period_s = sub.sample_interval / NS_PER_S or self._timing.min_sample_s
        if period_s < self._timing.min_sample_s:
            raise InvalidRequestError(
                f"invalid sample_interval {sub.sample_interval} ns for {path.text()}: "
                f"minimum is {self._timing.min_sample_s:g} s "
                f"({int(self._timing.min_sample_s * NS_PER_S)} ns)"
            )
        return Sub(sub.path, path, SAMPLE, period_s, sub.suppress_redundant)

    async def run(self, plan: Plan, requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The responses of one Subscribe RPC, until it ends or is cancelled."""
        changes: asyncio.Queue[tuple[int, str | None]] = asyncio.Queue()
        unwatch = self._watch(plan, changes)
        try:
            values = await _read(plan.switch, plan.subs)
            if not plan.updates_only:
                for response in self._current(plan, values):
                    yield response
            yield gnmi_pb2.SubscribeResponse(sync_response=True)
            if plan.mode == POLL:
                async for response in self._polls(plan, requests):
                    yield response
            elif plan.mode == STREAM:
                polling = unwatch is None
                async for response in self._stream(plan, values, changes, polling):
                    yield response
        finally:
            if unwatch is not None:
                unwatch()

    def _watch(
        self, plan: Plan, changes: asyncio.Queue[tuple[int, str | None]]
    ) -> Callable[[], None] | None:
        """Hand the feed's keys to this stream's loop; None when there is no feed."""
        if plan.mode != STREAM or not any(s.mode == ON_CHANGE for s in plan.subs):
            return lambda: None
        feed = feed_for(plan.switch.store)
        if feed is None:
            return None
        loop = asyncio.get_running_loop()
        dbs = {s.path.db for s in plan.subs if s.mode == ON_CHANGE}

        def on_change(db: int, rkey: str | None) -> None:
            if db in dbs:
                loop.call_soon_threadsafe(changes.put_nowait, (db, rkey))

        return feed.watch(on_change)

    def _current(self, plan: Plan, values: Sequence[Any]) -> list[Any]:
        """Every subscription's current value (those that have one) in one notification: a
        collector's 579 subscriptions cost one message at (re)subscribe, not 579."""
        response = self._empty_response(plan)
        for sub, value in zip(plan.subs, values, strict=True):
            if value is not None:
                _add_update(response.update, sub.proto_path, value, plan.encoding)
        return [response] if response.update.update else []

    def _response(self, plan: Plan, updates: list[Any], deletes: list[Any]) -> Any:
        note = notification(self._wall_ns, plan.prefix, updates, deletes)
        return gnmi_pb2.SubscribeResponse(update=note)

    async def _polls(self, plan: Plan, requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for request in requests:
            if not request.HasField("poll"):
                continue
            for response in self._current(plan, await _read(plan.switch, plan.subs)):
                yield response
            yield gnmi_pb2.SubscribeResponse(sync_response=True)

    async def _stream(
        self,
        plan: Plan,
        values: list[Any],
        changes: asyncio.Queue[tuple[int, str | None]],
        polling: bool,
    ) -> AsyncIterator[Any]:
        """SAMPLE subscriptions on their schedule; ON_CHANGE ones when a key they cover is
        written (or on the re-read schedule when ``polling``)."""
        last = list(values)
        timed = [i for i, s in enumerate(plan.subs) if s.mode == SAMPLE or polling]
        watched = [i for i, s in enumerate(plan.subs) if s.mode == ON_CHANGE]
        due = {i: self._monotonic() + plan.subs[i].period_s for i in timed}
        while True:
            dirty = await self._wait(plan, due, changes, watched)
            now = self._monotonic()
            for i in timed:
                if due[i] <= now:
                    due[i] = now + plan.subs[i].period_s
                    dirty.add(i)
            if not dirty:
                continue
            order = sorted(dirty)
            current = await _read(plan.switch, [plan.subs[i] for i in order])
            samples = self._empty_response(plan)
            for i, value in zip(order, current, strict=True):
                sub, old = plan.subs[i], last[i]
                last[i] = value
                if sub.mode == SAMPLE:
                    if value is not None and not (sub.suppress_redundant and value == old):
                        _add_update(samples.update, sub.proto_path, value, plan.encoding)
                    continue
                response = self._on_change(plan, sub, old, value)
                if response is not None:
                    yield response
            if samples.update.update:
                yield samples

    async def _wait(
        self,
        plan: Plan,
        due: dict[int, float],
        changes: asyncio.Queue[tuple[int, str | None]],
        watched: list[int],
    ) -> set[int]:
        """Wait for the next due sample or written key; the subscriptions a key covers."""
        timeout = max(0.0, min(due.values()) - self._monotonic()) if due else None
        dirty: set[int] = set()
        try:
            first = await asyncio.wait_for(changes.get(), timeout)
        except TimeoutError:
            return dirty
        batch = [first]
        with contextlib.suppress(asyncio.QueueEmpty):
            while True:  # everything already queued: one MULTI/EXEC writes many keys
                batch.append(changes.get_nowait())
        for db, rkey in batch:
            for i in watched:
                if rkey is None or plan.subs[i].covers(db, rkey):
                    dirty.add(i)
        return dirty

    def _empty_response(self, plan: Plan) -> Any:
        """A response with no update yet, stamped now; updates are added to it in place (no
        copy per update)."""
        response = gnmi_pb2.SubscribeResponse()
        response.update.timestamp = self._wall_ns()
        response.update.prefix.CopyFrom(plan.prefix)
        return response

    def _on_change(self, plan: Plan, sub: Sub, old: Any, new: Any) -> Any:
        """The response an ON_CHANGE subscription (or a polled one) owes for ``old`` -> ``new``;
        None when nothing changed."""
        if new == old:
            return None
        updates, deletes = _changes(sub, old, new, plan.encoding)
        return self._response(plan, updates, deletes)


async def _read(switch: Switch, subs: Sequence[Sub]) -> list[Any]:
    """Current values of ``subs``, read off the event loop (a store may block on Redis)."""
    return await asyncio.to_thread(lambda: [_snapshot(switch, s.path) for s in subs])


def _snapshot(switch: Switch, path: DbPath) -> Any:
    """The value at ``path``, or None while the entry or field does not exist."""
    try:
        return switch.read(path)
    except PathNotFoundError:
        return None


def _update(proto_path: Any, value: Any, encoding: int) -> Any:
    if isinstance(value, str):
        return gnmi_pb2.Update(path=proto_path, val=gnmi_pb2.TypedValue(string_val=value))
    return gnmi_pb2.Update(path=proto_path, val=typed_json(value, encoding))


def _add_update(note: Any, proto_path: Any, value: Any, encoding: int) -> None:
    """``_update``'s Update, built inside ``note`` (a field's value as ``string_val``)."""
    update = note.update.add()
    update.path.CopyFrom(proto_path)
    if isinstance(value, str):
        update.val.string_val = value
    elif encoding == JSON_IETF:
        update.val.json_ietf_val = json_text(value)
    else:
        update.val.json_val = json_text(value)


def _changes(sub: Sub, old: Any, new: Any, encoding: int) -> tuple[list[Any], list[Any]]:
    """Updates and deletes that turn ``old`` into ``new``; per entry for a table path."""
    is_table = sub.path.table is not None and sub.path.key is None
    if not is_table or not isinstance(old, dict) or not isinstance(new, dict):
        if new is None:
            return [], [sub.proto_path]
        return [_update(sub.proto_path, new, encoding)], []
    updates = [
        _update(child_path(sub.proto_path, key), value, encoding)
        for key, value in sorted(new.items())
        if old.get(key) != value
    ]
    deletes = [child_path(sub.proto_path, key) for key in sorted(old.keys() - new.keys())]
    return updates, deletes
