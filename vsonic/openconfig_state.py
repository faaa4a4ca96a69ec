"""Subscribe on origin ``openconfig``: the queue counters of a switch that speaks OpenConfig,
as ``openconfig-qos`` interface queue state (docs/vsonic.md, "OpenConfig").

A target that speaks OpenConfig streams its queues' counters as the leaves of
``/qos/interfaces/interface[interface-id=<port>]/output/queues/queue[name=<queue>]/state``
(openconfig-qos-interfaces). vsonic holds one set of counters per switch, SONiC's
(``COUNTERS:<oid>`` in COUNTERS_DB, written by the data plane or a test), so the OpenConfig
side reads those: each queue the switch's ``/qos`` tree configures on a port
(``interfaces/interface/output/queues/queue``), by its ``queue-id``
(``queues/queue/config/queue-id``) through ``COUNTERS_QUEUE_NAME_MAP``, its SAI statistics
under the model's leaf names (``LEAVES``). A queue that has no counters is not sent.

What is served: STREAM, SAMPLE (at ``Timing.min_sample_s`` at least) and ON_CHANGE, and
ONCE; a path at or under ``/qos/interfaces/interface/output/queues/queue/state``, or above it
down from ``/qos/interfaces``, keys given or ``*``. Every update is one leaf at its full path
with the counter as ``uint_val`` (a counter64), the leaves due at one moment in one
notification. ON_CHANGE sends the leaves that moved, read every ``Timing.on_change_poll_s``
(no change feed: the counters are read again); SAMPLE sends every leaf at each tick.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.db import COUNTERS_DB, redis_key
from vsonic.errors import InvalidPathError, InvalidRequestError, UnsupportedError
from vsonic.gnmi_codec import keyed_elems
from vsonic.openconfig import MODULE, TOP, Elem
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
        f"state only, not /{shown}"
    )


def queue_leaves(switch: Switch) -> QueueLeaves:
    """Each configured interface queue's counters now, as openconfig-qos state leaves."""
    tree = switch.openconfig.document()[f"{MODULE}:{TOP}"]
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


def _leaf_path(port: str, queue: str, leaf: str) -> Any:
    elems = [
        gnmi_pb2.PathElem(name=TOP),
        gnmi_pb2.PathElem(name="interfaces"),
        gnmi_pb2.PathElem(name="interface", key={"interface-id": port}),
        gnmi_pb2.PathElem(name="output"),
        gnmi_pb2.PathElem(name="queues"),
        gnmi_pb2.PathElem(name="queue", key={"name": queue}),
        gnmi_pb2.PathElem(name="state"),
        gnmi_pb2.PathElem(name=leaf),
    ]
    return gnmi_pb2.Path(elem=elems)


class QueueStateStream:
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

    def _sub(self, sub: Any, min_sample_s: float) -> StateSub:
        if self._request.mode == STREAM:
            if sub.mode not in (SAMPLE, ON_CHANGE):
                name = gnmi_pb2.SubscriptionMode.Name(sub.mode)
                raise InvalidRequestError(f"unsupported subscription mode, {name}")
            if sub.mode == ON_CHANGE and not self._switch.on_change:
                raise UnsupportedError("ON_CHANGE is not supported for openconfig queue state")
        period_s = max(sub.sample_interval / NS_PER_S, min_sample_s)
        return state_sub(keyed_elems(self._request.prefix, sub.path), sub.mode, period_s)

    def _note(self, sent: list[tuple[str, str, str, int]]) -> Any:
        response = gnmi_pb2.SubscribeResponse()
        response.update.timestamp = self._wall_ns()
        response.update.prefix.CopyFrom(self._request.prefix)
        for port, queue, leaf, value in sent:
            update = response.update.update.add()
            update.path.CopyFrom(_leaf_path(port, queue, leaf))
            update.val.uint_val = value
        return response

    def _taken(self, now: QueueLeaves, subs: Sequence[StateSub]) -> list[tuple[str, str, str, int]]:
        return [
            (port, queue, leaf, value)
            for (port, queue), leaves in sorted(now.items())
            for leaf, value in sorted(leaves.items())
            if any(s.takes(port, queue, leaf) for s in subs)
        ]

    async def run(self) -> AsyncGenerator[Any, None]:
        """The initial values, the sync, then (STREAM) the updates; a ONCE stays open after
        its sync. Either runs until the client ends the call (it is cancelled)."""
        loop = asyncio.get_running_loop()
        now = await asyncio.to_thread(queue_leaves, self._switch)
        initial = self._taken(now, self.subs)
        if initial:
            yield self._note(initial)
        yield gnmi_pb2.SubscribeResponse(sync_response=True)
        if self._request.mode == ONCE:
            await asyncio.Event().wait()
        last = {(p, q, leaf): v for p, q, leaf, v in initial}
        due = {i: loop.time() + self._period(s) for i, s in enumerate(self.subs)}
        while True:
            await asyncio.sleep(max(0.0, min(due.values()) - loop.time()))
            ready = [i for i, at in due.items() if at <= loop.time()]
            now = await asyncio.to_thread(queue_leaves, self._switch)
            sent: list[tuple[str, str, str, int]] = []
            for i in ready:
                sub = self.subs[i]
                due[i] = loop.time() + self._period(sub)
                taken = self._taken(now, [sub])
                if sub.mode == ON_CHANGE:
                    taken = [t for t in taken if last.get(t[:3]) != t[3]]
                sent += [t for t in taken if t not in sent]
            for port, queue, leaf, value in sent:
                last[(port, queue, leaf)] = value
            if sent:
                yield self._note(sent)

    def _period(self, sub: StateSub) -> float:
        return sub.period_s if sub.mode == SAMPLE else self._poll_s
