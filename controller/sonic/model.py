"""The desired-state representation shared by the compiler, the diff and the southbound.

A switch's configuration is a flat mapping from ``(TABLE, key)`` to a field/value dict, the
way CONFIG_DB stores it (Redis key ``TABLE|key``, every value a string). A plan is an ordered
tuple of ``Op``: what to write (``add``/``change``) or remove (``delete``) and what was there
before, so an operator can read the diff and the southbound can replay it.

Op semantics (the southbound and ``diff.apply_plan`` follow them exactly):

- ``add``: the entry does not exist; write ``fields``. ``old_fields`` is empty.
- ``change``: the entry exists; write ``fields`` and remove the fields named in
  ``removed_fields`` (present before, managed by sluice, no longer wanted). ``old_fields``
  holds the previous values of every field sluice manages on that entry.
- ``delete``: remove the fields in ``old_fields``. When ``whole_entry`` is true the entry is
  sluice's alone and the whole key goes; otherwise (a shared table such as ``QUEUE``) only
  sluice's fields go and an entry left without fields ceases to exist, as in Redis.
  ``whole_table`` (set only at apply time, never by a plan): the switch holds no other entry
  of the table, so the table goes with it. GCU refuses a patch that leaves a table without
  entries (sonic-utilities generic_config_updater ``EmptyTableMoveValidator``) and accepts
  the table's removal, which means the same in CONFIG_DB.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Generic, Literal, TypeVar

from controller.sonic.gcu import PortFlap, flapped_ports, port_flaps, sorted_changes

EntryKey = tuple[str, str]
"""(TABLE, key); a key's parts are joined with ``|``: ("QUEUE", "Ethernet0|3")."""

Fields = dict[str, str]
"""CONFIG_DB field values are always strings."""

SwitchConfig = dict[EntryKey, Fields]

OpKind = Literal["add", "change", "delete"]

GNMI_ORIGIN = "sonic-db"
CONFIG_DB_PREFIX = "/CONFIG_DB/localhost"
PATH_TABLE_MARK = "/"
"""A table whose name starts with it belongs to a path dialect: OpenConfig's keyed lists,
named by their path (``/qos/queues/queue``, ``controller/openconfig/entries.py``). Its
entries follow the same op semantics; the southbound writes them at their own paths."""


def is_path_table(table: str) -> bool:
    return table.startswith(PATH_TABLE_MARK)


