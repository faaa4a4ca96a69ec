"""SLUICE_AGENT_QUEUE|<port>|<queue>: the agent's orders for one dynamic queue.

The agent moves the threshold of the queue's own WRED profile (``wred_profile``) between
``floor_bytes`` and ``ceiling_bytes`` and falls back to ``static_bytes`` when its inputs go
stale; ``weight`` (normalised DWRR weight, 0 for STRICT) lets it compute the queue's fair
share of ``speed_gbps``; ``buffer_bytes`` is the port's egress buffer (DynaQ's budget).
Bounds come from ``controller.qos.ecn.mqecn_bounds``.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.sonic.context import PortProfile, SwitchContext
from controller.sonic.schema import INT32_MAX, FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_QUEUE_KEY, Entries, Row, per_port_queue_entries

TABLE = "SLUICE_AGENT_QUEUE"


def _static_between_bounds(fields: Mapping[str, str]) -> str | None:
    floor, static, ceiling = (
        int(fields[f]) for f in ("floor_bytes", "static_bytes", "ceiling_bytes")
    )
    if not floor <= static <= ceiling:
        return f"need floor {floor} <= static {static} <= ceiling {ceiling}"
    return None


SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_QUEUE_KEY,
    fields=(
        FieldSpec("wred_profile", "ref", ref="WRED_PROFILE", required=True),
        FieldSpec("weight", "uint", 0, 100, required=True),
        FieldSpec("floor_bytes", "uint", 0, INT32_MAX, required=True),
        FieldSpec("ceiling_bytes", "uint", 0, INT32_MAX, required=True),
        FieldSpec("static_bytes", "uint", 0, INT32_MAX, required=True),
        FieldSpec("speed_gbps", "uint", 1, 800, required=True),
        FieldSpec("buffer_bytes", "uint", 1, 2**63 - 1, required=True),
    ),
    rules=(_static_between_bounds,),
)


def rows(profile: PortProfile) -> list[Row]:
    """One row per dynamic queue; ``wred_profile`` is the queue's per-port profile."""
    out: list[Row] = []
    for queue in profile.queues:
        if queue.bounds is None:
            continue
        fields = {
            "weight": str(queue.weight),
            "floor_bytes": str(queue.bounds.floor_bytes),
            "ceiling_bytes": str(queue.bounds.ceiling_bytes),
            "static_bytes": str(queue.bounds.static_bytes),
            "speed_gbps": str(profile.speed_gbps),
            "buffer_bytes": str(profile.buffer_bytes),
        }
        out.append(Row(queue.queue, fields, port_named="wred_profile"))
    return out


def build(ctx: SwitchContext) -> Entries:
    return per_port_queue_entries(ctx, SCHEMA, rows)
