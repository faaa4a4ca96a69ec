"""SCHEDULER: one scheduler per queue index, ``SLUICE_SCHED_<queue>``.

STRICT queues get ``type`` only; DWRR queues also get ``weight``, normalised over all DWRR
classes into SONiC's 1..100 (sonic-scheduler.yang). ``priority`` is never written: qosorch
has no handler for it and an unknown field invalidates the whole entry (sonic-swss
orchagent/qosorch.cpp). Weights are the same on every port, so one scheduler per queue index
serves the whole switch.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.sonic.context import SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import Entries, checked_entries

TABLE = "SCHEDULER"


def _dwrr_has_weight(fields: Mapping[str, str]) -> str | None:
    if fields.get("type") in ("DWRR", "WRR") and "weight" not in fields:
        return "a DWRR/WRR scheduler needs a weight"
    return None


SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=r"SLUICE_SCHED_[0-7]",
    fields=(
        FieldSpec("type", "enum", choices=("STRICT", "DWRR", "WRR"), required=True),
        FieldSpec("weight", "uint", 1, 100),
    ),
    rules=(_dwrr_has_weight,),
)


def scheduler_fields(scheduling: str, weight: int) -> Fields:
    """``{"type": "STRICT"}`` or ``{"type": "DWRR", "weight": "<1..100>"}``."""
    if scheduling == "STRICT":
        return {"type": "STRICT"}
    return {"type": scheduling, "weight": str(weight)}


def build(ctx: SwitchContext) -> Entries:
    return checked_entries(SCHEMA, ctx.fleet.schedulers)
