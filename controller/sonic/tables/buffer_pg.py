"""BUFFER_PG|<port>|<pgs>: the ingress priority groups of a port's lossless priorities and the
lossless profile they use (sonic-buildimage src/sonic-yang-models/yang-models/
sonic-buffer-pg.yang: key ``port`` and ``pg_num`` ``[0-7]((-)[0-7])?``, field ``profile``).

Each lossless class's PFC priority is its own priority group, as SONiC's stock config
numbers them (priorities 3 and 4, ``BUFFER_PG|<port>|3-4``); neighbouring groups share one
range key, as SONiC writes them. The profile is the port's, from its speed, cable length and
MTU (``buffer_profile.lossless_name``).

A shared table: the operator's lossy group (``|0``) and any lossless groups the intent does
not claim stay theirs (``controller/sonic/coexist.py``); sluice writes and compares only
``profile`` on its own keys.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.sonic.context import SwitchContext
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_KEY, Entries, check_port_name

TABLE = "BUFFER_PG"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_KEY + r"\|[0-7](-[0-7])?",
    fields=(FieldSpec("profile", "ref", ref="BUFFER_PROFILE", required=True),),
    shared=True,
)


def pg_ranges(groups: Iterable[int]) -> list[str]:
    """``[3, 4, 6]`` -> ``["3-4", "6"]``: neighbouring groups as one range."""
    ranges: list[list[int]] = []
    for group in sorted(set(groups)):
        if ranges and group == ranges[-1][-1] + 1:
            ranges[-1].append(group)
        else:
            ranges.append([group])
    return [str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in ranges]


def build(ctx: SwitchContext) -> Entries:
    lossless = ctx.fleet.lossless
    if lossless is None:
        return {}
    ranges = pg_ranges(lossless.priorities)
    out: Entries = {}
    for port in ctx.ports:
        if port.lossless is None:
            continue
        check_port_name(SCHEMA, port.name)
        fields = {"profile": port.lossless.name}
        for pgs in ranges:
            SCHEMA.check(f"{port.name}|{pgs}", fields)
            out[(TABLE, f"{port.name}|{pgs}")] = dict(fields)
    return out
