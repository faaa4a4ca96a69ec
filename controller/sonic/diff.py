"""Desired vs observed CONFIG_DB: an ordered plan of add/change/delete ops. Pure.

Ownership (docs/architecture.md): sluice owns an entry when its table or key starts with
``SLUICE`` or it is in ``owned`` (what sluice wrote before). In the tables it shares with
operators (``QUEUE``, ``PORT_QOS_MAP``, ``BUFFER_QUEUE``: schema ``shared``) sluice owns only
the schema's fields, and of those only the ones it wrote: a value naming a ``SLUICE`` object,
or (when ``owned`` carries fields) the value sluice recorded. Everything else is never
changed or deleted; a desired field an operator had set is overwritten, because the intent
asked for that queue.

Fields the on-switch agent rewrites at run time (the thresholds of ``SLUICE_Q_*`` WRED
profiles) are written when the entry is created and afterwards only when the start value
sluice wants changes from the one it recorded in ``owned``; otherwise the agent's live value
stands, so a plan does not fight the agent.

Order: writes (add, change) in table write order, which the schemas' references determine
(``controller/sonic/order.py``), then deletes in the reverse order, so nothing ever names an
entry that does not exist. Within a table, writes keep the desired order and deletes are
sorted by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.sonic.bulk import collector_paused
from controller.sonic.context import PREFIX
from controller.sonic.digest import DigestPair, TableDigests, changed_tables
from controller.sonic.model import EntryKey, Fields, Op, Plan, SwitchConfig
from controller.sonic.schema import TableSchema
from controller.sonic.tables import SCHEMAS, WRITE_ORDER

Owned = Iterable[EntryKey] | Mapping[EntryKey, Fields]

_WRITE_SEQUENCE = WRITE_ORDER
_SHARED = {table: schema.shared for table, schema in SCHEMAS.items()}
_EMPTY: Fields = {}


def _is_sluice(name: str) -> bool:
    return name.startswith(PREFIX)


def _sluice_fields(
    schema: TableSchema, observed: Fields, recorded: Fields, desired: Fields
) -> Fields:
    """The observed fields of a shared entry that sluice manages: the ones it wants now, and
    the ones it wrote before (a SLUICE name, or the value it recorded)."""
    managed: Fields = {}
    for name in schema.field_names:
        value = observed.get(name)
        if value is None:
            continue
        if name in desired or _is_sluice(value) or recorded.get(name) == value:
            managed[name] = value
    return managed


def _without(fields: Fields, names: frozenset[str]) -> Fields:
    return {k: v for k, v in fields.items() if k not in names}


def _write_op(
    schema: TableSchema | None, key: str, want: Fields, have: Fields, recorded: Fields
) -> Op | None:
    """The op that brings an existing entry to ``want``, or None when it already is."""
    table = schema.table if schema else ""
    if schema is not None and schema.shared:
        managed = _sluice_fields(schema, have, recorded, want)
        return None if managed == want else Op("change", table, key, dict(want), managed, False)
    if have == want:
        return None
    agent = schema.agent_owned(key) if schema is not None else frozenset()
    # The agent's live values stand, unless the start value sluice wants differs from the one
    # it recorded writing (the bounds moved: write the new start); a missing field is written.
    skip = frozenset(n for n in agent if n in have and recorded.get(n, want.get(n)) == want.get(n))
    want_cmp, have_cmp = (_without(want, skip), _without(have, skip)) if skip else (want, have)
    if want_cmp == have_cmp:
        return None
    return Op("change", table, key, dict(want_cmp), dict(have_cmp), True)


def _delete_op(schema: TableSchema, key: str, have: Fields, recorded: Fields | None) -> Op | None:
    """The op that removes what sluice owns of an entry it no longer wants, or None."""
    if schema.shared:
        managed = _sluice_fields(schema, have, recorded or _EMPTY, _EMPTY)
        return Op("delete", schema.table, key, {}, managed, False) if managed else None
    if _is_sluice(schema.table) or _is_sluice(key) or recorded is not None:
        return Op("delete", schema.table, key, {}, dict(have), True)
    return None


def _owned_map(owned: Owned) -> Mapping[EntryKey, Fields]:
    if isinstance(owned, Mapping):
        return owned
    return dict.fromkeys(owned, _EMPTY)


def plan_switch(
    switch: str,
    desired: SwitchConfig,
    observed: SwitchConfig,
    owned: Owned = (),
    digests: DigestPair | None = None,
) -> Plan:
    """Ordered ops that take ``observed`` to ``desired`` without touching what sluice does
    not own. ``owned``: entries sluice wrote before (the previous desired state); passing
    the previous ``SwitchConfig`` itself also tells which fields of shared entries it wrote.
    ``digests``: the (desired, observed) table digests (``controller/sonic/digest.py``) when
    the caller knows them; only tables whose digests differ are walked, same plan."""
    if digests is not None:
        tables = _tables_to_walk(*digests)
        if not tables:
            return Plan(switch)
        desired, observed = _in_tables(desired, tables), _in_tables(observed, tables)
    recorded = _owned_map(owned)
    writes: dict[str, list[Op]] = {}
    for entry_key, want in desired.items():
        have = observed.get(entry_key)
        if have == want:
            continue  # the common case on a converged switch, whatever the table
        table, key = entry_key
        if have is None:
            op: Op | None = Op("add", table, key, dict(want), {}, not _SHARED.get(table, False))
        else:
            op = _write_op(SCHEMAS.get(table), key, want, have, recorded.get(entry_key, _EMPTY))
        if op is not None:
            writes.setdefault(table, []).append(op)
    deletes: dict[str, list[Op]] = {}
    for entry_key, have in observed.items():
        schema = SCHEMAS.get(entry_key[0])
        if schema is None or entry_key in desired:
            continue  # tables sluice never writes are not its business
        op = _delete_op(schema, entry_key[1], have, recorded.get(entry_key))
        if op is not None:
            deletes.setdefault(op.table, []).append(op)
    return Plan(switch, _ordered(writes, deletes))


def _tables_to_walk(desired: TableDigests, observed: TableDigests) -> frozenset[str]:
    """Tables whose digests differ, less those the diff ignores anyway: a table sluice never
    writes that only the switch holds (an equal table yields no op: every wanted entry is
    there unchanged and nothing is left over to delete)."""
    return frozenset(
        table for table in changed_tables(desired, observed) if table in desired or table in SCHEMAS
    )


def _in_tables(config: SwitchConfig, tables: frozenset[str]) -> SwitchConfig:
    return {entry_key: fields for entry_key, fields in config.items() if entry_key[0] in tables}


def _ordered(writes: dict[str, list[Op]], deletes: dict[str, list[Op]]) -> tuple[Op, ...]:
    """Writes in table write order, then deletes in reverse. Within a table, writes keep the
    desired state's order (the compiler's port order: Ethernet0, Ethernet4, ... Ethernet100)
    and deletes, which come from whatever order the switch was read in, are sorted by key."""
    ops: list[Op] = []
    for table in _WRITE_SEQUENCE:
        ops += writes.get(table, ())
    for table in reversed(_WRITE_SEQUENCE):
        ops += sorted(deletes.get(table, ()), key=_by_key)
    return tuple(ops)


def _by_key(op: Op) -> str:
    return op.key


def diff_fleet(
    desired: Mapping[str, SwitchConfig],
    observed: Mapping[str, SwitchConfig],
    owned: Mapping[str, SwitchConfig] | None = None,
    digests: Mapping[str, DigestPair] | None = None,
) -> dict[str, Plan]:
    """A plan per switch of ``desired`` (a switch with no observed state starts empty).
    Switches only in ``observed`` are left alone: sluice no longer manages them.
    ``digests``: per switch, its (desired, observed) table digests where known (see
    ``plan_switch``); the other switches are diffed entry by entry."""
    plans: dict[str, Plan] = {}
    known = digests if digests is not None else {}
    with collector_paused():
        for switch, config in desired.items():
            previous: Owned = owned.get(switch, {}) if owned is not None else ()
            plans[switch] = plan_switch(
                switch, config, observed.get(switch, {}), previous, known.get(switch)
            )
    return plans


def apply_plan(observed: SwitchConfig, plan: Plan) -> SwitchConfig:
    """What a switch holds after ``plan`` is applied to ``observed`` (Op semantics in
    ``controller/sonic/model.py``). Pure: ``observed`` is not modified."""
    result: SwitchConfig = dict(observed)
    for op in plan.ops:
        entry_key = op.entry_key
        if op.kind == "delete" and op.whole_entry:
            result.pop(entry_key, None)
            continue
        fields = dict(result.get(entry_key, _EMPTY))
        fields.update(op.fields)
        for name in op.removed_fields:
            if name not in op.fields:
                fields.pop(name, None)
        if fields:
            result[entry_key] = fields
        else:
            result.pop(entry_key, None)  # CONFIG_DB has no empty entries
    return result
