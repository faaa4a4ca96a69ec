"""Key shapes and helpers shared by the table modules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from controller.errors import CompiledConfigInvalid
from controller.sonic.context import (
    MAP_NAME,
    FleetLossless,
    PortProfile,
    SwitchContext,
    dynamic_wred_name,
)
from controller.sonic.model import EntryKey, Fields
from controller.sonic.schema import TableSchema

# One port per key: YANG's leafref on the port name refuses orchagent's comma lists
# (sonic-queue.yang).
PORT_KEY = r"Ethernet[0-9]{1,4}"
PORT_QUEUE_KEY = PORT_KEY + r"\|[0-7]"
# Every object sluice names starts with SLUICE_; WRED profile names stop at 32 characters.
SLUICE_NAME_KEY = r"SLUICE_[-A-Za-z0-9_]{1,25}"
# A map: sluice's own (``SLUICE``) or one merged with an operator's (``SLUICE_AZURE``,
# controller/sonic/coexist.py); SONiC map names stop at 32 characters.
MAP_KEY = r"SLUICE(_[-A-Za-z0-9_]{1,25})?"
_PORT_RE = re.compile(PORT_KEY)

Entries = dict[EntryKey, Fields]


@dataclass(frozen=True, slots=True)
class Row:
    """One queue's entry on every port of a profile. ``port_named``: a field whose value is
    the queue's per-port WRED profile name (``SLUICE_Q_<port>_<queue>``), filled per port."""

    queue: int
    fields: Fields
    port_named: str | None = None


RowsFor = Callable[[PortProfile], list[Row]]


def per_port_queue_entries(ctx: SwitchContext, schema: TableSchema, rows_for: RowsFor) -> Entries:
    """``TABLE|<port>|<queue>`` for every port, stamped from rows computed once per profile.

    The first port of each distinct profile is validated in full (keys and fields); the other
    ports of that profile get the same values (only names that embed the port differ), so
    only their port name is checked: a 64-port switch has one or two profiles but 512 queue
    entries.
    """
    table = schema.table
    rows: dict[int, list[Row]] = {}
    out: Entries = {}
    for port in ctx.ports:
        name = port.name
        profile_rows = rows.get(id(port.profile))
        fresh = profile_rows is None
        if profile_rows is None:
            profile_rows = rows[id(port.profile)] = rows_for(port.profile)
        else:
            check_port_name(schema, name)
        for row in profile_rows:
            fields = dict(row.fields)
            if row.port_named is not None:
                fields[row.port_named] = dynamic_wred_name(name, row.queue)
            key = f"{name}|{row.queue}"
            if fresh:
                schema.check(key, fields)
            out[(table, key)] = fields
    return out


def check_port_name(schema: TableSchema, port: str) -> None:
    if not _PORT_RE.fullmatch(port):
        raise CompiledConfigInvalid(f"{schema.table}: port {port!r} does not match {PORT_KEY}")


def unique_profiles(ctx: SwitchContext) -> list[PortProfile]:
    """The distinct port profiles of a switch, in port order."""
    seen: dict[int, PortProfile] = {}
    for port in ctx.ports:
        seen.setdefault(id(port.profile), port.profile)
    return list(seen.values())


def checked_entries(schema: TableSchema, entries: dict[str, Fields]) -> Entries:
    """Validated copies of entries keyed by name."""
    out: Entries = {}
    for key in sorted(entries):
        schema.check(key, entries[key])
        out[(schema.table, key)] = dict(entries[key])
    return out


def lossless_map(
    ctx: SwitchContext, schema: TableSchema, entries: Callable[[FleetLossless], Fields]
) -> Entries:
    """sluice's ``SLUICE`` map of a lossless table, ``entries`` of the fleet's lossless
    classes; nothing without one."""
    lossless = ctx.fleet.lossless
    if lossless is None:
        return {}
    return checked_entries(schema, {MAP_NAME: entries(lossless)})
