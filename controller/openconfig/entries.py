"""``openconfig-qos`` in the plan's entry model, and the gNMI paths of those entries. Pure.

The diff, the apply with its read-back, drift and rollouts work on one model: a switch's
configuration is ``{(table, key): {field: value}}`` (``controller/sonic/model.py``). The
OpenConfig dialect is written in that model, so all of them work on an OpenConfig switch
unchanged; only the path scheme differs (``controller/southbound/gnmi.py`` picks it by the
switch's dialect):

- a **table** is a keyed list under ``/qos``, named by its path: ``/qos/queues/queue``,
  ``/qos/interfaces/interface`` (``TABLES``, in the order a Set writes them: what is
  referenced first);
- a **key** is the list key's value: ``SLUICE_Q3``, ``Ethernet0``;
- a **field** is a leaf under the entry, by its path relative to the entry, a list inside
  the entry spelled with its key (``terms/term[id=Q3]/conditions/ipv4/config/dscp-set``);
  its value is the leaf's RFC 7951 JSON text (``"\\"SLUICE_Q3\\""``, ``"3"``, ``"true"``,
  ``"[10,12]"``), so a value reads back exactly as it was written whatever its YANG type.

Granularity on the wire (origin ``openconfig``, JSON_IETF): an ``add`` or ``change`` is one
update (a merge) of the list entry with the fields it writes, and the fields it drops are
deleted, a list element inside the entry whole when none of its leaves stays; a ``delete`` of
a sluice-named entry is one delete of the entry. A port's ``/qos/interfaces/interface`` entry
is shared with the operator: sluice reads only its own leaves of it (``sluice_view``) and
removes only those, never the entry or its key leaves. A read is one Get of ``/qos``, kept to
sluice's entries whatever tables were asked for: every table of the dialect lives under it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from controller.errors import CompiledConfigInvalid
from controller.openconfig.qos import KINDS, QOS, QosPayloads
from controller.sonic.context import PREFIX
from controller.sonic.model import (
    PATH_TABLE_MARK,
    Fields,
    Op,
    SetParts,
    SwitchConfig,
    joined_parts,
)

ORIGIN = "openconfig"
"""The gNMI origin of the OpenConfig models (gNMI specification §2.2.2.1)."""

Json = dict[str, Any]
Predicate = tuple[tuple[str, str], ...]
KeyedElem = tuple[str, Predicate]
KeyedElems = tuple[KeyedElem, ...]
"""A gNMI path as (element name, its keys) pairs; ``gnmi.py`` turns it into protobuf."""


class OpenConfigPathError(ValueError):
    """A path, key or answer that is not sluice's ``openconfig-qos`` tree; ``gnmi.py``
    reports it as a protocol error of the switch that sent it."""


@dataclass(frozen=True, slots=True)
class ListTable:
    """One keyed list under ``/qos``: ``kind`` (its container), ``name`` and ``key``."""

    kind: str
    name: str
    key: str

    @property
    def table(self) -> str:
        return f"{PATH_TABLE_MARK}qos/{self.kind}/{self.name}"

    @property
    def shared(self) -> bool:
        """A port's entry holds the operator's leaves too: sluice owns only its own."""
        return self.kind == "interfaces"


_LIST_NAMES = {
    "queues": ("queue", "name"),
    "forwarding-groups": ("forwarding-group", "name"),
    "classifiers": ("classifier", "name"),
    "scheduler-policies": ("scheduler-policy", "name"),
    "queue-management-profiles": ("queue-management-profile", "name"),
    "buffer-allocation-profiles": ("buffer-allocation-profile", "name"),
    "interfaces": ("interface", "interface-id"),
}
TABLES = tuple(ListTable(kind, *_LIST_NAMES[kind]) for kind in KINDS)
BY_TABLE = {t.table: t for t in TABLES}

# The lists inside an entry, by name, and their key leaf (openconfig-qos: a classifier's
# terms, a policy's schedulers and their inputs, a profile's or a port's queues, a port's
# classifier bindings by address family).
_INNER_KEYS = {
    "term": "id",
    "scheduler": "sequence",
    "input": "id",
    "queue": "name",
    "classifier": "type",
}
# A port entry's identity: its key leaves, never deleted and never a reason to read it.
_IDENTITY = frozenset({"interface-id", "config/interface-id", "interface-ref/config/interface"})
# A port's leaves sluice sets whatever their value (they name its policy and its profile).
_PORT_LEAVES = frozenset(
    {"output/config/buffer-allocation-profile", "output/scheduler-policy/config/name"}
)


def is_sluice(name: str) -> bool:
    return name.startswith(PREFIX)


# --------------------------------------------------------------------------------------------
# leaf paths


def _key_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _leaf_text(value: object) -> str:
    if isinstance(value, list) and all(isinstance(v, int | str) for v in value):
        value = sorted(value, key=_key_text)  # a leaf-list is a set: any order reads the same
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _unqualified(name: str) -> str:
    """``openconfig-qos:config`` -> ``config``: RFC 7951 qualifies a member with its module
    where the module changes; every node under /qos is openconfig-qos's."""
    return name.rpartition(":")[2]


