"""TC_TO_PRIORITY_GROUP_MAP|SLUICE: each lossless class's TC (its queue) -> its ingress
priority group, the class's PFC priority (sonic-buildimage src/sonic-yang-models/
yang-models/sonic-tc-priority-group-map.yang: field names TCs, values ``[0-7]``).

Only lossless TCs are listed: the ASIC puts an unmapped TC in priority group 0, the lossy
group SONiC's stock config gives every other TC. On a port the operator had bound to a map of
its own, sluice binds ``SLUICE_<that map>`` instead: the operator's entries with the
intent's over them (controller/sonic/coexist.py).
"""

from __future__ import annotations

from controller.sonic.context import SwitchContext
from controller.sonic.schema import FieldSpec, IndexedFields, TableSchema
from controller.sonic.tables._common import MAP_KEY, Entries, lossless_map

TABLE = "TC_TO_PRIORITY_GROUP_MAP"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=MAP_KEY,
    indexed=IndexedFields(0, 15, FieldSpec("pg", "uint", 0, 7)),
)


def build(ctx: SwitchContext) -> Entries:
    return lossless_map(ctx, SCHEMA, lambda lossless: lossless.tc_to_pg)
