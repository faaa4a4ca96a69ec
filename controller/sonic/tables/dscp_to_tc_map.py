"""DSCP_TO_TC_MAP|SLUICE: each DSCP a class (or PIAS demotion stage) uses -> its traffic class.

TC is the class's queue, so with the identity TC_TO_QUEUE_MAP a DSCP lands in its class's
queue. Field names are DSCP values "0".."63", values TCs 0..15 (sonic-dscp-tc-map.yang).
DSCPs no class names are left out: the ASIC sends unmapped DSCPs to TC 0. On a port the
operator had bound to a map of its own, sluice binds ``SLUICE_<that map>`` instead: the
operator's entries with the intent's over them (controller/sonic/coexist.py).
"""

from __future__ import annotations

from controller.sonic.context import MAP_NAME, SwitchContext
from controller.sonic.schema import FieldSpec, IndexedFields, TableSchema
from controller.sonic.tables._common import MAP_KEY, Entries, checked_entries

TABLE = "DSCP_TO_TC_MAP"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=MAP_KEY,
    indexed=IndexedFields(0, 63, FieldSpec("tc", "uint", 0, 15)),
)


def build(ctx: SwitchContext) -> Entries:
    return checked_entries(SCHEMA, {MAP_NAME: ctx.fleet.dscp_to_tc})
