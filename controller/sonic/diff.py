"""Desired vs observed CONFIG_DB: an ordered plan of add/change/delete ops. Pure.

Ownership (docs/config-db.md "Who owns what"), per entry and field, one of three:

- **sluice's**: an entry whose table or key starts with ``SLUICE`` or that is in ``owned``
  (what sluice wrote before); in the tables it shares with operators (``QUEUE``,
  ``PORT_QOS_MAP``, ``BUFFER_QUEUE``, ``FLEX_COUNTER_TABLE``: schema ``shared``) only the
  schema's fields, and of those only the ones it writes or wrote: a value naming a ``SLUICE``
  object, or (when ``owned`` carries fields) the value sluice recorded. The diff writes,
  changes and deletes these.
- **the operator's, kept**: everything else. Never changed or deleted.
- **the operator's, overwritten by the intent**: a field of a shared entry the intent sets
  that the operator had set before sluice adopted the switch. Its saved value is in the
  ``baseline`` (the adoption record's snapshot, ``controller/sonic/coexist.py``); when sluice
  stops setting it (a class or port dropped, the switch released, its first rollout rolled
  back) the diff writes the saved value back instead of deleting the field. Without a
  baseline (a switch sluice managed before adoption records) the field is deleted.

``ownership`` says which is which for every field a plan touches, with the saved values.

Fields the on-switch agent rewrites at run time (the thresholds of ``SLUICE_Q_*`` WRED
profiles) are written when the entry is created and afterwards only when the start value
sluice wants changes from the one it recorded in ``owned``; otherwise the agent's live value
stands, so a plan does not fight the agent.

A path dialect's tables (OpenConfig's lists, ``model.is_path_table``) have no schema: an
entry is written whole when it differs, and one sluice no longer wants goes when its key is a
``SLUICE`` name or sluice wrote it before (only its fields, for a port's shared entry).

Order: writes (add, change) in table write order, which the schemas' references determine
(``controller/sonic/order.py``), then deletes in the reverse order, so nothing ever names an
entry that does not exist. Within a table, writes keep the desired order and deletes are
sorted by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from controller.sonic.bulk import collector_paused
from controller.sonic.context import PREFIX
from controller.sonic.digest import DigestPair, TableDigests, changed_tables
from controller.sonic.model import (
    EntryKey,
    FieldOwner,
    Fields,
    Op,
    Plan,
    SwitchConfig,
    is_path_table,
)
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


def _restored(managed: Fields, want: Fields, saved: Fields) -> Fields:
    """``want`` plus the saved operator value of each field sluice manages and no longer
    wants (the operator's, overwritten: it goes back rather than away)."""
    back = {name: saved[name] for name in managed if name not in want and name in saved}
    return {**want, **back} if back else want


def _write_op(
    table: str,
    schema: TableSchema | None,
    key: str,
    want: Fields,
    have: Fields,
    recorded: Fields,
    saved: Fields,
) -> Op | None:
    """The op that brings an existing entry to ``want``, or None when it already is."""
    if schema is not None and schema.shared:
        managed = _sluice_fields(schema, have, recorded, want)
        want = _restored(managed, want, saved)
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


def _delete_op(
    schema: TableSchema, key: str, have: Fields, recorded: Fields | None, saved: Fields
) -> Op | None:
    """The op that removes what sluice owns of an entry it no longer wants, or None; in a
    shared entry the operator's saved values come back instead (a change)."""
    if schema.shared:
        managed = _sluice_fields(schema, have, recorded or _EMPTY, _EMPTY)
        if not managed:
            return None
        back = _restored(managed, _EMPTY, saved)
        if not back:
            return Op("delete", schema.table, key, {}, managed, False)
        return None if back == managed else Op("change", schema.table, key, back, managed, False)
    if _is_sluice(schema.table) or _is_sluice(key) or recorded is not None:
        return Op("delete", schema.table, key, {}, dict(have), True)
    return None


def _path_delete_op(entry_key: EntryKey, have: Fields, recorded: Fields | None) -> Op | None:
    """An entry of a path dialect's table (``model.is_path_table``) sluice no longer wants:
    gone when it is sluice's (its key a ``SLUICE`` name, or written before). Entries keyed
    otherwise (an OpenConfig port) are shared: only sluice's fields go."""
    table, key = entry_key
    if not (_is_sluice(key) or recorded is not None):
        return None
    return Op("delete", table, key, {}, dict(have), _is_sluice(key))


def _path_tables(
    writes: Mapping[str, list[Op]],
    deletes: Mapping[str, list[Op]],
    desired: SwitchConfig,
    observed: SwitchConfig,
) -> tuple[str, ...]:
    """The path dialect's tables the plan touches, in the order the compiler lists them
    (what is referenced first), then the reader: CONFIG_DB's ``WRITE_ORDER`` knows none."""
    touched = {t for t in (*writes, *deletes) if is_path_table(t)}
    if not touched:
        return ()
    listed = dict.fromkeys(t for t, _ in (*desired, *observed) if t in touched)
    return tuple(listed)


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
    baseline: SwitchConfig | None = None,
) -> Plan:
    """Ordered ops that take ``observed`` to ``desired`` without touching what sluice does
    not own. ``owned``: entries sluice wrote before (the previous desired state); passing
    the previous ``SwitchConfig`` itself also tells which fields of shared entries it wrote.
    ``digests``: the (desired, observed) table digests (``controller/sonic/digest.py``) when
    the caller knows them; only tables whose digests differ are walked, same plan.
    ``baseline``: the operator's config before adoption, whose values come back to the shared
    fields sluice stops setting (the module docstring)."""
    if digests is not None:
        tables = _tables_to_walk(*digests)
        if not tables:
            return Plan(switch)
        desired, observed = _in_tables(desired, tables), _in_tables(observed, tables)
    recorded = _owned_map(owned)
    saved = baseline if baseline is not None else {}
    writes: dict[str, list[Op]] = {}
    for entry_key, want in desired.items():
        have = observed.get(entry_key)
        if have == want:
            continue  # the common case on a converged switch, whatever the table
        table, key = entry_key
        if have is None:
            op: Op | None = Op("add", table, key, dict(want), {}, not _SHARED.get(table, False))
        else:
            op = _write_op(
                table,
                SCHEMAS.get(table),
                key,
                want,
                have,
                recorded.get(entry_key, _EMPTY),
                saved.get(entry_key, _EMPTY),
            )
        if op is not None:
            writes.setdefault(table, []).append(op)
    deletes: dict[str, list[Op]] = {}
    for entry_key, have in observed.items():
        if entry_key in desired:
            continue
        schema = SCHEMAS.get(entry_key[0])
        if schema is None:
            if not is_path_table(entry_key[0]):
                continue  # tables sluice never writes are not its business
            op = _path_delete_op(entry_key, have, recorded.get(entry_key))
        else:
            op = _delete_op(
                schema, entry_key[1], have, recorded.get(entry_key), saved.get(entry_key, _EMPTY)
            )
        if op is not None:
            # A restore is a write: the operator's value goes back before sluice's objects
            # that the old value named are deleted.
            (deletes if op.kind == "delete" else writes).setdefault(op.table, []).append(op)
    return Plan(switch, _ordered(writes, deletes, _path_tables(writes, deletes, desired, observed)))


