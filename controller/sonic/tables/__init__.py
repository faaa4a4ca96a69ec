"""One module per CONFIG_DB table sluice writes, each with its schema and builder.

``TABLES`` is the dispatch table the compiler and the diff use: table name -> module. The
write order is derived from the schemas' references (``controller/sonic/order.py``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Protocol

from controller.sonic.context import SwitchContext
from controller.sonic.model import EntryKey, Fields
from controller.sonic.order import write_order
from controller.sonic.schema import TableSchema
from controller.sonic.tables import (
    buffer_profile,
    buffer_queue,
    dscp_to_tc_map,
    flex_counter_table,
    port_qos_map,
    queue,
    scheduler,
    sluice_agent,
    sluice_agent_queue,
    tc_to_queue_map,
    wred_profile,
)


class TableModule(Protocol):
    SCHEMA: TableSchema

    def build(self, ctx: SwitchContext) -> dict[EntryKey, Fields]: ...


_MODULES: tuple[TableModule, ...] = (
    buffer_profile,
    buffer_queue,
    dscp_to_tc_map,
    flex_counter_table,
    port_qos_map,
    queue,
    scheduler,
    sluice_agent,
    sluice_agent_queue,
    tc_to_queue_map,
    wred_profile,
)

TABLES: MappingProxyType[str, TableModule] = MappingProxyType({m.SCHEMA.table: m for m in _MODULES})
SCHEMAS: MappingProxyType[str, TableSchema] = MappingProxyType(
    {n: m.SCHEMA for n, m in TABLES.items()}
)
WRITE_ORDER: tuple[str, ...] = write_order(SCHEMAS)
