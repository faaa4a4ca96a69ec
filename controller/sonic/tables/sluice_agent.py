"""SLUICE_AGENT|global: the on-switch agent's orders (DESIGN.md "Contracts").

``algorithm`` is the one dynamic ECN mode the intent uses (mqecn, dynaq or hdcq), else
``static`` (the agent then only reports). ``queues`` lists the dynamic queue indexes, whose
per-port orders are in SLUICE_AGENT_QUEUE; ``version`` is a short hash of the switch's desired
config so the agent can report which one it applied. Written after the per-queue entries, the
profiles they name and the counter groups the agent reads (FLEX_COUNTER_TABLE), so an agent
that reacts to this entry finds everything it points at.
"""

from __future__ import annotations

from controller.sonic.context import SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import Entries, checked_entries

TABLE = "SLUICE_AGENT"
ALGORITHMS = ("static", "mqecn", "dynaq", "hdcq")

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern="global",
    fields=(
        FieldSpec("algorithm", "enum", choices=ALGORITHMS, required=True),
        FieldSpec("interval_ms", "uint", 1, 60_000, required=True),
        FieldSpec("rtt_us", "decimal", required=True),
        FieldSpec("lambda", "decimal", required=True),
        FieldSpec("ewma_beta", "decimal", required=True),
        FieldSpec("hysteresis_pct", "decimal", required=True),
        FieldSpec("hdcq_k", "decimal", required=True),
        FieldSpec("stale_after_ms", "uint", 1, 600_000, required=True),
        FieldSpec("queues", "uint_list", required=True),
        FieldSpec("version", "hex", required=True),
    ),
    after=("FLEX_COUNTER_TABLE", "SLUICE_AGENT_QUEUE", "WRED_PROFILE"),
)


def decimal(value: float) -> str:
    """Shortest exact text for a float; integral values without a trailing ``.0``."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def agent_fields(ctx: SwitchContext) -> Fields:
    fleet = ctx.fleet
    fabric = fleet.fabric
    agent = fabric.agent
    return {
        "algorithm": fleet.algorithm,
        "interval_ms": str(agent.interval_ms),
        "rtt_us": decimal(fabric.base_rtt_us),
        "lambda": decimal(fabric.ecn_lambda),
        "ewma_beta": decimal(agent.ewma_beta),
        "hysteresis_pct": decimal(agent.hysteresis_pct),
        "hdcq_k": decimal(agent.hdcq_k),
        "stale_after_ms": str(agent.stale_after_ms),
        "queues": ",".join(str(q) for q in fleet.dynamic_queues),
        "version": ctx.version,
    }


def build(ctx: SwitchContext) -> Entries:
    return checked_entries(SCHEMA, {"global": agent_fields(ctx)})