def _tables_to_walk(desired: TableDigests, observed: TableDigests) -> frozenset[str]:
    """Tables whose digests differ, less those the diff ignores anyway: a table sluice never
    writes that only the switch holds (an equal table yields no op: every wanted entry is
    there unchanged and nothing is left over to delete)."""
    return frozenset(
        table
        for table in changed_tables(desired, observed)
        if table in desired or table in SCHEMAS or is_path_table(table)
    )


def _in_tables(config: SwitchConfig, tables: frozenset[str]) -> SwitchConfig:
    return {entry_key: fields for entry_key, fields in config.items() if entry_key[0] in tables}


def _ordered(
    writes: dict[str, list[Op]], deletes: dict[str, list[Op]], path_tables: tuple[str, ...] = ()
) -> tuple[Op, ...]:
    """Writes in table write order, then deletes in reverse. Within a table, writes keep the
    desired state's order (the compiler's port order: Ethernet0, Ethernet4, ... Ethernet100)
    and deletes, which come from whatever order the switch was read in, are sorted by key.
    ``path_tables``: a path dialect's tables, in their write order, after CONFIG_DB's."""
    sequence = (*_WRITE_SEQUENCE, *path_tables) if path_tables else _WRITE_SEQUENCE
    ops: list[Op] = []
    for table in sequence:
        ops += writes.get(table, ())
    for table in reversed(sequence):
        ops += sorted(deletes.get(table, ()), key=_by_key)
    return tuple(ops)


