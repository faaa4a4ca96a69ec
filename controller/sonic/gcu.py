"""How SONiC's Generic Config Updater (GCU) applies a plan: which ops take a port down, how
many changes it sorts a Set into, how long that takes. Pure.

Every CONFIG_DB Set on a SONiC switch is one GCU run (sonic-net/sonic-gnmi
``sonic_data_client/mixed_db_client.go`` ``SetIncrementalConfig``). GCU's PatchSorter
(sonic-net/sonic-utilities ``generic_config_updater/patch_sorter.py``,
``RequiredValueIdentifier``) has a hard-coded rule: a change to ``QUEUE``, ``BUFFER_QUEUE``,
``BUFFER_PG`` (keys ``<port>|...``), ``PORT_QOS_MAP`` or a port's
``BUFFER_PORT_INGRESS/EGRESS_PROFILE_LIST`` (key ``<port>``) needs ``PORT|<port>
admin_status`` down, so the sorter adds a change that takes the port admin down before it and
one that brings it up after it: a link flap in the middle of the change. WRED_PROFILE,
SCHEDULER, BUFFER_PROFILE and the maps change without touching a port.

GCU's table validators (``generic_config_updater/gcu_field_operation_validators.conf.json``,
run by ``gu_common.py`` ``validate_field_operation`` on the diff of the whole patch) also
refuse a switch's first ``PFC_WD`` entry: the diff of a patch to a switch without the table is
one ``add /PFC_WD`` whose value's keys (``Ethernet0``, ``GLOBAL``) are none of the watchdog
fields the validator lists, in any order or split of patches (``watchdog_not_started``).

The sorter then applies the patch as a sequence of changes and sleeps 1 s after each
(``change_applier.py``). Measured with the real GCU behind sonic-gnmi (2 cores, load 1-2):
about 2.5 s per Set for the checkpoint, validation and config save, and 1.25 s per sorted
change; both roughly double under load. ``sorted_changes`` estimates the count from the ops
the way the sorter groups them: each port-critical entry is a change of its own, each port
it names adds two (down, up), and the other entries of one table and kind are one grouped
change (``BulkKeyLevelMoveGenerator``, ``BulkKeyGroupLowLevelMoveGenerator``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from controller.errors import FieldProblem


class Op(Protocol):
    """What this module reads of a plan's op (``controller.sonic.model.Op``, which imports
    this module for its plans: a protocol here keeps the two from importing each other)."""

    @property
    def table(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def whole_entry(self) -> bool: ...
    @property
    def fields(self) -> Mapping[str, str]: ...
    @property
    def old_fields(self) -> Mapping[str, str]: ...
    @property
    def removed_fields(self) -> tuple[str, ...]: ...


# patch_sorter.py RequiredValueIdentifier: the tables whose change needs the port down.
PORT_CRITICAL_TABLES = frozenset(
    {
        "BUFFER_PG",
        "BUFFER_PORT_EGRESS_PROFILE_LIST",
        "BUFFER_PORT_INGRESS_PROFILE_LIST",
        "BUFFER_QUEUE",
        "PORT_QOS_MAP",
        "QUEUE",
    }
)
# The changes the sorter adds around a port's port-critical ones: admin down, admin up.
FLAP_CHANGES = 2


def critical_port(table: str, key: str) -> str | None:
    """The port whose admin status a change to ``table|key`` needs down, or None when the
    table is not port-critical (``QUEUE|Ethernet0|3`` -> ``Ethernet0``)."""
    if table not in PORT_CRITICAL_TABLES:
        return None
    return key.split("|", 1)[0]


def is_port_critical(op: Op) -> bool:
    return op.table in PORT_CRITICAL_TABLES


@dataclass(frozen=True, slots=True)
class PortFlap:
    """One change of a plan that takes ``port`` admin down and up, and why: the entry and
    what happens to it (``reason``)."""

    port: str
    table: str
    key: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"port": self.port, "table": self.table, "key": self.key, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.port} ({self.reason})"


def _what(op: Op) -> str:
    """``QUEUE|Ethernet0|3 wred_profile: A -> B``, ``... added``, ``... deleted``."""
    where = f"{op.table}|{op.key}"
    if op.kind == "add":
        return f"{where} added"
    if op.kind == "delete":
        return f"{where} deleted" if op.whole_entry else f"{where} loses sluice's fields"
    moved = [
        f"{name}: {op.old_fields.get(name, '(none)')} -> {op.fields.get(name, '(none)')}"
        for name in sorted(set(op.fields) | set(op.removed_fields))
        if op.old_fields.get(name) != op.fields.get(name)
    ]
    return f"{where} {'; '.join(moved)}" if moved else f"{where} changed"


def port_flaps(ops: Iterable[Op]) -> tuple[PortFlap, ...]:
    """Every op that takes a port down, in plan order."""
    found: list[PortFlap] = []
    for op in ops:
        port = critical_port(op.table, op.key)
        if port is not None:
            found.append(PortFlap(port, op.table, op.key, _what(op)))
    return tuple(found)


def describe_port_flaps(flaps: Sequence[PortFlap], reasons_per_port: int = 2) -> str:
    """``Ethernet0 (QUEUE|Ethernet0|1 added; ... and 11 more), Ethernet4 (...)``: each port
    a change takes down, with its first reasons."""
    by_port: dict[str, list[str]] = {}
    for flap in flaps:
        by_port.setdefault(flap.port, []).append(flap.reason)
    parts = []
    for port, reasons in by_port.items():
        more = len(reasons) - reasons_per_port
        tail = f"; and {more} more" if more > 0 else ""
        parts.append(f"{port} ({'; '.join(reasons[:reasons_per_port])}{tail})")
    return ", ".join(parts)


def flapped_ports(ops: Iterable[Op]) -> tuple[str, ...]:
    """The ports ``ops`` take down, each once, in the order the plan first touches them."""
    ports = (critical_port(op.table, op.key) for op in ops)
    return tuple(dict.fromkeys(p for p in ports if p is not None))


def sorted_changes(ops: Sequence[Op]) -> int:
    """How many changes GCU sorts a Set of ``ops`` into (an estimate; module docstring)."""
    critical = sum(1 for op in ops if op.table in PORT_CRITICAL_TABLES)
    grouped = {(op.table, op.kind) for op in ops if op.table not in PORT_CRITICAL_TABLES}
    return critical + FLAP_CHANGES * len(flapped_ports(ops)) + len(grouped)


@dataclass(frozen=True, slots=True)
class GcuPace:
    """How long a GCU run takes: ``per_set_s`` (checkpoint, validation, config save) plus
    ``per_change_s`` per sorted change. ``load_margin``: how much slower a loaded switch CPU
    may be (the measured times doubled at load 8-12) before a Set misses its deadline."""

    per_set_s: float = 2.5
    per_change_s: float = 1.25
    load_margin: float = 2.0

    def __post_init__(self) -> None:
        if self.per_set_s < 0 or self.per_change_s <= 0 or self.load_margin < 1:
            raise ValueError("GCU pace: times must be positive and the load margin at least 1")

    def seconds(self, changes: int) -> float:
        """The expected time of a Set GCU sorts into ``changes`` changes."""
        return self.per_set_s + self.per_change_s * changes

    def deadline_for(self, changes: int) -> float:
        """The Set deadline that leaves a loaded switch room to finish ``changes``."""
        return self.load_margin * self.seconds(changes)

    def changes_within(self, deadline_s: float) -> int:
        """The most changes one Set may carry and still finish within ``deadline_s`` on a
        loaded switch (at least 1: a single change is never split)."""
        room = deadline_s / self.load_margin - self.per_set_s
        return max(1, math.floor(room / self.per_change_s))


# The watchdog's table, and the poll interval ``pfcwd interval`` is suggested with: its own
# default (sonic-utilities pfcwd/main.py ``DEFAULT_POLL_INTERVAL``), lowered to the smallest
# time the intent's watchdog uses (it refuses an interval above a configured detection or
# restoration time; sonic-pfcwd.yang ``must`` says the same).
WATCHDOG_TABLE = "PFC_WD"
WATCHDOG_POLL_MS = 200
WATCHDOG_TIMES = ("detection_time", "restoration_time")
PORTS_SHOWN = 4


# What follows starting the watchdog, where a plan judged the switch from a discovery; the
# reconcile loop reads the switch on each pass and says ``WATCHDOG_THEN_REPAIRED`` instead.
WATCHDOG_THEN_DISCOVER = "then discover the switch again"
WATCHDOG_THEN_REPAIRED = "and the reconcile loop's next pass writes it back"


def watchdog_not_started(
    desired: Mapping[tuple[str, str], Mapping[str, str]],
    running: Mapping[tuple[str, str], Mapping[str, str]],
    *,
    then: str = WATCHDOG_THEN_DISCOVER,
) -> FieldProblem | None:
    """The problem when ``desired`` (what sluice would write) holds ``PFC_WD`` entries and
    ``running`` (what the switch holds) none: GCU refuses the table's first entry whatever
    it is (module docstring; the real GCU refuses a port's entry, ``GLOBAL``'s, and an empty
    table added first alike), so the operator must start the watchdog outside GCU, as SONiC's
    own ``pfcwd`` commands write CONFIG_DB. None when nothing of the table is written or the
    switch has it. ``then``: what the operator does after starting it."""
    wanted = {key: fields for (table, key), fields in desired.items() if table == WATCHDOG_TABLE}
    if not wanted or any(table == WATCHDOG_TABLE for table, _ in running):
        return None
    times = [int(f[n]) for f in wanted.values() for n in WATCHDOG_TIMES if f.get(n, "").isdigit()]
    poll = min([WATCHDOG_POLL_MS, *times])
    ports = sorted(wanted)
    more = f" and {len(ports) - PORTS_SHOWN} more" if len(ports) > PORTS_SHOWN else ""
    reason = (
        "the switch runs no PFC watchdog (no PFC_WD entry) and its config updater (GCU) refuses "
        "a first one: start it on the switch, `sudo pfcwd interval "
        f"{poll}` (or `sudo config pfcwd start_default` where DEVICE_METADATA|localhost."
        f"default_pfcwd_status is enable), {then}; the intent's "
        f"watchdog on {', '.join(ports[:PORTS_SHOWN])}{more} waits for it"
    )
    return FieldProblem(WATCHDOG_TABLE, reason)