def _flatten(node: Mapping[str, Any], prefix: str, out: Fields) -> None:
    for raw_name, value in node.items():
        name = _unqualified(raw_name)
        path = prefix + name
        if isinstance(value, dict):
            _flatten(value, path + "/", out)
        elif isinstance(value, list) and name in _INNER_KEYS and value:
            key = _INNER_KEYS[name]
            for item in value:
                if not isinstance(item, dict) or key not in item:
                    raise OpenConfigPathError(f"{path}: an element without its key {key}")
                _flatten(item, f"{path}[{key}={_checked_key(_key_text(item[key]))}]/", out)
        else:
            out[path] = _leaf_text(value)


def _checked_key(value: str) -> str:
    if "]" in value or "=" in value or not value:
        raise OpenConfigPathError(f"a list key sluice cannot spell in a path: {value!r}")
    return value


def flatten(entry: Mapping[str, Any]) -> Fields:
    """A list entry's RFC 7951 JSON as fields (the module docstring)."""
    out: Fields = {}
    _flatten(entry, "", out)
    return out


def split_path(path: str) -> list[str]:
    """``a/b[k=x/y]/c`` -> ``["a", "b[k=x/y]", "c"]``: a key may hold ``/`` (``Ethernet1/1``)."""
    segments: list[str] = []
    current: list[str] = []
    depth = 0
    for char in path:
        if char == "/" and depth == 0:
            segments.append("".join(current))
            current = []
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current.append(char)
    segments.append("".join(current))
    if any(not s for s in segments) or depth != 0:
        raise OpenConfigPathError(f"not a leaf path: {path!r}")
    return segments


def parse_segment(segment: str) -> KeyedElem:
    """``term[id=Q3]`` -> ``("term", (("id", "Q3"),))``; ``config`` -> ``("config", ())``."""
    name, bracket, rest = segment.partition("[")
    if not bracket:
        return name, ()
    if not rest.endswith("]") or "=" not in rest:
        raise OpenConfigPathError(f"not a list element: {segment!r}")
    key, _, value = rest[:-1].partition("=")
    return name, ((key, value),)


def _element(items: list[Json], key: str, value: str) -> Json:
    for item in items:
        if _key_text(item.get(key)) == value:
            return item
    created: Json = {key: value}
    items.append(created)
    return created


def unflatten(fields: Mapping[str, str]) -> Json:
    """Fields back to the entry's RFC 7951 JSON (the inverse of ``flatten``)."""
    root: Json = {}
    for path, text in sorted(fields.items()):
        node = root
        segments = split_path(path)
        for segment in segments[:-1]:
            name, predicate = parse_segment(segment)
            if not predicate:
                node = node.setdefault(name, {})
            else:
                (key, value), *_ = predicate
                node = _element(node.setdefault(name, []), key, value)
        try:
            node[segments[-1]] = json.loads(text)
        except ValueError:
            raise OpenConfigPathError(f"{path}: value is not JSON text") from None
    return root


# --------------------------------------------------------------------------------------------
# compile: payloads -> entries


def entries(payloads: QosPayloads) -> SwitchConfig:
    """A switch's ``openconfig-qos`` payloads as entries, tables in write order."""
    config: SwitchConfig = {}
    for table in TABLES:
        body = payloads.by_kind.get(table.kind)
        if body is None:
            continue
        for entry in body[table.name]:
            try:
                config[(table.table, _checked_key(str(entry[table.key])))] = flatten(entry)
            except OpenConfigPathError as error:
                raise CompiledConfigInvalid(f"{table.table}: {error}") from None
    return config


# --------------------------------------------------------------------------------------------
# read: a Get of /qos -> sluice's entries