def _by_key(op: Op) -> str:
    return op.key


def diff_fleet(
    desired: Mapping[str, SwitchConfig],
    observed: Mapping[str, SwitchConfig],
    owned: Mapping[str, SwitchConfig] | None = None,
    digests: Mapping[str, DigestPair] | None = None,
    baselines: Mapping[str, SwitchConfig] | None = None,
) -> dict[str, Plan]:
    """A plan per switch of ``desired`` (a switch with no observed state starts empty).
    Switches only in ``observed`` are left alone: sluice no longer manages them.
    ``digests``: per switch, its (desired, observed) table digests where known (see
    ``plan_switch``); the other switches are diffed entry by entry. ``baselines``: per
    adopted switch, the operator's config before adoption (``plan_switch``)."""
    plans: dict[str, Plan] = {}
    known = digests if digests is not None else {}
    saved = baselines if baselines is not None else {}
    with collector_paused():
        for switch, config in desired.items():
            previous: Owned = owned.get(switch, {}) if owned is not None else ()
            plans[switch] = plan_switch(
                switch,
                config,
                observed.get(switch, {}),
                previous,
                known.get(switch),
                saved.get(switch),
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


# --------------------------------------------------------------------------------------------
# ownership, spelled out


def _field_owner(
    name: str, value: str | None, saved: Fields, inherited: Mapping[str, str], shared: bool
) -> FieldOwner:
    if name in inherited:
        return FieldOwner(name, "operator_kept", value, source=inherited[name])
    theirs = saved.get(name)
    if not shared or theirs is None:
        return FieldOwner(name, "sluice", value)
    if value == theirs:
        return FieldOwner(name, "operator_kept", value)
    return FieldOwner(name, "operator_overwritten", value, saved=theirs)


def entry_ownership(
    op: Op,
    observed: Fields,
    baseline: SwitchConfig,
    inherited: Mapping[EntryKey, Mapping[str, str]],
) -> tuple[FieldOwner, ...]:
    """Every field of ``op``'s entry as it will be after the op: the ones the op writes or
    removes and, in a shared entry, the operator's that it leaves as they are."""
    schema = SCHEMAS.get(op.table)
    shared = schema is not None and schema.shared
    saved = baseline.get(op.entry_key, _EMPTY)
    from_maps = inherited.get(op.entry_key, {})
    touched = set(op.fields) | set(op.removed_fields)
    owners = [
        _field_owner(name, op.fields.get(name), saved, from_maps, shared)
        for name in sorted(touched)
    ]
    if shared and not (op.kind == "delete" and op.whole_entry):
        owners += [
            FieldOwner(name, "operator_kept", value)
            for name, value in sorted(observed.items())
            if name not in touched
        ]
    return tuple(owners)


def with_ownership(
    plan: Plan,
    observed: SwitchConfig,
    baseline: SwitchConfig | None,
    inherited: Mapping[EntryKey, Mapping[str, str]] | None = None,
) -> Plan:
    """``plan`` with the owner of every field it touches (``Plan.ownership``): what a dry
    run shows the operator before anything is written."""
    saved = baseline if baseline is not None else {}
    maps = inherited if inherited is not None else {}
    ownership = {
        op.entry_key: entry_ownership(op, observed.get(op.entry_key, _EMPTY), saved, maps)
        for op in plan.ops
    }
    return replace(plan, ownership=ownership)
