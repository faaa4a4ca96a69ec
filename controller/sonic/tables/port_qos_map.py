"""PORT_QOS_MAP|<port>: binds sluice's DSCP->TC and TC->queue maps to each managed port, and
with a lossless class its PFC settings (sonic-buildimage src/sonic-yang-models/yang-models/
sonic-port-qos-map.yang).

- ``dscp_to_tc_map``, ``tc_to_queue_map``: always;
- lossless classes: ``pfc_enable`` (the PFC priorities, ``[0-7](,[0-7])*``),
  ``pfcwd_sw_enable`` (the same: the watchdog watches them), ``tc_to_pg_map``
  (TC_TO_PRIORITY_GROUP_MAP), ``pfc_to_queue_map`` (MAP_PFC_PRIORITY_TO_QUEUE) and
  ``pfc_to_pg_map`` (PFC_PRIORITY_TO_PRIORITY_GROUP_MAP).

A shared table: the entry usually already holds the operator's own settings; sluice writes and
compares only the fields it sets. On an adopted switch the PFC priority lists are the
operator's with the intent's added, and the maps merged ones (controller/sonic/coexist.py).
The ``global`` key is never written: a per-port binding leaves unmanaged ports alone.
"""

from __future__ import annotations

from controller.sonic.context import MAP_NAME, SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_KEY, Entries, check_port_name

TABLE = "PORT_QOS_MAP"
PRIORITY_LIST = r"([0-7](,[0-7])*)?"
# The fields that list PFC priorities.
PRIORITY_FIELDS = ("pfc_enable", "pfcwd_sw_enable")

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_KEY,
    fields=(
        FieldSpec("dscp_to_tc_map", "ref", ref="DSCP_TO_TC_MAP", required=True),
        FieldSpec("tc_to_queue_map", "ref", ref="TC_TO_QUEUE_MAP", required=True),
        FieldSpec("tc_to_pg_map", "ref", ref="TC_TO_PRIORITY_GROUP_MAP"),
        FieldSpec("pfc_to_queue_map", "ref", ref="MAP_PFC_PRIORITY_TO_QUEUE"),
        FieldSpec("pfc_to_pg_map", "ref", ref="PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"),
        *(FieldSpec(name, "string", pattern=PRIORITY_LIST) for name in PRIORITY_FIELDS),
    ),
    shared=True,
)


def priority_list(priorities: frozenset[int] | tuple[int, ...]) -> str:
    """``3,4``: PFC priorities as SONiC lists them, ascending."""
    return ",".join(str(p) for p in sorted(priorities))


def _binding(ctx: SwitchContext) -> Fields:
    binding = {"dscp_to_tc_map": MAP_NAME, "tc_to_queue_map": MAP_NAME}
    lossless = ctx.fleet.lossless
    if lossless is not None:
        priorities = priority_list(lossless.priorities)
        binding |= dict.fromkeys(PRIORITY_FIELDS, priorities)
        binding |= dict.fromkeys(("tc_to_pg_map", "pfc_to_queue_map", "pfc_to_pg_map"), MAP_NAME)
    SCHEMA.check_fields("<port>", binding)
    return binding


def build(ctx: SwitchContext) -> Entries:
    binding = _binding(ctx)
    out: Entries = {}
    for port in ctx.ports:
        check_port_name(SCHEMA, port.name)
        out[(TABLE, port.name)] = dict(binding)
    return out
