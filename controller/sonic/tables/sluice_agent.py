"""SLUICE_AGENT|global: the on-switch agent's orders (DESIGN.md "Contracts").

``algorithm`` is the one dynamic ECN mode the intent uses (mqecn, dynaq or hdcq), else
``static`` (the agent then only reports). ``queues`` lists the dynamic queue indexes, whose
per-port orders are in SLUICE_AGENT_QUEUE; ``version`` is a short hash of the switch's desired
config so the agent can report which one it applied. Written after the per-queue entries, the
profiles they name and the counter groups the agent reads (FLEX_COUNTER_TABLE), so an agent
that reacts to this entry finds everything it points at.
"""

from __future__ import annotations

from controller.sonic.context import FleetQos, SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import TableSchema
from controller.sonic.sluice_yang import AGENT_FIELDS, AGENT_KEY_PATTERN, AGENT_MUSTS
from controller.sonic.tables._common import Entries, checked_entries

TABLE = "SLUICE_AGENT"

# Fields and ranges come from sonic-sluice-agent.yang (through the generated sluice_yang).
SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=AGENT_KEY_PATTERN,
    fields=AGENT_FIELDS,
    rules=AGENT_MUSTS,
    after=("FLEX_COUNTER_TABLE", "SLUICE_AGENT_QUEUE", "WRED_PROFILE"),
)
_FRACTION_DIGITS = {s.name: s.fraction_digits for s in AGENT_FIELDS if s.fraction_digits}


def decimal(value: float, fraction_digits: int) -> str:
    """A YANG decimal64's text: plain notation (no exponent), at most ``fraction_digits``
    after the point, no trailing zeros; integral values without a trailing ``.0``."""
    text = f"{float(value):.{fraction_digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _decimal(field: str, value: float) -> str:
    return decimal(value, _FRACTION_DIGITS[field])


def agent_fields(ctx: SwitchContext) -> Fields:
    return orders_fields(ctx.fleet, ctx.version)


def orders_fields(fleet: FleetQos, version: str) -> Fields:
    """The global orders for ``fleet``, stamped with ``version`` (the twin runs the same)."""
    fabric = fleet.fabric
    agent = fabric.agent
    return {
        "algorithm": fleet.algorithm,
        "interval_ms": str(agent.interval_ms),
        "rtt_us": _decimal("rtt_us", fabric.base_rtt_us),
        "lambda": _decimal("lambda", fabric.ecn_lambda),
        "hysteresis_pct": _decimal("hysteresis_pct", agent.hysteresis_pct),
        "hdcq_k": _decimal("hdcq_k", agent.hdcq_k),
        "stale_after_ms": str(agent.stale_after_ms),
        "queues": ",".join(str(q) for q in fleet.dynamic_queues),
        "version": version,
    }


def build(ctx: SwitchContext) -> Entries:
    return checked_entries(SCHEMA, {"global": agent_fields(ctx)})
