"""QUEUE: binds each queue sluice manages to its scheduler and, unless ECN is off, its WRED
profile. Key ``<port>|<queue>``, one port per key (sonic-queue.yang).

A shared table: an operator may keep other queues, or other fields, here; sluice writes and
compares only ``scheduler`` and ``wred_profile``. References are plain names (202111+,
sonic-swss orchagent/orch.cpp parseReference).
"""

from __future__ import annotations

from controller.sonic.context import PortProfile, SwitchContext
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_QUEUE_KEY, Entries, Row, per_port_queue_entries

TABLE = "QUEUE"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_QUEUE_KEY,
    fields=(
        FieldSpec("scheduler", "ref", ref="SCHEDULER", required=True),
        FieldSpec("wred_profile", "ref", ref="WRED_PROFILE"),
    ),
    shared=True,
)


def rows(profile: PortProfile) -> list[Row]:
    """Scheduler always; the shared static profile, or the queue's own dynamic one."""
    out: list[Row] = []
    for queue in profile.queues:
        if queue.wred_name is not None:
            out.append(
                Row(queue.queue, {"scheduler": queue.scheduler, "wred_profile": queue.wred_name})
            )
        elif queue.bounds is not None:
            out.append(Row(queue.queue, {"scheduler": queue.scheduler}, port_named="wred_profile"))
        else:
            out.append(Row(queue.queue, {"scheduler": queue.scheduler}))
    return out


def build(ctx: SwitchContext) -> Entries:
    return per_port_queue_entries(ctx, SCHEMA, rows)
