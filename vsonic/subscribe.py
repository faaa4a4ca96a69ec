"""gNMI Subscribe as sonic-gnmi's MixedDbClient serves it (facts §3.5).

- ONCE: the current value of every path, then ``sync_response``, then the stream ends.
- POLL: the same, then again for every Poll the client sends.
- STREAM: each subscription is SAMPLE (every ``sample_interval``; 0 means the 1 s minimum,
  anything below 1 s is refused) or ON_CHANGE; TARGET_DEFINED is refused with sonic-gnmi's
  "unsupported subscription mode". ``updates_only`` skips the initial values.

ON_CHANGE is found by re-reading the path every ``Timing.on_change_poll_s`` (sonic-gnmi
checks single fields every 200 ms; for tables it uses keyspace notifications, which would
tie vsonic to Redis and not work in fleet mode). A table subscription reports each changed
entry at ``<table>/<key>`` and each removed entry as a delete, as sonic-gnmi does. A field
subscription carries the value as ``string_val``, like sonic-gnmi's field subscriber.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.errors import InvalidRequestError, PathNotFoundError
from vsonic.gnmi_codec import check_encoding, child_path, db_path, notification, typed_json
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
    on_change_poll_s: float = 0.2  # sonic-gnmi's ON_CHANGE check period for a field


@dataclass(frozen=True)
class Sub:
    proto_path: Any
    path: DbPath
    mode: int
    period_s: float
    suppress_redundant: bool


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
        return Plan(switch, request.prefix, request.mode, encoding, request.updates_only, subs)

    def _sub(self, request: Any, sub: Any, switch: Switch) -> Sub:
        path = db_path(request.prefix, sub.path)
        _snapshot(switch, path)  # refuses unreadable paths (a whole COUNTERS_DB) up front
        if request.mode != STREAM:
            return Sub(sub.path, path, sub.mode, 0.0, False)
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

    def run(self, plan: Plan, requests: Iterator[Any], stop: threading.Event) -> Iterator[Any]:
        """The responses of one Subscribe RPC, until it ends or ``stop`` is set."""
        values = [_snapshot(plan.switch, s.path) for s in plan.subs]
        if not plan.updates_only:
            yield from self._current(plan, values)
        yield gnmi_pb2.SubscribeResponse(sync_response=True)
        if plan.mode == POLL:
            yield from self._polls(plan, requests, stop)
        elif plan.mode == STREAM:
            yield from self._stream(plan, values, stop)

    def _current(self, plan: Plan, values: list[Any]) -> Iterator[Any]:
        for sub, value in zip(plan.subs, values, strict=True):
            if value is not None:
                yield self._response(plan, [_update(sub.proto_path, value, plan.encoding)], [])

    def _response(self, plan: Plan, updates: list[Any], deletes: list[Any]) -> Any:
        note = notification(self._wall_ns, plan.prefix, updates, deletes)
        return gnmi_pb2.SubscribeResponse(update=note)

    def _polls(self, plan: Plan, requests: Iterator[Any], stop: threading.Event) -> Iterator[Any]:
        polls: queue.Queue[bool] = queue.Queue()
        reader = threading.Thread(target=_read_polls, args=(requests, polls), daemon=True)
        reader.start()
        while not stop.is_set():
            try:
                more = polls.get(timeout=self._timing.on_change_poll_s)
            except queue.Empty:
                continue
            if not more:
                return
            yield from self._current(plan, [_snapshot(plan.switch, s.path) for s in plan.subs])
            yield gnmi_pb2.SubscribeResponse(sync_response=True)

    def _stream(self, plan: Plan, values: list[Any], stop: threading.Event) -> Iterator[Any]:
        last = list(values)
        due = [self._monotonic() + s.period_s for s in plan.subs]
        while not stop.is_set():
            wait_s = min(due) - self._monotonic()
            if wait_s > 0 and stop.wait(wait_s):
                return
            now = self._monotonic()
            for i, sub in enumerate(plan.subs):
                if due[i] > now:
                    continue
                due[i] = now + sub.period_s
                current = _snapshot(plan.switch, sub.path)
                if sub.mode == SAMPLE:
                    unchanged = sub.suppress_redundant and current == last[i]
                    if current is not None and not unchanged:
                        update = _update(sub.proto_path, current, plan.encoding)
                        yield self._response(plan, [update], [])
                elif current != last[i]:
                    updates, deletes = _changes(sub, last[i], current, plan.encoding)
                    yield self._response(plan, updates, deletes)
                last[i] = current


def _read_polls(requests: Iterator[Any], polls: queue.Queue[bool]) -> None:
    try:
        for request in requests:
            if request.HasField("poll"):
                polls.put(True)
    except Exception:  # the client hung up or cancelled: the stream ends either way
        pass
    finally:
        polls.put(False)


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