def _predicates(path: str) -> Iterator[tuple[str, str]]:
    for segment in split_path(path):
        yield from parse_segment(segment)[1]


def _binding(path: str) -> str | None:
    """``input/classifiers/classifier[type=IPV4]`` for a leaf under that binding."""
    segments = split_path(path)
    if len(segments) > 3 and segments[:2] == ["input", "classifiers"]:
        return "/".join(segments[:3])
    return None


def sluice_view(fields: Fields) -> Fields:
    """The leaves of a port's entry that are sluice's: its policy and profile leaves, the
    queues it names (``SLUICE_Q<n>``) and the classifier bindings naming its classifiers;
    with the port's key leaves when any is. The operator's other leaves stay invisible to
    the diff, so nothing sluice plans removes them."""
    ours = {
        binding
        for path, value in fields.items()
        if (binding := _binding(path)) is not None
        and path == f"{binding}/config/name"
        and is_sluice(str(json.loads(value)))
    }
    kept: Fields = {}
    for path, value in fields.items():
        binding = _binding(path)
        if (
            path in _PORT_LEAVES
            or (binding is not None and binding in ours)
            or (
                binding is None
                and any(True for _ in _predicates(path))
                and all(is_sluice(v) for _, v in _predicates(path))
            )
        ):
            kept[path] = value
    if not kept:
        return {}
    return {**{p: v for p, v in fields.items() if p in _IDENTITY}, **kept}


