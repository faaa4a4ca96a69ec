"""Subscribe on origin ``openconfig``: what a switch that speaks OpenConfig streams of its
``/qos`` tree, its configuration and its queue counters (docs/vsonic.md, "OpenConfig").

A target that speaks OpenConfig streams its queues' counters as the leaves of
``/qos/interfaces/interface[interface-id=<port>]/output/queues/queue[name=<queue>]/state``
(openconfig-qos-interfaces). vsonic holds one set of counters per switch, SONiC's
(``COUNTERS:<oid>`` in COUNTERS_DB, written by the data plane or a test), so the OpenConfig
side reads those: each queue the switch's ``/qos`` tree configures on a port
(``interfaces/interface/output/queues/queue``), by its ``queue-id``
(``queues/queue/config/queue-id``) through ``COUNTERS_QUEUE_NAME_MAP``, its SAI statistics
under the model's leaf names (``LEAVES``). A queue that has no counters is not sent.

What is served: STREAM, SAMPLE (at ``Timing.min_sample_s`` at least) and ON_CHANGE, and
ONCE. A path at or under ``/qos/interfaces/interface/output/queues/queue/state``, or above it
down from ``/qos/interfaces``, is the counters (``StateSub``): each one leaf at its full path,
a ``uint_val`` (a counter64). Any other path under ``/qos`` without a ``state`` element is the
configuration (``ConfigSub``): each node of the tree it matches, its JSON at its full path,
and a node gone as a delete (what the drift watch subscribes to). Keys given or ``*``. The
updates due at one moment share a notification. ON_CHANGE sends what moved, read every
``Timing.on_change_poll_s`` (no change feed: the switch is read again); SAMPLE sends all at
each tick.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.db import COUNTERS_DB, redis_key
from vsonic.errors import InvalidPathError, InvalidRequestError, UnsupportedError
from vsonic.gnmi_codec import json_text, keyed_elems
from vsonic.openconfig import MODULE, TOP, Elem, _text
from vsonic.subscribe import NS_PER_S, ON_CHANGE, ONCE, SAMPLE, STREAM
from vsonic.switch import Switch

LEAVES = {
    "SAI_QUEUE_STAT_PACKETS": "transmit-pkts",
    "SAI_QUEUE_STAT_BYTES": "transmit-octets",
    "SAI_QUEUE_STAT_DROPPED_PACKETS": "dropped-pkts",
    "SAI_QUEUE_STAT_DROPPED_BYTES": "dropped-octets",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "ecn-marked-pkts",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "ecn-marked-octets",
}
"""A SAI queue statistic -> the openconfig-qos queue state leaf that counts the same."""

# The state path, each element with the key its list is named by ("" for a container).
_STATE_PATH = (
    ("qos", ""),
    ("interfaces", ""),
    ("interface", "interface-id"),
    ("output", ""),
    ("queues", ""),
    ("queue", "name"),
    ("state", ""),
)

QueueLeaves = dict[tuple[str, str], dict[str, int]]
"""(port, queue name) -> leaf -> counter."""
Concrete = tuple[Elem, ...]
"""A path from ``/qos`` with every list key given."""
Json = dict[str, Any]


@dataclass(frozen=True)
class StateSub:
    """One subscription: the port and queue it names (None: every one), the leaf (None:
    every leaf), its mode and period."""

    port: str | None
    queue: str | None
    leaf: str | None
    mode: int
    period_s: float

    def takes(self, port: str, queue: str, leaf: str) -> bool:
        return (
            self.port in (None, port) and self.queue in (None, queue) and self.leaf in (None, leaf)
        )


def _unqualified(name: str) -> str:
    return name.rpartition(":")[2]


def _key(keys: tuple[tuple[str, str], ...], name: str) -> str | None:
    value = dict(keys).get(name)
    return None if value in (None, "*") else value


def state_sub(path: Sequence[Elem], mode: int, period_s: float) -> StateSub:
    """A subscription's path as what it selects; ``InvalidPathError`` for a path that is
    not queue state (vsonic streams no other OpenConfig state)."""
    names = [(_unqualified(name), keys) for name, keys in path]
    if len(names) < 2 or len(names) > len(_STATE_PATH) + 1:
        raise InvalidPathError(_refused(path))
    selected: dict[str, str | None] = {"interface-id": None, "name": None}
    for (name, keys), (expected, key) in zip(names, _STATE_PATH, strict=False):
        if name != expected or any(k != key for k, _ in keys):
            raise InvalidPathError(_refused(path))
        if key:
            selected[key] = _key(keys, key)
    leaf = names[len(_STATE_PATH)][0] if len(names) > len(_STATE_PATH) else None
    if leaf is not None and (leaf not in LEAVES.values() or names[-1][1]):
        raise InvalidPathError(_refused(path))
    return StateSub(selected["interface-id"], selected["name"], leaf, mode, period_s)


def _refused(path: Sequence[Elem]) -> str:
    shown = "/".join(name for name, _ in path)
    return (
        f"origin openconfig: vsonic streams /{TOP}/interfaces/interface/output/queues/queue/"
        f"state and the configuration under /{TOP} only, not /{shown}"
    )


def queue_leaves(switch: Switch, tree: Json) -> QueueLeaves:
    """Each interface queue ``tree`` configures, its counters now as openconfig-qos state
    leaves."""
    queue_ids = {
        str(q.get("name")): q.get("config", {}).get("queue-id")
        for q in tree.get("queues", {}).get("queue", [])
    }
    names = switch.store.read_hash(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP") or {}
    out: QueueLeaves = {}
    for interface in tree.get("interfaces", {}).get("interface", []):
        port = str(interface.get("interface-id"))
        for queue in interface.get("output", {}).get("queues", {}).get("queue", []):
            oid = names.get(f"{port}:{queue_ids.get(str(queue.get('name')))}")
            if oid is None:
                continue
            counters = switch.store.read_hash(COUNTERS_DB, redis_key(COUNTERS_DB, "COUNTERS", oid))
            leaves = {
                leaf: int(counters[stat])
                for stat, leaf in LEAVES.items()
                if counters is not None and counters.get(stat, "").isdigit()
            }
            if leaves:
                out[(port, str(queue["name"]))] = leaves
    return out


@dataclass(frozen=True)
class Snapshot:
    """The switch at one moment: its ``/qos`` tree and its queues' counters."""

    tree: Json
    leaves: QueueLeaves


