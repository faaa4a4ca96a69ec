"""MAP_PFC_PRIORITY_TO_QUEUE|SLUICE: which egress queue a PFC pause for a lossless priority
stops, the class's queue (sonic-buildimage src/sonic-yang-models/yang-models/
sonic-pfc-priority-queue-map.yang: field names priorities ``[0-7]``, values queues
``[0-7]``). Bound by ``PORT_QOS_MAP.pfc_to_queue_map``; on a port the operator had bound to
a map of its own, sluice binds the merged ``SLUICE_<that map>`` (controller/sonic/coexist.py).
"""

from __future__ import annotations

from controller.sonic.context import SwitchContext
from controller.sonic.schema import FieldSpec, IndexedFields, TableSchema
from controller.sonic.tables._common import MAP_KEY, Entries, lossless_map

TABLE = "MAP_PFC_PRIORITY_TO_QUEUE"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=MAP_KEY,
    indexed=IndexedFields(0, 7, FieldSpec("queue", "uint", 0, 7)),
)


def build(ctx: SwitchContext) -> Entries:
    return lossless_map(ctx, SCHEMA, lambda lossless: lossless.pfc_to_queue)
