"""CONFIG_DB validation as SONiC's YANG models (and GCU) apply it to a gNMI Set.

Sources: sonic-buildimage:src/sonic-yang-models/yang-models/sonic-{wred-profile,scheduler,
queue,port-qos-map,dscp-tc-map,tc-queue-map,buffer-pool,buffer-profile,buffer-queue,buffer-pg,
pfcwd,tc-priority-group-map,pfc-priority-queue-map}.yang,
and the fixed SLUICE_AGENT field names the controller and the qos-agent share. Pure:
``validate_change(before, after)`` returns every problem, each naming table, key and field.

What is checked for each added or changed entry: the table is one vsonic models, the key
format (one port per key, an existing PORT), unknown fields, ranges, enums, mandatory fields,
cross-field rules (max >= min) and that every reference names an entry that exists in the
would-be config. For each deleted entry: nothing left still references it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from vsonic import sluice_yang
from vsonic.db import Config, EntryKey, Fields
from vsonic.schema_types import (
    BOOLEAN,
    STOI_MAX,
    UINT32_MAX,
    UINT64_MAX,
    FieldType,
    Integer,
    IntList,
    KeyRule,
    OneOf,
    Ref,
    first_broken,
    fixed_key,
    key_port,
    name_key,
    port_key,
    port_queue_key,
)

EntryRule = Callable[[Fields], list[str]]

# sonic-wred-profile.yang: 1-32 characters, no dot. Schedulers, maps and buffer objects are
# named like "scheduler.1" in stock configs, so a dot is allowed there.
WRED_NAME = name_key(r"[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}", "a profile name of 1-32 of [-a-zA-Z0-9_]")
OBJECT_NAME = name_key(r"[a-zA-Z0-9][-a-zA-Z0-9_.]{0,31}", "a name of 1-32 of [-a-zA-Z0-9_.]")
# sonic-buffer-profile.yang types a profile's name as a plain string: SONiC's own lossless
# profiles pass 32 characters (pg_lossless_100000_300m_mtu9216_profile, buffermgrdyn.cpp).
BUFFER_PROFILE_NAME = name_key(
    r"[a-zA-Z0-9][-a-zA-Z0-9_.]{0,63}", "a name of 1-64 of [-a-zA-Z0-9_.]"
)
PFC_WD_GLOBAL = "GLOBAL"
# The counter groups sonic-flex_counter.yang models (and orchagent's flexcounterorch.cpp polls).
FLEX_COUNTER_GROUPS = (
    "ACL", "BUFFER_POOL_WATERMARK", "DEBUG_COUNTER", "ENI", "FLOW_CNT_ROUTE", "FLOW_CNT_TRAP",
    "PFCWD", "PG_DROP", "PG_WATERMARK", "PORT", "PORT_BUFFER_DROP", "PORT_RATES", "QUEUE",
    "QUEUE_WATERMARK", "RIF", "TUNNEL", "WRED_ECN_PORT", "WRED_ECN_QUEUE",
)  # fmt: skip
QUEUE_INDEX_MAX = 255  # YANG qindex pattern allows up to three digits; uint8 in SAI


@dataclass(frozen=True)
class TableSpec:
    key: KeyRule
    fields: Mapping[str, FieldType] = field(default_factory=dict)
    mandatory: tuple[str, ...] = ()
    rules: tuple[EntryRule, ...] = ()
    # Map tables name their fields by number ("0".."63"); ``field_numbers`` bounds them and
    # ``map_value`` types every value.
    field_numbers: tuple[int, int] | None = None
    map_value: FieldType | None = None
    open_fields: bool = False  # tables vsonic carries but does not model field by field
    refused_fields: Mapping[str, str] = field(default_factory=dict)

    def field_type(self, name: str) -> FieldType | None:
        if self.field_numbers is not None and self.map_value is not None:
            lo, hi = self.field_numbers
            if Integer(lo, hi).problem(name) is None:
                return self.map_value
            return None
        return self.fields.get(name)


def _min_max(prefix: str, lo_field: str, hi_field: str) -> EntryRule:
    def rule(fields: Fields) -> list[str]:
        lo, hi = fields.get(lo_field), fields.get(hi_field)
        if lo is None or hi is None or not (lo.isdigit() and hi.isdigit()):
            return []
        if int(hi) < int(lo):
            return [f"field '{hi_field}': {hi} is below {lo_field} {lo} ({prefix} max >= min)"]
        return []

    return rule


def _scheduler_rates(fields: Fields) -> list[str]:
    # sonic-scheduler.yang: pir needs cir > 0 and pir >= cir; pbs >= cbs.
    problems: list[str] = []
    cir, pir = fields.get("cir"), fields.get("pir")
    if pir is not None and pir.isdigit():
        if cir is None or not cir.isdigit() or int(cir) == 0:
            problems.append("field 'pir': needs cir > 0")
        elif int(pir) < int(cir):
            problems.append(f"field 'pir': {pir} is below cir {cir}")
    cbs, pbs = fields.get("cbs"), fields.get("pbs")
    if cbs and pbs and cbs.isdigit() and pbs.isdigit() and int(pbs) < int(cbs):
        problems.append(f"field 'pbs': {pbs} is below cbs {cbs}")
    return problems


def _one_threshold(fields: Fields) -> list[str]:
    # sonic-buffer-profile.yang: a profile has exactly one of dynamic_th and static_th.
    present = [f for f in ("dynamic_th", "static_th") if f in fields]
    if len(present) != 1:
        return ["fields 'dynamic_th'/'static_th': exactly one must be set"]
    return []


def _pfc_wd_scope(fields: Fields) -> list[str]:
    # sonic-pfcwd.yang's musts: POLL_INTERVAL only on GLOBAL, the per-port leaves never there.
    # The key is not in ``fields``; a GLOBAL entry is the one that carries POLL_INTERVAL.
    if "POLL_INTERVAL" in fields:
        port_only = sorted(set(fields) & set(_PFC_WD_PORT_FIELDS))
        if port_only:
            return [f"field '{port_only[0]}': not on the GLOBAL entry"]
    return []


def _pool_percentage(fields: Fields) -> list[str]:
    if "percentage" not in fields:
        return []
    if fields.get("mode") != "dynamic" or "size" in fields:
        return ["field 'percentage': only for a dynamic pool without 'size'"]
    return []


def _map_spec(key_range: tuple[int, int], value: FieldType) -> TableSpec:
    return TableSpec(key=OBJECT_NAME, field_numbers=key_range, map_value=value)


_COLOURS = ("green", "yellow", "red")
_WRED_FIELDS: dict[str, FieldType] = {"ecn": OneOf(
    ("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red",
     "ecn_yellow_red", "ecn_all")
)}  # fmt: skip
for _c in _COLOURS:
    _WRED_FIELDS[f"{_c}_min_threshold"] = Integer(0, STOI_MAX)
    _WRED_FIELDS[f"{_c}_max_threshold"] = Integer(0, STOI_MAX)
    _WRED_FIELDS[f"{_c}_drop_probability"] = Integer(0, 100)
    _WRED_FIELDS[f"wred_{_c}_enable"] = BOOLEAN

_BYTES32 = Integer(0, UINT32_MAX)
_PFC_WD_PORT_FIELDS: dict[str, FieldType] = {
    "action": OneOf(("drop", "forward", "alert")),
    "detection_time": Integer(100, 5000),
    "restoration_time": Integer(100, 60000),
    "pfc_stat_history": OneOf(("enable", "disable")),
}
_STOI_BYTES = Integer(0, STOI_MAX)
_PORT_QOS_REFS = {
    "dscp_to_tc_map": "DSCP_TO_TC_MAP",
    "tc_to_queue_map": "TC_TO_QUEUE_MAP",
    "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
    "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
    "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "dot1p_to_tc_map": "DOT1P_TO_TC_MAP",
    "tc_to_dscp_map": "TC_TO_DSCP_MAP",
    "dscp_to_fc_map": "DSCP_TO_FC_MAP",
    "exp_to_fc_map": "EXP_TO_FC_MAP",
    "scheduler": "SCHEDULER",
}

TABLES: dict[str, TableSpec] = {
    "WRED_PROFILE": TableSpec(
        key=WRED_NAME,
        fields=_WRED_FIELDS,
        rules=tuple(_min_max(c, f"{c}_min_threshold", f"{c}_max_threshold") for c in _COLOURS),
    ),
    "SCHEDULER": TableSpec(
        key=OBJECT_NAME,
        fields={
            "type": OneOf(("DWRR", "WRR", "STRICT")),
            "weight": Integer(1, 100),
            "meter_type": OneOf(("packets", "bytes")),
            "cir": Integer(0, UINT64_MAX),
            "pir": Integer(0, UINT64_MAX),
            "cbs": _BYTES32,
            "pbs": _BYTES32,
        },
        rules=(_scheduler_rates,),
        # In YANG, but qosorch has no handler for it and refuses the whole entry (qosorch.cpp).
        refused_fields={"priority": "qosorch has no handler for it; the entry would fail"},
    ),
    "QUEUE": TableSpec(
        key=port_queue_key(True, QUEUE_INDEX_MAX, "CPU"),
        fields={"scheduler": Ref("SCHEDULER"), "wred_profile": Ref("WRED_PROFILE")},
    ),
    "DSCP_TO_TC_MAP": _map_spec((0, 63), Integer(0, 15)),
    "TC_TO_QUEUE_MAP": _map_spec((0, 15), Integer(0, QUEUE_INDEX_MAX)),
    "TC_TO_PRIORITY_GROUP_MAP": _map_spec((0, 15), Integer(0, 7)),
    "MAP_PFC_PRIORITY_TO_QUEUE": _map_spec((0, 7), Integer(0, QUEUE_INDEX_MAX)),
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": _map_spec((0, 7), Integer(0, 7)),
    "DOT1P_TO_TC_MAP": _map_spec((0, 7), Integer(0, 15)),
    "TC_TO_DSCP_MAP": _map_spec((0, 15), Integer(0, 63)),
    "DSCP_TO_FC_MAP": _map_spec((0, 63), Integer(0, 7)),
    "EXP_TO_FC_MAP": _map_spec((0, 7), Integer(0, 7)),
    "PORT_QOS_MAP": TableSpec(
        key=port_key("global"),
        fields={
            **{name: Ref(table) for name, table in _PORT_QOS_REFS.items()},
            "pfc_enable": IntList(0, 7),
            "pfcwd_sw_enable": IntList(0, 7),
        },
    ),
    "BUFFER_POOL": TableSpec(
        key=OBJECT_NAME,
        fields={
            "type": OneOf(("ingress", "egress", "both")),
            "mode": OneOf(("static", "dynamic")),
            "size": _BYTES32,
            "xoff": _BYTES32,
            "percentage": Integer(0, 100),
        },
        mandatory=("type", "mode"),
        rules=(_pool_percentage,),
    ),
    "BUFFER_PROFILE": TableSpec(
        key=BUFFER_PROFILE_NAME,
        fields={
            "pool": Ref("BUFFER_POOL"),
            "size": _BYTES32,
            "dynamic_th": Integer(-8, 7),  # alpha = 2^dynamic_th (SAI saibuffer.h)
            "static_th": _BYTES32,
            "xon": _BYTES32,
            "xoff": _BYTES32,
            "xon_offset": _BYTES32,
            "headroom_type": OneOf(("static", "dynamic")),
            "packet_discard_action": OneOf(("drop", "trim")),
        },
        mandatory=("pool", "size"),
        rules=(_one_threshold,),
    ),
    "BUFFER_QUEUE": TableSpec(
        key=port_queue_key(True, QUEUE_INDEX_MAX),
        fields={"profile": Ref("BUFFER_PROFILE")},
        mandatory=("profile",),
    ),
    # sonic-buffer-pg.yang: ``<port>|<pg>`` or ``<port>|<pg>-<pg>``, pg 0..7.
    "BUFFER_PG": TableSpec(
        key=port_queue_key(True, 7),
        fields={"profile": Ref("BUFFER_PROFILE")},
    ),
    "PFC_WD": TableSpec(
        key=port_key(PFC_WD_GLOBAL),
        fields={**_PFC_WD_PORT_FIELDS, "POLL_INTERVAL": Integer(100, 1000)},
        rules=(_pfc_wd_scope,),
    ),
    # Fields, ranges, mandatory fields and the cross-field rules (the model's ``must``
    # statements) from sonic-sluice-agent.yang, through the generated vsonic/sluice_yang.py.
    "SLUICE_AGENT": TableSpec(
        key=fixed_key(sluice_yang.AGENT_KEY),
        fields=sluice_yang.AGENT_FIELDS,
        mandatory=sluice_yang.AGENT_MANDATORY,
        rules=(first_broken(sluice_yang.AGENT_MUSTS, sluice_yang.AGENT_FIELDS),),
    ),
    "SLUICE_AGENT_QUEUE": TableSpec(
        key=port_queue_key(False, sluice_yang.QUEUE_INDEX_MAX),
        fields=sluice_yang.AGENT_QUEUE_FIELDS,
        mandatory=sluice_yang.AGENT_QUEUE_MANDATORY,
        rules=(first_broken(sluice_yang.AGENT_QUEUE_MUSTS, sluice_yang.AGENT_QUEUE_FIELDS),),
    ),
    # Carried so a switch has ports and metadata; sluice does not write them.
    "PORT": TableSpec(key=name_key(r"Ethernet[0-9]{1,4}", "EthernetN"), open_fields=True),
    "DEVICE_METADATA": TableSpec(key=fixed_key("localhost"), open_fields=True),
    # sonic-flex_counter.yang: one container per counter group, each with these three leaves;
    # POLL_INTERVAL is a uint32 of ms (the 100 ms floor is counterpoll's, not the model's).
    "FLEX_COUNTER_TABLE": TableSpec(
        key=fixed_key(*FLEX_COUNTER_GROUPS),
        fields={
            "FLEX_COUNTER_STATUS": OneOf(("enable", "disable")),
            "FLEX_COUNTER_DELAY_STATUS": BOOLEAN,
            "POLL_INTERVAL": Integer(1, UINT32_MAX),
        },
    ),
}


# What a gNMI client reads when GCU refuses a patch before it validates it: a table without a
# YANG model, a table the patch leaves empty, a value GCU cannot handle (sonic-utilities
# generic_config_updater/generic_updater.py raises for each, inside the per-scope loop whose
# first output line is this; sonic-host-services host_modules/gcu.py passes on only the first
# line of GCU's output that says "Error"). Seen through the real server: tests/realsonic/
# test_vsonic_diff_gcu.py. GCU's own reason ("Given patch is not valid because it has changes
# to tables without YANG models") stays in its log.
GCU_SCOPE_REFUSAL = "Error: Failed to apply patch on the following scopes:"
# The tables whose model is sonic-sluice-agent.yang: on a switch without that file
# installed, they have no YANG model and GCU refuses any patch that touches them.
SLUICE_YANG_TABLES = frozenset({"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"})


def patch_problems(touched_tables: Iterable[str], *, unmodelled: frozenset[str]) -> list[str]:
    """GCU's first check of a patch, that every table it touches has a YANG model loaded from
    /usr/local/yang-models: [] or the one message that refuses all of it.

    ``unmodelled``: the tables this switch has no YANG model for (``GcuBehaviour``).
    """
    if unmodelled.intersection(touched_tables):
        return [GCU_SCOPE_REFUSAL]
    return []


def _entry_problems(table: str, key: str, fields: Fields, after: Config) -> list[str]:
    spec = TABLES.get(table)
    if spec is None:
        return [f"{table}|{key}: table {table} has no YANG model in vsonic"]
    problems = []
    key_problem = spec.key(key, after)
    if key_problem:
        problems.append(key_problem)
    for name, value in sorted(fields.items()):
        problems.extend(_field_problems(spec, table, name, value, after))
    problems.extend(f"field '{m}': mandatory, missing" for m in spec.mandatory if m not in fields)
    for rule in spec.rules:
        problems.extend(rule(fields))
    return [f"{table}|{key}: {p}" for p in problems]


def _field_problems(spec: TableSpec, table: str, name: str, value: str, after: Config) -> list[str]:
    if name in spec.refused_fields:
        return [f"field '{name}': {spec.refused_fields[name]}"]
    if spec.open_fields:
        return []
    ftype = spec.field_type(name)
    if ftype is None:
        return [f"field '{name}': unknown field in {table}"]
    reason = ftype.problem(value)
    if reason:
        return [f"field '{name}': {reason}"]
    target = ftype.referenced_table()
    if target and value and (target, value) not in after:
        return [f"field '{name}': references {target} '{value}', which does not exist"]
    return []


def _referrers(name: EntryKey, after: Config) -> list[str]:
    """Who in ``after`` still points at ``name``, by leafref field or by port key."""
    table, key = name
    found = []
    for (rtable, rkey), fields in sorted(after.items()):
        spec = TABLES.get(rtable)
        if spec is None:
            continue
        if table == "PORT" and key_port(rtable, rkey) == key:
            found.append(f"{rtable}|{rkey} (key)")
        for fname, value in sorted(fields.items()):
            ftype = spec.field_type(fname)
            if ftype is not None and ftype.referenced_table() == table and value == key:
                found.append(f"{rtable}|{rkey} field '{fname}'")
    return found


def validate_change(before: Config, after: Config) -> list[str]:
    """Every reason the change from ``before`` to ``after`` would be refused; [] if none."""
    problems: list[str] = []
    for name, fields in sorted(after.items()):
        if before.get(name) != fields:
            problems.extend(_entry_problems(name[0], name[1], fields, after))
    for name in sorted(before.keys() - after.keys()):
        users = _referrers(name, after)
        if users:
            problems.append(
                f"{name[0]}|{name[1]}: cannot delete, still referenced by {', '.join(users)}"
            )
    return problems
