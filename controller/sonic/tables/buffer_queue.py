"""BUFFER_QUEUE|<port>|<queue>: which buffer profile each managed queue uses.

A shared table: the stock config usually binds queue ranges (``Ethernet0|0-2``) to the
operator's profiles; sluice writes single-queue keys and only the ``profile`` field. A
lossless class's queue is bound to the switch's static egress lossless profile
(``buffer_profile.egress_lossless_profile``), every other queue to its port's lossy one.
"""

from __future__ import annotations

from collections.abc import Mapping

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


def rows(profile: PortProfile, lossless: Mapping[int, str] | None = None) -> list[Row]:
    """Each queue's profile; ``lossless``: the lossless queues' own, by queue."""
    own = lossless or {}
    return [
        Row(queue.queue, {"profile": own.get(queue.queue, queue.buffer_profile)})
        for queue in profile.queues
    ]


def build(ctx: SwitchContext) -> Entries:
    egress, fleet = ctx.lossless_egress, ctx.fleet.lossless
    if egress is None or fleet is None:
        return per_port_queue_entries(ctx, SCHEMA, rows)
    lossless = {int(queue): egress.name for queue in fleet.pfc_to_queue.values()}
    return per_port_queue_entries(ctx, SCHEMA, lambda profile: rows(profile, lossless))