def _qos_tree(value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise OpenConfigPathError("the /qos answer is not a JSON object")
    inner = value.get(QOS, value.get("qos", value))
    if not isinstance(inner, dict):
        raise OpenConfigPathError("the /qos answer is not a JSON object")
    return {_unqualified(name): body for name, body in inner.items()}


def entries_from_tree(value: object) -> SwitchConfig:
    """Sluice's entries of a ``/qos`` Get answer: its sluice-named list entries, and its
    leaves of each port (``sluice_view``); the operator's entries are left out."""
    tree = _qos_tree(value)
    config: SwitchConfig = {}
    for table in TABLES:
        body = tree.get(table.kind)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise OpenConfigPathError(f"{table.table}: not a JSON object")
        items = body.get(table.name, body.get(f"openconfig-qos:{table.name}", []))
        if not isinstance(items, list):
            raise OpenConfigPathError(f"{table.table}: not a list")
        for item in items:
            if not isinstance(item, dict) or table.key not in item:
                raise OpenConfigPathError(f"{table.table}: an entry without its key")
            key = _key_text(item[table.key])
            if table.shared:
                fields = sluice_view(flatten(item))
                if fields:
                    config[(table.table, key)] = fields
            elif is_sluice(key):
                config[(table.table, key)] = flatten(item)
    return config


# --------------------------------------------------------------------------------------------
# watch: the configuration the drift watch subscribes to, and what a change touched

WATCH_PATHS: tuple[tuple[str, ...], ...] = (
    ("queues", "queue[name=*]", "config"),
    ("forwarding-groups", "forwarding-group[name=*]", "config"),
    ("classifiers", "classifier[name=*]", "config"),
    ("classifiers", "classifier[name=*]", "terms", "term[id=*]", "config"),
    ("classifiers", "classifier[name=*]", "terms", "term[id=*]", "conditions"),
    ("classifiers", "classifier[name=*]", "terms", "term[id=*]", "actions", "config"),
    ("scheduler-policies", "scheduler-policy[name=*]", "config"),
    (
        "scheduler-policies",
        "scheduler-policy[name=*]",
        "schedulers",
        "scheduler[sequence=*]",
        "config",
    ),
    (
        "scheduler-policies",
        "scheduler-policy[name=*]",
        "schedulers",
        "scheduler[sequence=*]",
        "inputs",
        "input[id=*]",
        "config",
    ),
    ("queue-management-profiles", "queue-management-profile[name=*]", "config"),
    ("queue-management-profiles", "queue-management-profile[name=*]", "wred", "uniform", "config"),
    ("buffer-allocation-profiles", "buffer-allocation-profile[name=*]", "config"),
    (
        "buffer-allocation-profiles",
        "buffer-allocation-profile[name=*]",
        "queues",
        "queue[name=*]",
        "config",
    ),
    ("interfaces", "interface[interface-id=*]", "config"),
    ("interfaces", "interface[interface-id=*]", "interface-ref", "config"),
    (
        "interfaces",
        "interface[interface-id=*]",
        "input",
        "classifiers",
        "classifier[type=*]",
        "config",
    ),
    ("interfaces", "interface[interface-id=*]", "output", "config"),
    ("interfaces", "interface[interface-id=*]", "output", "scheduler-policy", "config"),
    ("interfaces", "interface[interface-id=*]", "output", "queues", "queue[name=*]", "config"),
)
"""The configuration containers (under ``/qos``, keys wildcarded) that hold every leaf sluice
writes: what the drift watch subscribes to ON_CHANGE. Not ``/qos`` whole: a target streams
its state there too, queue counters among it, which move all the time and are not drift."""


def changed_tables(changes: Iterable[tuple[tuple[str, ...], object]]) -> set[str]:
    """The tables of the entries a notification's changes touched (elements spelled
    ``name[key=value]``) that may be drift: a sluice-named entry, or a port's (shared with
    the operator: sluice's leaves in it are read back). Another entry of the operator's
    is none of sluice's business."""
    tables: set[str] = set()
    by_kind = {t.kind: t for t in TABLES}
    for elems, _ in changes:
        names = [_unqualified(e) for e in elems]
        if len(names) < 3 or names[0] != "qos" or names[1] not in by_kind:
            continue
        table = by_kind[names[1]]
        try:
            name, keys = parse_segment(names[2])
        except OpenConfigPathError:
            continue
        key = dict(keys).get(table.key)
        if name == table.name and key is not None and (table.shared or is_sluice(key)):
            tables.add(table.table)
    return tables


# --------------------------------------------------------------------------------------------
# write: ops -> gNMI deletes and updates


def qos_elems() -> KeyedElems:
    """``/qos``: a Get of it answers every table of the dialect."""
    return (("qos", ()),)


def _table(name: str) -> ListTable:
    table = BY_TABLE.get(name)
    if table is None:
        raise OpenConfigPathError(f"not an openconfig-qos table sluice writes: {name}")
    return table


def entry_elems(table_name: str, key: str) -> KeyedElems:
    """``/qos/queues/queue[name=SLUICE_Q3]``."""
    table = _table(table_name)
    return (*qos_elems(), (table.kind, ()), (table.name, ((table.key, _checked_key(key)),)))


def leaf_elems(table_name: str, key: str, path: str) -> KeyedElems:
    return (*entry_elems(table_name, key), *(parse_segment(s) for s in split_path(path)))


def text(elems: KeyedElems) -> str:
    """Display form ``/openconfig:qos/queues/queue[name=SLUICE_Q3]`` (for messages)."""
    shown = "/".join(name + "".join(f"[{k}={v}]" for k, v in keys) for name, keys in elems)
    return f"/{ORIGIN}:{shown}"


def encode_entry(fields: Mapping[str, str]) -> bytes:
    return json.dumps(unflatten(fields), sort_keys=True, separators=(",", ":")).encode()


def _dropped(removed: Iterable[str], kept: Iterable[str]) -> list[str]:
    """The paths that remove ``removed``: a list element inside the entry whole when no
    ``kept`` leaf is under it (its outermost such element), else the leaf."""
    staying = tuple(kept)
    out: dict[str, None] = {}
    for path in removed:
        segments = split_path(path)
        chosen = path
        for depth in range(1, len(segments)):
            if "[" not in segments[depth - 1]:
                continue
            element = "/".join(segments[:depth])
            if not any(s.startswith(element + "/") for s in staying):
                chosen = element
                break
        out[chosen] = None
    return list(out)


def op_set(op: Op) -> SetParts[KeyedElems]:
    """The deletes and updates that carry out one op (the module docstring)."""
    table = _table(op.table)
    entry = entry_elems(op.table, op.key)
    if op.kind == "delete" and not table.shared:
        return SetParts(deletes=(entry,))
    kept = {} if op.kind == "delete" else op.fields
    removed = [p for p in op.removed_fields if p not in kept and p not in _IDENTITY]
    deletes = tuple(leaf_elems(op.table, op.key, path) for path in _dropped(removed, kept.keys()))
    updates = ((entry, encode_entry(kept)),) if kept else ()
    return SetParts(deletes=deletes, updates=updates)


def set_request(ops: Iterable[Op]) -> SetParts[KeyedElems]:
    """One SetRequest for all of ``ops``: the switch applies it as one transaction (gNMI
    specification §3.4.3), so the order inside it does not matter."""
    return joined_parts(op_set(op) for op in ops)
