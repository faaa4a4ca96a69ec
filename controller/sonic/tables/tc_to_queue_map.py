"""TC_TO_QUEUE_MAP|SLUICE: identity over the queues sluice uses (TC n -> queue n).

The compiler makes TC equal to the queue, so this map only has to exist for PORT_QOS_MAP to
bind; listing just the used queues keeps it honest about what sluice manages. On a port the
operator had bound to a map of its own, sluice binds ``SLUICE_<that map>``: the operator's
entries, with the intent's queues over them (controller/sonic/coexist.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.sonic.context import MAP_NAME, SwitchContext
from controller.sonic.schema import FieldSpec, IndexedFields, TableSchema
from controller.sonic.tables._common import MAP_KEY, Entries, checked_entries

TABLE = "TC_TO_QUEUE_MAP"


def _not_empty(fields: Mapping[str, str]) -> str | None:
    return None if fields else "the map is empty"


SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=MAP_KEY,
    indexed=IndexedFields(0, 15, FieldSpec("queue", "uint", 0, 7)),
    rules=(_not_empty,),
)


def build(ctx: SwitchContext) -> Entries:
    return checked_entries(SCHEMA, {MAP_NAME: ctx.fleet.tc_to_queue})
