"""SLUICE_AGENT_QUEUE|<port>|<queue>: the agent's orders for every queue of a port it works on.

A dynamic queue (``managed = true``): the agent moves the threshold of the queue's own WRED
profile (``wred_profile``) between ``floor_bytes`` and ``ceiling_bytes`` and falls back to
``static_bytes`` when its inputs go stale. Bounds come from ``controller.qos.ecn.mqecn_bounds``
(MQ-ECN, HDCQ) or ``controller.qos.buffers.dynaq_bounds`` (DynaQ: from the port's buffer).

Every other DWRR or STRICT queue of that port (``managed = false``) carries only ``weight``,
``speed_gbps`` and ``buffer_bytes``: the agent reads its counters, because MQ-ECN's threshold
follows a queue's share among every backlogged queue the scheduler serves, not only the
dynamic ones (MQ-ECN, NSDI 2016 §3: ``T_round`` spans all of them), and never writes
its profile (its threshold is the controller's static one, or it has none).

``weight`` is the normalised DWRR weight, 0 for STRICT; ``buffer_bytes`` is the port's egress
buffer (DynaQ's budget). ``port_threshold_bytes`` (an HDCQ class's Priority 1 and Priority 3 queues
only: Algorithm 2 marks Priority 2 by its per-queue threshold alone) is HDCQ's per-port ECN
point, a share of that buffer (HDCQ 2021 Algorithm 2, §4.2.1: 60 %). ``lambda`` (an
MQ-ECN queue of a class with its own ``ecn_lambda``) is that class's lambda: the agent scales
the queue's threshold from K = C x RTT x lambda with it instead of SLUICE_AGENT|global's. A
port with no dynamic queue gets no entries.
"""

from __future__ import annotations

from controller.sonic.context import PortProfile, SwitchContext
from controller.sonic.schema import TableSchema
from controller.sonic.sluice_yang import AGENT_QUEUE_FIELDS, AGENT_QUEUE_MUSTS, QUEUE_INDEX_MAX
from controller.sonic.tables._common import PORT_KEY, Entries, Row, per_port_queue_entries
from controller.sonic.tables.sluice_agent import decimal

TABLE = "SLUICE_AGENT_QUEUE"
# The model's fraction-digits of ``lambda`` (6).
LAMBDA_DIGITS = next(f.fraction_digits or 0 for f in AGENT_QUEUE_FIELDS if f.name == "lambda")


# Fields, ranges and the cross-field rules (a managed queue has its profile and bounds, an
# unmanaged one none of them nor HDCQ's per-port point nor a lambda; floor <= static <=
# ceiling) come from sonic-sluice-agent.yang, through the generated sluice_yang.
SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_KEY + r"\|(" + "|".join(str(q) for q in range(QUEUE_INDEX_MAX + 1)) + ")",
    fields=AGENT_QUEUE_FIELDS,
    rules=AGENT_QUEUE_MUSTS,
)


def rows(profile: PortProfile) -> list[Row]:
    """One row per queue of a port with a dynamic queue (every sluice queue is DWRR or STRICT);
    a dynamic queue's ``wred_profile`` is its per-port profile."""
    if all(queue.bounds is None for queue in profile.queues):
        return []
    port_wide = {"speed_gbps": str(profile.speed_gbps), "buffer_bytes": str(profile.buffer_bytes)}
    out: list[Row] = []
    for queue in profile.queues:
        hdcq = {}
        if queue.port_threshold_bytes is not None:
            hdcq = {"port_threshold_bytes": str(queue.port_threshold_bytes)}
        own = {}
        if queue.ecn_lambda is not None:
            own = {"lambda": decimal(queue.ecn_lambda, LAMBDA_DIGITS)}
        if queue.bounds is None:
            # HDCQ's queues are dynamic, so an unmanaged queue never has a per-port point.
            fields = {"managed": "false", "weight": str(queue.weight), **port_wide}
            out.append(Row(queue.queue, fields))
            continue
        fields = {
            "managed": "true",
            "weight": str(queue.weight),
            "floor_bytes": str(queue.bounds.floor_bytes),
            "ceiling_bytes": str(queue.bounds.ceiling_bytes),
            "static_bytes": str(queue.bounds.static_bytes),
            **port_wide,
            **hdcq,
            **own,
        }
        out.append(Row(queue.queue, fields, port_named="wred_profile"))
    return out


def build(ctx: SwitchContext) -> Entries:
    return per_port_queue_entries(ctx, SCHEMA, rows)
