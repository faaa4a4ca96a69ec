"""PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|SLUICE: each lossless class's PFC priority -> the
ingress priority group whose XOFF point sends its pauses, the priority's own group (the
number ``TC_TO_PRIORITY_GROUP_MAP`` gives the class's TC; sonic-buildimage
src/sonic-yang-models/yang-models/sonic-pfc-priority-priority-group-map.yang: field names
priorities ``[0-7]``, values groups ``[0-7]``). SAI's
``SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_PRIORITY_GROUP_MAP`` (saiport.h) has no map by default, so
the binding states what the PFC priority as group index only assumed.

Bound by ``PORT_QOS_MAP.pfc_to_pg_map``; on a port the operator had bound to a map of its
own, sluice binds the merged ``SLUICE_<that map>`` (controller/sonic/coexist.py).
"""

from __future__ import annotations

from controller.sonic.context import SwitchContext
from controller.sonic.schema import FieldSpec, IndexedFields, TableSchema
from controller.sonic.tables._common import MAP_KEY, Entries, lossless_map

TABLE = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=MAP_KEY,
    indexed=IndexedFields(0, 7, FieldSpec("pg", "uint", 0, 7)),
)


def build(ctx: SwitchContext) -> Entries:
    return lossless_map(ctx, SCHEMA, lambda lossless: lossless.pfc_to_pg)