def snapshot(switch: Switch) -> Snapshot:
    tree = switch.openconfig.document()[f"{MODULE}:{TOP}"]
    return Snapshot(tree, queue_leaves(switch, tree))


def _leaf_path(port: str, queue: str, leaf: str) -> Concrete:
    return (
        (TOP, ()),
        ("interfaces", ()),
        ("interface", (("interface-id", port),)),
        ("output", ()),
        ("queues", ()),
        ("queue", (("name", queue),)),
        ("state", ()),
        (leaf, ()),
    )


def state_values(sub: StateSub, now: Snapshot) -> dict[Concrete, Any]:
    return {
        _leaf_path(port, queue, leaf): value
        for (port, queue), leaves in now.leaves.items()
        for leaf, value in leaves.items()
        if sub.takes(port, queue, leaf)
    }


@dataclass(frozen=True)
class ConfigSub:
    """A path into the ``/qos`` tree, a list's key given or ``*``: every node it matches."""

    pattern: tuple[Elem, ...]  # below /qos
    mode: int
    period_s: float


def config_sub(path: Sequence[Elem], mode: int, period_s: float) -> ConfigSub:
    """A path into the configuration (no ``state`` element); ``InvalidPathError`` else."""
    names = tuple((_unqualified(name), keys) for name, keys in path)
    if not names or names[0] != (TOP, ()) or any(name == "state" for name, _ in names):
        raise InvalidPathError(_refused(path))
    return ConfigSub(names[1:], mode, period_s)


def _matches(node: Any, pattern: tuple[Elem, ...], at: Concrete) -> Iterator[tuple[Concrete, Any]]:
    if not pattern:
        yield at, node
        return
    (name, keys), rest = pattern[0], pattern[1:]
    if not isinstance(node, dict) or name not in node:
        return
    child = node[name]
    if not keys:
        yield from _matches(child, rest, (*at, (name, ())))
        return
    for item in child if isinstance(child, list) else ():
        if isinstance(item, dict) and all(v == "*" or _text(item.get(k)) == v for k, v in keys):
            concrete = tuple((k, _text(item.get(k))) for k, _ in keys)
            yield from _matches(item, rest, (*at, (name, concrete)))


def config_values(sub: ConfigSub, now: Snapshot) -> dict[Concrete, Any]:
    return dict(_matches(now.tree, sub.pattern, ((TOP, ()),)))


