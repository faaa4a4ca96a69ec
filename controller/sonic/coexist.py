"""Coexisting with the operator's QoS config: sluice owns only what the intent declares. Pure.

Three rules, one function each:

- **The baseline** (``operator_baseline``): what a switch ran of the QoS tables before sluice
  first wrote to it, sluice's own objects left out. The adoption record keeps it (the
  ``adoptions`` table); the diff restores from it (``controller/sonic/diff.py``: a field of
  a shared entry sluice stops setting gets its saved value back); discovery shows it.
- **Merged maps** (``coexist``): SONiC binds one DSCP->TC and one TC->queue map to each port
  (``PORT_QOS_MAP``, sonic-port-qos-map.yang). sluice's own maps list only the intent's DSCPs
  and queues, and every DSCP a bound map leaves out goes to TC 0 (SAI's default). So on a
  port that was bound to an operator map before adoption, sluice binds a merged map instead,
  ``SLUICE_<operator map>``: the operator's entries, with the intent's over them. A port that
  had no map keeps sluice's plain ``SLUICE`` map, as on a fresh switch.
  The same holds for a lossless class's maps (``tc_to_pg_map``, ``pfc_to_queue_map``,
  ``pfc_to_pg_map``; a port with the operator's lossless priorities and no ``pfc_to_pg_map``
  keeps none, and so does every port without the operator's map on a switch whose ASIC SONiC
  binds none on, ``controller/sonic/asic.py``: ``_left_unbound``), and
  its PFC priority lists (``pfc_enable``, ``pfcwd_sw_enable``) are the operator's with the
  intent's priorities added (``merged_priorities``).
- **Lossless protection** (``lossless_problems``): a port's lossless priorities are its
  ``pfc_enable`` (PFC pauses those priorities instead of dropping; in SONiC's stock config
  the PFC priority is the TC and its priority group, sonic-buildimage qos_config.j2). The
  DSCPs the port's map sends to them are lossless DSCPs; the queues its TC->queue and PFC
  priority->queue maps send them to are lossless queues. Unless the intent takes a priority
  over (``declared``: its lossless class says ``take_over``), it may not: move a DSCP onto or
  off a lossless priority, move a lossless TC to another queue or priority group, stop PFC
  or the watchdog on it, change the queue a pause for it stops or the priority group whose
  XOFF point sends it, set the scheduler, WRED
  profile or buffer profile of a lossless queue, write a priority group that holds it or
  overlaps the operator's priority groups, or change the port's watchdog (one per port).
  The intent's own new lossless priorities are added beside the operator's. Each is a
  ``FieldProblem`` naming the CONFIG_DB field; ``refuse_lossless_changes`` raises them
  together, before anything is written. A priority the intent declares lossless that the
  operator's config already makes lossless differently is refused the same way, with a
  problem saying so (``claimed``), until the intent takes it over.
- **SONiC's traditional buffer manager's groups** (``controller/sonic/buffermgrd.py``): on a
  port where buffermgrd writes the lossless priority groups itself (traditional buffer model,
  a ``CABLE_LENGTH``), sluice writes none: the headroom is buffermgrd's lookup-table profile.
- **The operator's lossless queue buffers** (``keep_operator_egress``): a lossless class's
  queue gets sluice's static egress profile, except a queue the operator's config already
  holds lossless traffic in and binds in ``BUFFER_QUEUE`` (SONiC's stock
  ``egress_lossless_profile``): that binding stays theirs, taken over or not.
- **The operator's priority group counters** (``controller/sonic/tables/flex_counter_table.py``
  ``keep_operator_groups``): a lossless class enables the ``PG_DROP`` and ``PG_WATERMARK``
  counter groups, except where the operator's config already sets their status (enabled:
  nothing to write; disabled: left off, and the plan says so).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from controller.errors import FieldProblem, LosslessConflict
from controller.intent.models import Intent
from controller.sonic.asic import pfc_to_pg
from controller.sonic.buffermgrd import (
    buffer_facts,
    leave_headroom,
    pg_groups,
    priorities_of,
)
from controller.sonic.context import MAP_NAME, PREFIX
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from controller.sonic.tables import SCHEMAS
from controller.sonic.tables.buffer_profile import EGRESS_LOSSLESS
from controller.sonic.tables.flex_counter_table import keep_operator_groups
from controller.sonic.tables.port_qos_map import priority_list

# What defines a port's lossless traffic, besides the tables sluice writes.
LOSSLESS_TABLES = (
    "BUFFER_PG",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
)
# The operator's QoS config an adoption record keeps: every table sluice writes, what makes
# traffic lossless, and the pools sluice's buffer profiles draw from.
BASELINE_TABLES: tuple[str, ...] = tuple(sorted({*SCHEMAS, *LOSSLESS_TABLES, "BUFFER_POOL"}))
# The PORT_QOS_MAP fields that list PFC priorities: the operator's stay listed beside the
# intent's.
PRIORITY_LISTS = ("pfc_enable", "pfcwd_sw_enable")
# The port bindings sluice writes, and the table each names.
MAP_BINDINGS = (
    ("dscp_to_tc_map", "DSCP_TO_TC_MAP"),
    ("tc_to_queue_map", "TC_TO_QUEUE_MAP"),
    ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP"),
    ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE"),
    ("pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"),
)
MAP_TABLES = frozenset(table for _, table in MAP_BINDINGS)
# A map name: 1-32 of [-a-zA-Z0-9_], starting with a letter or digit (sonic-dscp-tc-map.yang).
MAP_NAME_MAX = 32
GLOBAL = "global"  # PORT_QOS_MAP|global: the switch-wide DSCP->TC map of ports with none
PORTS_SHOWN = 4


def _is_sluice(name: str) -> bool:
    return name.startswith(PREFIX)


def operator_baseline(observed: SwitchConfig) -> SwitchConfig:
    """The operator's part of ``observed``: the entries of ``BASELINE_TABLES`` without
    sluice's own (a ``SLUICE`` table or key) and without fields naming a sluice object, and
    what says where SONiC's buffer manager writes lossless groups
    (``controller/sonic/buffermgrd.py`` ``buffer_facts``), which no diff ever writes."""
    baseline: SwitchConfig = buffer_facts(observed)
    for (table, key), fields in observed.items():
        if table not in BASELINE_TABLES or _is_sluice(table) or _is_sluice(key):
            continue
        kept = {name: value for name, value in fields.items() if not _is_sluice(value)}
        if kept:
            baseline[(table, key)] = kept
    return baseline


def merged_map_name(operator_map: str) -> str:
    """``SLUICE_AZURE`` for the operator's ``AZURE``; a name too long for SONiC's 32
    characters keeps its start and a digest of the whole."""
    name = f"{PREFIX}_{operator_map}"
    if len(name) <= MAP_NAME_MAX:
        return name
    digest = hashlib.sha256(operator_map.encode()).hexdigest()[:8]
    return f"{PREFIX}_{operator_map[: MAP_NAME_MAX - len(PREFIX) - 10]}_{digest}"


def port_binding(config: SwitchConfig, port: str, binding: str) -> str | None:
    """The map ``port`` is bound to in ``config`` (``binding``: a PORT_QOS_MAP field); a port
    without its own DSCP->TC map uses the switch-wide one (``PORT_QOS_MAP|global``)."""
    name = config.get(("PORT_QOS_MAP", port), {}).get(binding)
    if name is None and binding == "dscp_to_tc_map":
        name = config.get(("PORT_QOS_MAP", GLOBAL), {}).get(binding)
    return name


def _numeric(fields: Mapping[str, str]) -> Fields:
    return {
        k: fields[k]
        for k in sorted(fields, key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
    }


@dataclass(frozen=True)
class Coexisting:
    """The desired config with merged maps, and per merged map the fields it took from the
    operator's map: field -> that map's name (what a plan shows as the operator's, kept)."""

    config: SwitchConfig
    inherited: dict[EntryKey, dict[str, str]] = field(default_factory=dict)


def merged_priorities(wanted: str, port: str, binding: str, baseline: SwitchConfig) -> str:
    """A PFC priority list (``pfc_enable``, ``pfcwd_sw_enable``) with the operator's priorities
    kept beside the intent's. The watchdog watches ``pfcwd_sw_enable`` where it is set and
    ``pfc_enable`` otherwise (sonic-swss orchagent/pfcwdorch.cpp), so without a list of its
    own the operator's watched priorities are their PFC ones, where they have a watchdog."""
    theirs = baseline.get(("PORT_QOS_MAP", port), {})
    kept = theirs.get(binding)
    if kept is None and binding == "pfcwd_sw_enable" and ("PFC_WD", port) in baseline:
        kept = theirs.get("pfc_enable")
    return priority_list(priorities_of(wanted) | priorities_of(kept))


def keep_operator_egress(desired: SwitchConfig, baseline: SwitchConfig) -> SwitchConfig:
    """``desired`` without the ``BUFFER_QUEUE`` entries that would bind one of the operator's
    lossless queues (``lossless_ports``) that they bind themselves to sluice's egress
    lossless profile (a lossy class's profile there is refused, ``_check_queues``), and without
    sluice's egress lossless profile when no queue is left on it."""
    held = lossless_ports(baseline)
    dropped: set[EntryKey] = set()
    for (table, key), fields in desired.items():
        port, _, index = key.partition("|")
        ours = fields.get("profile", "").startswith(EGRESS_LOSSLESS)
        if table != "BUFFER_QUEUE" or not ours or port not in held or not index.isdigit():
            continue
        queue = int(index)
        theirs = _operator_value(baseline, table, port, queue, "profile")
        if queue in held[port].queues and theirs is not None:
            dropped.add((table, key))
    if not dropped:
        return desired
    kept = {k: v for k, v in desired.items() if k not in dropped}
    used = {f.get("profile") for (t, _), f in kept.items() if t == "BUFFER_QUEUE"}
    return {
        (table, key): fields
        for (table, key), fields in kept.items()
        if not (table == "BUFFER_PROFILE" and key.startswith(EGRESS_LOSSLESS) and key not in used)
    }


def _left_unbound(baseline: SwitchConfig, port: str, binding: str, asic_binds: bool) -> bool:
    """Whether ``port``'s ``pfc_to_pg_map`` stays unbound: the operator has bound none there,
    and the switch's ASIC is not one SONiC binds the map on (``asic_binds`` False,
    ``controller/sonic/asic.py``) or the operator runs lossless
    priorities on it with no such map (SAI's "no map", saiport.h
    ``SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_PRIORITY_GROUP_MAP``, SONiC's stock config on most
    platforms). No map, not even one listing theirs as priority n -> group n: SAI states no
    default to copy, the stock config binds the map only on the ASICs that take it
    (sonic-buildimage qos_config.j2 ``pfc_to_pg_map_supported_asics``), and a binding the
    ASIC refuses ends orchagent's handling of the port's PORT_QOS_MAP entry before its PFC
    bits (sonic-swss orchagent/qosorch.cpp ``handlePortQosMapTable``): docs/lossless.md, "A
    port without the operator's ``pfc_to_pg_map``"."""
    if binding != "pfc_to_pg_map" or port_binding(baseline, port, binding) is not None:
        return False
    if not asic_binds:
        return True
    return bool(priorities_of(baseline.get(("PORT_QOS_MAP", port), {}).get("pfc_enable")))


def coexist(desired: SwitchConfig, baseline: SwitchConfig | None) -> Coexisting:
    """``desired`` with each managed port bound to merged maps where it was bound to an
    operator's map before adoption, the operator's PFC priorities kept in its priority
    lists, their lossless queues' buffer bindings and their priority group counter groups
    kept (module docstring). Pure;
    ``desired`` is not modified. Without a baseline (nothing known of the switch)
    ``desired`` is what it is."""
    if not baseline:
        return Coexisting(desired)
    desired = keep_operator_egress(leave_headroom(desired, baseline), baseline)
    desired = keep_operator_groups(desired, baseline)
    asic_binds = pfc_to_pg(baseline).binds
    merged: dict[EntryKey, Fields] = {}
    inherited: dict[EntryKey, dict[str, str]] = {}
    bindings: dict[EntryKey, Fields] = {}
    for (table, port), fields in desired.items():
        if table != "PORT_QOS_MAP":
            continue
        rebound = dict(fields)
        for binding in PRIORITY_LISTS:
            if binding in fields:
                rebound[binding] = merged_priorities(fields[binding], port, binding, baseline)
        for binding, map_table in MAP_BINDINGS:
            ours = fields.get(binding)
            theirs = port_binding(baseline, port, binding)
            if ours is not None and _left_unbound(baseline, port, binding, asic_binds):
                del rebound[binding]
                continue
            if ours is None or theirs is None or _is_sluice(theirs):
                continue
            operator_map = baseline.get((map_table, theirs))
            if operator_map is None:
                continue
            name = merged_map_name(theirs)
            map_key = (map_table, name)
            if map_key not in merged:
                own = desired.get((map_table, ours), {})
                merged[map_key] = _numeric({**operator_map, **own})
                SCHEMAS[map_table].check(name, merged[map_key])
                inherited[map_key] = {n: theirs for n in operator_map if n not in own}
            rebound[binding] = name
        if rebound != fields:
            bindings[(table, port)] = rebound
    if not bindings:
        return Coexisting(desired)
    still_bound = {
        (map_table, fields[binding])
        for fields in (bindings.get(k, f) for k, f in desired.items() if k[0] == "PORT_QOS_MAP")
        for binding, map_table in MAP_BINDINGS
        if binding in fields
    }
    config: SwitchConfig = {}
    for entry_key, fields in desired.items():
        table, key = entry_key
        if table in MAP_TABLES and key == MAP_NAME:
            # Merged maps go where sluice's plain map stood (the write order within a table).
            config.update({k: v for k, v in merged.items() if k[0] == table})
            if entry_key not in still_bound:
                continue
        config[entry_key] = bindings.get(entry_key, fields)
    for entry_key, fields in merged.items():
        config.setdefault(entry_key, fields)
    return Coexisting(config, inherited)


def effective(desired: SwitchConfig, baseline: SwitchConfig | None) -> SwitchConfig:
    """What sluice writes to a switch whose operator config before adoption was
    ``baseline`` (None: not known, as on a fresh switch): ``coexist``'s config."""
    return coexist(desired, baseline).config


# --------------------------------------------------------------------------------------------
# lossless protection


@dataclass(frozen=True)
class Lossless:
    """One port's lossless traffic as the operator configured it."""

    port: str
    priorities: frozenset[int]  # pfc_enable
    tc_of_dscp: Mapping[int, int]  # the port's whole DSCP->TC map (unmapped DSCPs: TC 0)
    queue_of_tc: Mapping[int, int]  # the lossless TCs' queues
    queues: frozenset[int]  # the queues lossless traffic is held in

    @property
    def dscps(self) -> tuple[int, ...]:
        """The DSCPs that travel lossless on this port."""
        return tuple(d for d, tc in sorted(self.tc_of_dscp.items()) if tc in self.priorities)


def _int_map(fields: Mapping[str, str]) -> dict[int, int]:
    return {int(k): int(v) for k, v in fields.items() if k.isdigit() and v.isdigit()}


def _map_of(config: SwitchConfig, table: str, name: str | None) -> dict[int, int] | None:
    if name is None:
        return None
    found = config.get((table, name))
    return None if found is None else _int_map(found)


def lossless_ports(config: SwitchConfig) -> dict[str, Lossless]:
    """Every port with PFC on some priority, and what is lossless on it, per ``config`` (an
    operator's baseline, or what discovery read)."""
    found: dict[str, Lossless] = {}
    for (table, port), fields in sorted(config.items()):
        if table != "PORT_QOS_MAP" or port == GLOBAL:
            continue
        priorities = priorities_of(fields.get("pfc_enable"))
        if not priorities:
            continue
        dscp = _map_of(config, "DSCP_TO_TC_MAP", port_binding(config, port, "dscp_to_tc_map"))
        tc_queue = _map_of(config, "TC_TO_QUEUE_MAP", fields.get("tc_to_queue_map"))
        pfc_queue = _map_of(config, "MAP_PFC_PRIORITY_TO_QUEUE", fields.get("pfc_to_queue_map"))
        # No map bound: SAI's defaults, TC n to queue n.
        queue_of_tc = {tc: (tc_queue or {}).get(tc, tc) for tc in priorities}
        pfc_queues = {(pfc_queue or {}).get(p, p) for p in priorities}
        found[port] = Lossless(
            port,
            priorities,
            dscp or {},
            queue_of_tc,
            frozenset(queue_of_tc.values()) | frozenset(pfc_queues),
        )
    return found


def _queue_covered(key: str, port: str, queue: int) -> bool:
    """Whether ``BUFFER_QUEUE``/``QUEUE`` key ``key`` covers ``port``'s ``queue`` (a single
    index or a range such as ``Ethernet0|3-4``)."""
    name, _, index = key.partition("|")
    if name != port:
        return False
    low, _, high = index.partition("-")
    if not low.isdigit() or (high and not high.isdigit()):
        return False
    return int(low) <= queue <= int(high or low)


def _operator_value(
    baseline: SwitchConfig, table: str, port: str, queue: int, name: str
) -> str | None:
    for (t, key), fields in baseline.items():
        if t == table and _queue_covered(key, port, queue) and name in fields:
            return fields[name]
    return None


class _Problems:
    """Problems by (field, reason), with the ports each was found on."""

    def __init__(self) -> None:
        self._ports: dict[tuple[str, str], list[str]] = {}

    def add(self, path: str, reason: str, port: str) -> None:
        self._ports.setdefault((path, reason), []).append(port)

    def count(self) -> int:
        return sum(len(ports) for ports in self._ports.values())

    def listed(self) -> list[FieldProblem]:
        out: list[FieldProblem] = []
        for (path, reason), ports in self._ports.items():
            shown = ", ".join(ports[:PORTS_SHOWN])
            more = f" and {len(ports) - PORTS_SHOWN} more" if len(ports) > PORTS_SHOWN else ""
            out.append(FieldProblem(path, f"{reason} (on {shown}{more})"))
        return out


@dataclass(frozen=True)
class LosslessClaim:
    """The PFC priorities an intent makes lossless (``claimed``), and those of them whose
    lossless class may replace an operator's own config of that priority (``taken_over``)."""

    claimed: frozenset[int] = frozenset()
    taken_over: frozenset[int] = frozenset()


NO_CLAIM = LosslessClaim()


def lossless_claim(intent: Intent | None) -> LosslessClaim:
    classes = [c.lossless for c in intent.service_classes if c.lossless] if intent else []
    return LosslessClaim(
        frozenset(c.pfc_priority for c in classes),
        frozenset(c.pfc_priority for c in classes if c.take_over),
    )


def lossless_problems(
    desired: SwitchConfig,
    baseline: SwitchConfig | None,
    *,
    declared: Iterable[int] = (),
    claimed: Iterable[int] = (),
) -> list[FieldProblem]:
    """Every field of ``desired`` (what sluice would write, ``effective``) that changes the
    lossless traffic ``baseline`` configures, unless the intent takes the priority over
    (``declared``). A priority the intent makes lossless (``claimed``) without taking it over
    gets one more problem saying so, on a port where it is refused. Empty when nothing is
    lossless or nothing would change."""
    if not baseline:
        return []
    own = frozenset(declared)
    problems = _Problems()
    for port, lossless in lossless_ports(baseline).items():
        guarded = lossless.priorities - own
        if not guarded or ("PORT_QOS_MAP", port) not in desired:
            continue
        before = problems.count()
        _check_dscps(desired, baseline, lossless, guarded, problems)
        _check_tc_queues(desired, baseline, lossless, guarded, problems)
        queues = frozenset(lossless.queue_of_tc[tc] for tc in guarded)
        _check_queues(desired, baseline, port, queues, problems)
        _check_pfc(desired, baseline, lossless, guarded, problems)
        _check_priority_groups(desired, baseline, port, guarded, problems)
        _check_watchdog(desired, baseline, port, problems)
        if problems.count() > before:
            for priority in sorted(guarded & frozenset(claimed)):
                reason = (
                    f"the intent makes PFC priority {priority} lossless, which the operator's "
                    "config already does differently; its class may take it over "
                    "(lossless.take_over: true)"
                )
                problems.add(f"PORT_QOS_MAP|{port}.pfc_enable", reason, port)
    return problems.listed()


def _bound_map(
    desired: SwitchConfig, baseline: SwitchConfig, port: str, binding: str, table: str
) -> tuple[str | None, dict[int, int] | None]:
    """The map ``port`` would be bound to, by name, and its entries (desired over baseline)."""
    name = port_binding(desired, port, binding) or port_binding(baseline, port, binding)
    found = _map_of(desired, table, name)
    return name, found if found is not None else _map_of(baseline, table, name)


def _check_dscps(
    desired: SwitchConfig,
    baseline: SwitchConfig,
    lossless: Lossless,
    guarded: frozenset[int],
    problems: _Problems,
) -> None:
    name, new = _bound_map(desired, baseline, lossless.port, "dscp_to_tc_map", "DSCP_TO_TC_MAP")
    if name is None or new is None:
        return
    old = lossless.tc_of_dscp
    for dscp in sorted(set(old) | set(new)):
        before, after = old.get(dscp, 0), new.get(dscp, 0)
        if before == after or not ({before, after} & guarded):
            continue
        path = f"DSCP_TO_TC_MAP|{name}.{dscp}"
        if before in guarded and after not in lossless.priorities:
            reason = (
                f"DSCP {dscp} is lossless (PFC priority {before}); "
                f"the intent maps it to lossy TC {after}"
            )
        elif before in guarded:
            reason = (
                f"DSCP {dscp} is lossless on PFC priority {before}; "
                f"the intent moves it to priority {after}"
            )
        else:
            reason = (
                f"DSCP {dscp} is lossy (TC {before}); the intent maps it to PFC priority "
                f"{after}, which would pause it"
            )
        problems.add(path, reason, lossless.port)


def _check_tc_queues(
    desired: SwitchConfig,
    baseline: SwitchConfig,
    lossless: Lossless,
    guarded: frozenset[int],
    problems: _Problems,
) -> None:
    name, new = _bound_map(desired, baseline, lossless.port, "tc_to_queue_map", "TC_TO_QUEUE_MAP")
    if name is None:
        return
    for tc in sorted(guarded):
        before = lossless.queue_of_tc[tc]
        after = (new or {}).get(tc, tc if new is None else 0)
        if before != after:
            reason = (
                f"lossless TC {tc} is held in queue {before}; "
                f"the intent would send it to queue {after}"
            )
            problems.add(f"TC_TO_QUEUE_MAP|{name}.{tc}", reason, lossless.port)


_QUEUE_FIELDS = (("QUEUE", "scheduler"), ("QUEUE", "wred_profile"), ("BUFFER_QUEUE", "profile"))


def _check_queues(
    desired: SwitchConfig,
    baseline: SwitchConfig,
    port: str,
    queues: frozenset[int],
    problems: _Problems,
) -> None:
    for queue in sorted(queues):
        for table, name in _QUEUE_FIELDS:
            wanted = desired.get((table, f"{port}|{queue}"), {}).get(name)
            if wanted is None:
                continue
            theirs = _operator_value(baseline, table, port, queue, name)
            if wanted == theirs:
                continue
            held = f"the operator's {theirs}" if theirs is not None else "none"
            reason = (
                f"queue {queue} holds lossless traffic; its {name} is {held}, "
                f"the intent would make it {wanted}"
            )
            problems.add(f"{table}|{port}|{queue}.{name}", reason, port)


def _watched(config: SwitchConfig, port: str) -> frozenset[int]:
    """The priorities the port's PFC watchdog watches (``merged_priorities``)."""
    fields = config.get(("PORT_QOS_MAP", port), {})
    if "pfcwd_sw_enable" in fields:
        return priorities_of(fields["pfcwd_sw_enable"])
    if ("PFC_WD", port) in config:
        return priorities_of(fields.get("pfc_enable"))
    return frozenset()


def _mapped(
    config: SwitchConfig, baseline: SwitchConfig, port: str, binding: str, table: str, at: int
) -> str | None:
    """What the map ``port`` would be bound to in ``config`` (over ``baseline``) maps ``at``
    to; None without a map or an entry (SAI's default, which no map states)."""
    name = port_binding(config, port, binding) or port_binding(baseline, port, binding)
    if name is None:
        return None
    entries = config.get((table, name), baseline.get((table, name), {}))
    return entries.get(str(at))


def _check_pfc(
    desired: SwitchConfig,
    baseline: SwitchConfig,
    lossless: Lossless,
    guarded: frozenset[int],
    problems: _Problems,
) -> None:
    """PFC and the watchdog stay on the operator's priorities, their TCs keep their priority
    groups, their pauses the queues they stop and the groups that send them."""
    port = lossless.port
    wanted = desired.get(("PORT_QOS_MAP", port), {})
    theirs = baseline.get(("PORT_QOS_MAP", port), {})
    kept_on = {"pfc_enable": guarded, "pfcwd_sw_enable": _watched(baseline, port) & guarded}
    for name, before in kept_on.items():
        dropped = before - priorities_of(wanted[name]) if name in wanted else frozenset()
        if dropped:
            reason = (
                f"{name} is the operator's ({theirs.get(name)!r}); the intent would make it "
                f"{wanted[name]!r}, without lossless priority {priority_list(dropped)}"
            )
            problems.add(f"PORT_QOS_MAP|{port}.{name}", reason, port)
    for binding, table, what in (
        ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "priority group"),
        ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", "paused queue"),
        ("pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "pausing priority group"),
    ):
        if binding not in wanted:
            continue
        for at in sorted(guarded):
            was = _mapped(baseline, baseline, port, binding, table, at)
            will = _mapped(desired, baseline, port, binding, table, at)
            if was != will:
                reason = (
                    f"lossless priority {at}'s {what} is {was or 'unmapped'}; "
                    f"the intent would make it {will or 'unmapped'}"
                )
                bound = port_binding(desired, port, binding)
                problems.add(f"{table}|{bound}.{at}", reason, port)


def _check_priority_groups(
    desired: SwitchConfig,
    baseline: SwitchConfig,
    port: str,
    guarded: frozenset[int],
    problems: _Problems,
) -> None:
    """A priority group the intent writes holds none of the operator's lossless priorities
    (each priority its own group, as SONiC's stock config numbers them) and overlaps none of
    the operator's ``BUFFER_PG`` keys, which sluice never splits."""
    theirs = {
        key: pg_groups(key)
        for (table, key) in baseline
        if table == "BUFFER_PG" and key.partition("|")[0] == port
    }
    for table, key in desired:
        if table != "BUFFER_PG" or key.partition("|")[0] != port:
            continue
        groups = pg_groups(key)
        held = groups & guarded
        if held:
            reason = (
                f"priority group {priority_list(held)} holds the operator's lossless "
                "priority; the intent would give it its own headroom"
            )
            problems.add(f"BUFFER_PG|{key}", reason, port)
        for other, their_groups in sorted(theirs.items()):
            if other != key and groups & their_groups:
                reason = f"overlaps the operator's BUFFER_PG|{other}"
                problems.add(f"BUFFER_PG|{key}", reason, port)


def _check_watchdog(
    desired: SwitchConfig, baseline: SwitchConfig, port: str, problems: _Problems
) -> None:
    """A port has one watchdog: the operator's stays as it is while it guards one of their
    lossless priorities."""
    wanted = desired.get(("PFC_WD", port))
    theirs = baseline.get(("PFC_WD", port))
    if wanted is None or theirs is None:
        return
    for name, value in sorted(wanted.items()):
        if theirs.get(name) != value:
            reason = (
                f"the port's watchdog is the operator's ({name} {theirs.get(name)!r}); "
                f"the intent would make it {value!r}"
            )
            problems.add(f"PFC_WD|{port}.{name}", reason, port)


def refuse_lossless_changes(
    desired: SwitchConfig,
    baseline: SwitchConfig | None,
    *,
    switch: str,
    declared: Iterable[int] = (),
    claimed: Iterable[int] = (),
) -> None:
    """``LosslessConflict`` naming every field of ``desired`` that touches ``baseline``'s
    lossless traffic, each prefixed with ``switch``; nothing when there is none."""
    problems = lossless_problems(desired, baseline, declared=declared, claimed=claimed)
    if problems:
        raise LosslessConflict([FieldProblem(f"{switch}: {p.path}", p.reason) for p in problems])


def sluice_leftovers(config: SwitchConfig) -> list[str]:
    """What of sluice's ``config`` still holds: its entries (``TABLE|key``) and the fields
    of other entries that name one of its objects (``TABLE|key.field``). Empty once released."""
    found: list[str] = []
    for (table, key), fields in sorted(config.items()):
        if _is_sluice(table) or _is_sluice(key):
            found.append(f"{table}|{key}")
            continue
        found += [f"{table}|{key}.{n}" for n, v in sorted(fields.items()) if _is_sluice(v)]
    return found
