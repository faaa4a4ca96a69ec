"""PORT_QOS_MAP|<port>: binds sluice's DSCP->TC and TC->queue maps to each managed port.

A shared table: the entry usually already holds the operator's PFC settings
(``pfc_enable``, ``tc_to_pg_map`` ...); sluice writes and compares only the two map fields.
The ``global`` key is never written: a per-port binding leaves unmanaged ports alone.
"""

from __future__ import annotations

from controller.sonic.context import MAP_NAME, SwitchContext
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_KEY, Entries, check_port_name

TABLE = "PORT_QOS_MAP"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_KEY,
    fields=(
        FieldSpec("dscp_to_tc_map", "ref", ref="DSCP_TO_TC_MAP", required=True),
        FieldSpec("tc_to_queue_map", "ref", ref="TC_TO_QUEUE_MAP", required=True),
    ),
    shared=True,
)

_BINDING = {"dscp_to_tc_map": MAP_NAME, "tc_to_queue_map": MAP_NAME}


def build(ctx: SwitchContext) -> Entries:
    SCHEMA.check_fields("<port>", _BINDING)
    out: Entries = {}
    for port in ctx.ports:
        check_port_name(SCHEMA, port.name)
        out[(TABLE, port.name)] = dict(_BINDING)
    return out