Sub = StateSub | ConfigSub


def _values(sub: Sub, now: Snapshot) -> dict[Concrete, Any]:
    return state_values(sub, now) if isinstance(sub, StateSub) else config_values(sub, now)


def _path(concrete: Concrete) -> Any:
    return gnmi_pb2.Path(
        elem=[gnmi_pb2.PathElem(name=name, key=dict(keys)) for name, keys in concrete]
    )


def _typed(value: Any) -> Any:
    """A counter as a ``uint_val`` (counter64); anything else as JSON_IETF text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return gnmi_pb2.TypedValue(uint_val=value)
    return gnmi_pb2.TypedValue(json_ietf_val=json_text(value))


class OpenConfigStream:
    """One Subscribe on origin ``openconfig`` (the module docstring)."""

    def __init__(
        self,
        switch: Switch,
        request: Any,
        wall_ns: Callable[[], int],
        min_sample_s: float,
        poll_s: float,
    ) -> None:
        if request.mode not in (STREAM, ONCE):
            name = gnmi_pb2.SubscriptionList.Mode.Name(request.mode)
            raise UnsupportedError(f"origin openconfig: vsonic serves STREAM and ONCE, not {name}")
        self._switch = switch
        self._request = request
        self._wall_ns = wall_ns
        self._poll_s = poll_s
        self.subs = tuple(self._sub(s, min_sample_s) for s in request.subscription)

    def _sub(self, sub: Any, min_sample_s: float) -> Sub:
        if self._request.mode == STREAM:
            if sub.mode not in (SAMPLE, ON_CHANGE):
                name = gnmi_pb2.SubscriptionMode.Name(sub.mode)
                raise InvalidRequestError(f"unsupported subscription mode, {name}")
            if sub.mode == ON_CHANGE and not self._switch.on_change:
                raise UnsupportedError("ON_CHANGE is not supported for origin openconfig")
        period_s = max(sub.sample_interval / NS_PER_S, min_sample_s)
        path = keyed_elems(self._request.prefix, sub.path)
        try:
            return state_sub(path, sub.mode, period_s)
        except InvalidPathError:
            return config_sub(path, sub.mode, period_s)

    def _note(self, updates: Mapping[Concrete, Any], deletes: Iterable[Concrete] = ()) -> Any:
        response = gnmi_pb2.SubscribeResponse()
        response.update.timestamp = self._wall_ns()
        response.update.prefix.CopyFrom(self._request.prefix)
        for concrete, value in sorted(updates.items()):
            update = response.update.update.add()
            update.path.CopyFrom(_path(concrete))
            update.val.CopyFrom(_typed(value))
        for concrete in sorted(deletes):
            response.update.delete.add().CopyFrom(_path(concrete))
        return response

    async def run(self) -> AsyncGenerator[Any, None]:
        """The initial values, the sync, then (STREAM) the updates; a ONCE stays open after
        its sync. Either runs until the client ends the call (it is cancelled)."""
        loop = asyncio.get_running_loop()
        now = await asyncio.to_thread(snapshot, self._switch)
        last = [_values(sub, now) for sub in self.subs]
        initial = {path: value for values in last for path, value in values.items()}
        if initial:
            yield self._note(initial)
        yield gnmi_pb2.SubscribeResponse(sync_response=True)
        if self._request.mode == ONCE:
            await asyncio.Event().wait()
        due = {i: loop.time() + self._period(s) for i, s in enumerate(self.subs)}
        while True:
            await asyncio.sleep(max(0.0, min(due.values()) - loop.time()))
            ready = [i for i, at in due.items() if at <= loop.time()]
            now = await asyncio.to_thread(snapshot, self._switch)
            updates: dict[Concrete, Any] = {}
            deletes: set[Concrete] = set()
            for i in ready:
                sub = self.subs[i]
                due[i] = loop.time() + self._period(sub)
                current = _values(sub, now)
                if sub.mode == SAMPLE:
                    updates.update(current)
                else:
                    updates.update((p, v) for p, v in current.items() if last[i].get(p) != v)
                    deletes |= last[i].keys() - current.keys()
                last[i] = current
            if updates or deletes:
                yield self._note(updates, deletes)

    def _period(self, sub: Sub) -> float:
        return sub.period_s if sub.mode == SAMPLE else self._poll_s
