"""BUFFER_QUEUE|<port>|<queue>: which buffer profile each managed queue uses.

A shared table: the stock config usually binds queue ranges (``Ethernet0|0-2``) to the
operator's profiles; sluice writes single-queue keys and only the ``profile`` field.
"""

from __future__ import annotations

from controller.sonic.context import PortProfile, SwitchContext
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_QUEUE_KEY, Entries, Row, per_port_queue_entries

TABLE = "BUFFER_QUEUE"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_QUEUE_KEY,
    fields=(FieldSpec("profile", "ref", ref="BUFFER_PROFILE", required=True),),
    shared=True,
)


def rows(profile: PortProfile) -> list[Row]:
    return [Row(queue.queue, {"profile": queue.buffer_profile}) for queue in profile.queues]


def build(ctx: SwitchContext) -> Entries:
    return per_port_queue_entries(ctx, SCHEMA, rows)
