"""An OpenConfig switch's queue counters: ``openconfig-qos`` interface queue state. Pure.

A SONiC switch's queues are ``COUNTERS:<oid>`` hashes with SAI statistic names, found
through ``COUNTERS_QUEUE_NAME_MAP``; an OpenConfig switch streams the same counters as leaves
of ``/qos/interfaces/interface[interface-id=<port>]/output/queues/queue[name=<queue>]/state``
(openconfig-qos-interfaces, the ``qos-interface-queue-state`` grouping of openconfig/public
release/models/qos). The collector subscribes to that path with both keys wildcarded
(``QUEUE_STATE``) and reads each (port, queue) a notification names as one set of counter
leaves (``queue_counters``); ``controller.telemetry.ingest.QueueStateHandler`` gives them,
under the SAI names (``STATE_LEAVES`` there), to the same counter table, rates and metrics as
a SONiC queue's: the dialect changes the paths and the names, not the ingest.

Only sluice's queues are read: ``SLUICE_Q<n>`` is queue index ``n``, the label a SONiC
switch's queue carries (``controller/openconfig/qos.py`` names them); so is ``<port>-<n>``,
the name Arista's state gives an output queue (featureprofiles deviation
``interface_output_queue_non_standard_name``). An operator's queue has no index sluice knows
and is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from controller.openconfig.entries import OpenConfigPathError, parse_segment

QUEUE_STATE = (
    "qos",
    "interfaces",
    "interface[interface-id=*]",
    "output",
    "queues",
    "queue[name=*]",
    "state",
)
"""Every interface queue's state: what the collector subscribes to (origin ``openconfig``)."""

COUNTER_LEAVES = frozenset(
    {"transmit-pkts", "transmit-octets", "dropped-pkts", "dropped-octets", "ecn-marked-pkts"}
)
"""The queue state leaves read: those with a SONiC queue counter of the same count. The
model's ``ecn-marked-octets``, ``ecn-selected-*``, ``max-queue-len`` and ``avg-queue-len``
have no series of the collector's and are not read."""

_QUEUE_PATH = ("qos", "interfaces", "interface", "output", "queues", "queue")
_SLUICE_QUEUE = re.compile(r"SLUICE_Q(\d+)")

QueueKey = tuple[str, str]
"""(port, queue index as SONiC spells it: ``"3"``)."""


def queue_index(name: str, port: str) -> str | None:
    """``SLUICE_Q3`` (or Arista's ``<port>-3``) -> ``"3"``; None for another queue."""
    found = _SLUICE_QUEUE.fullmatch(name)
    if found is not None:
        return found.group(1)
    index = name.removeprefix(f"{port}-")
    return index if index != name and index.isdigit() else None


def _unqualified(name: str) -> str:
    return name.rpartition(":")[2]


def _leaves(rest: tuple[str, ...], value: Any) -> Mapping[str, Any]:
    """The state leaves one update carries below a queue entry: a leaf, the ``state``
    container, or the queue entry itself."""
    names = tuple(_unqualified(r) for r in rest)
    if names == ("state",) and isinstance(value, dict):
        return {_unqualified(k): v for k, v in value.items()}
    if len(names) == 2 and names[0] == "state":
        return {names[1]: value}
    if not names and isinstance(value, dict):
        state = value.get("state", value.get("openconfig-qos:state"))
        return _leaves(("state",), state) if isinstance(state, dict) else {}
    return {}


def _count(value: Any) -> str | None:
    """A counter64 as the table takes it: decimal text (RFC 7951 sends it as a string, a
    typed value as an integer)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.isdigit():
        return value
    return None


def queue_counters(
    changes: Iterable[tuple[tuple[str, ...], Any]],
) -> dict[QueueKey, dict[str, str]]:
    """The counter leaves of each sluice queue in one notification's updates (elements
    spelled ``name[key=value]``), as decimal text; deletes and other paths are left out."""
    out: dict[QueueKey, dict[str, str]] = {}
    for elems, value in changes:
        if value is None or len(elems) < len(_QUEUE_PATH):
            continue
        try:
            head = [parse_segment(e) for e in elems[: len(_QUEUE_PATH)]]
        except OpenConfigPathError:
            continue
        if tuple(_unqualified(name) for name, _ in head) != _QUEUE_PATH:
            continue
        port = dict(head[2][1]).get("interface-id")
        queue = queue_index(dict(head[5][1]).get("name", ""), port or "")
        if port is None or queue is None:
            continue
        for leaf, raw in _leaves(elems[len(_QUEUE_PATH) :], value).items():
            count = _count(raw)
            if leaf in COUNTER_LEAVES and count is not None:
                out.setdefault((port, queue), {})[leaf] = count
    return out