@dataclass(frozen=True, slots=True)
class Op:
    """One entry-level change of a plan (see the module docstring for the exact semantics)."""

    kind: OpKind
    table: str
    key: str
    fields: Fields
    old_fields: Fields
    whole_entry: bool = True
    whole_table: bool = False

    @property
    def entry_key(self) -> EntryKey:
        return (self.table, self.key)

    @property
    def gnmi_path(self) -> str:
        """``/CONFIG_DB/localhost/<TABLE>/<key>`` (origin ``sonic-db``); the key keeps its ``|``.
        A path table's entry: ``/qos/queues/queue[SLUICE_Q3]`` (its list and key)."""
        if is_path_table(self.table):
            return f"{self.table}[{self.key}]"
        return f"{CONFIG_DB_PREFIX}/{self.table}/{self.key}"

    def field_path(self, name: str) -> str:
        """The gNMI path of one field of this entry."""
        return f"{self.gnmi_path}/{name}"

    @property
    def removed_fields(self) -> tuple[str, ...]:
        """Fields this op removes: all of ``old_fields`` for a delete, the dropped ones for a
        change, none for an add."""
        if self.kind == "delete":
            return tuple(sorted(self.old_fields))
        return tuple(sorted(set(self.old_fields) - set(self.fields)))

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-ready form for the API and the CLI."""
        return {
            "kind": self.kind,
            "table": self.table,
            "key": self.key,
            "path": self.gnmi_path,
            "fields": dict(self.fields),
            "old_fields": dict(self.old_fields),
            "removed_fields": list(self.removed_fields),
            "whole_entry": self.whole_entry,
        }


PathT = TypeVar("PathT")


@dataclass(frozen=True)
class SetParts(Generic[PathT]):
    """The content of one SetRequest in a dialect's path scheme (``PathT``): paths to
    delete and (path, JSON_IETF value) updates."""

    deletes: tuple[PathT, ...] = ()
    updates: tuple[tuple[PathT, bytes], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.deletes and not self.updates


def joined_parts(parts: Iterable[SetParts[PathT]]) -> SetParts[PathT]:
    """One SetRequest carrying all of ``parts`` in their order, each path deleted once (the
    ops of a table or an entry that goes whole share its delete)."""
    deletes: list[PathT] = []
    updates: list[tuple[PathT, bytes]] = []
    for part in parts:
        deletes += part.deletes
        updates += part.updates
    return SetParts(tuple(dict.fromkeys(deletes)), tuple(updates))


Owner = Literal["sluice", "operator_kept", "operator_overwritten"]


@dataclass(frozen=True, slots=True)
class FieldOwner:
    """Who one field of a planned entry belongs to (``controller/sonic/diff.py``).

    ``value``: what the switch holds once the plan is applied (None: the field goes);
    ``saved``: the operator's value kept in the adoption record, for an overwritten field;
    ``source``: for a field a merged map took from an operator's map, that map's name."""

    field: str
    owner: Owner
    value: str | None
    saved: str | None = None
    source: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "field": self.field,
            "owner": self.owner,
            "value": self.value,
            "saved": self.saved,
            "source": self.source,
        }


_table_and_kind = attrgetter("table", "kind")


@dataclass(frozen=True)
class Plan:
    """The ordered ops that take one switch from its observed to its desired configuration."""

    switch: str
    ops: tuple[Op, ...] = ()
    # Who owns each field an op touches (``controller/sonic/diff.py`` ``with_ownership``):
    # filled for a plan shown to the operator, empty where only the ops matter.
    ownership: Mapping[EntryKey, tuple[FieldOwner, ...]] = field(
        default_factory=dict, compare=False
    )
    counts: dict[str, int] = field(init=False, compare=False)
    counts_by_table: dict[str, dict[str, int]] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen dataclass: the summaries are computed once, at construction (Counter over
        # (table, kind) pairs counts in C; a fleet plan has a million ops).
        pairs = Counter(map(_table_and_kind, self.ops))
        by_kind = dict.fromkeys(("add", "change", "delete"), 0)
        by_table: dict[str, dict[str, int]] = {}
        for (table, kind), count in sorted(pairs.items()):
            by_kind[kind] += count
            by_table.setdefault(table, {})[kind] = count
        object.__setattr__(self, "counts", by_kind)
        object.__setattr__(self, "counts_by_table", by_table)

    @property
    def is_empty(self) -> bool:
        return not self.ops

    @cached_property
    def port_flaps(self) -> tuple[PortFlap, ...]:
        """Every op that takes a port admin down and up on a SONiC switch (GCU's
        port-critical tables, ``controller/sonic/gcu.py``), with its port and reason."""
        return port_flaps(self.ops)

    @property
    def ports_down(self) -> tuple[str, ...]:
        """The ports this plan takes down, each once, in plan order."""
        return flapped_ports(self.ops)

    @property
    def gcu_changes(self) -> int:
        """How many changes GCU would sort the whole plan into, sent as one Set."""
        return sorted_changes(self.ops)

    def summary(self) -> str:
        """One line: ``leaf1: 12 add, 3 change, 0 delete``, and the ports it takes down."""
        c = self.counts
        line = f"{self.switch}: {c['add']} add, {c['change']} change, {c['delete']} delete"
        down = self.ports_down
        return f"{line}; takes {len(down)} port(s) down: {', '.join(down)}" if down else line

    def _op_dict(self, op: Op) -> dict[str, object]:
        found = op.as_dict()
        owners = self.ownership.get(op.entry_key)
        if owners is not None:
            found["ownership"] = [owner.as_dict() for owner in owners]
        return found

    def as_dict(self) -> dict[str, object]:
        return {
            "switch": self.switch,
            "counts": dict(self.counts),
            "counts_by_table": {t: dict(c) for t, c in self.counts_by_table.items()},
            "ops": [self._op_dict(op) for op in self.ops],
            "gcu_changes": self.gcu_changes,
            "ports_down": list(self.ports_down),
            "port_flaps": [flap.as_dict() for flap in self.port_flaps],
        }
