"""Plan ops to gNMI paths and JSON_IETF values, and Get answers back to CONFIG_DB. Pure.

Paths use origin ``sonic-db``: ``/CONFIG_DB/localhost/<TABLE>/<key>[/<field>]``
(sonic-gnmi server.go). The key is one element and keeps its ``|``
(``Ethernet0|3``). Elements here are plain tuples of names; ``gnmi.py`` turns them into
protobuf paths, so everything in this module can be tested without gRPC.

How an op becomes a Set (sonic-gnmi sonic_data_client/mixed_db_client.go ConvertToJsonPatch:
delete -> JSON Patch ``remove``, update -> ``add``):

- ``add``: one update of the entry path with the whole field dict; the entry does not exist,
  and an entry path is the only way to create one (a Patch ``add`` of a field needs its
  parent).
- ``change``: one update per written field and one delete per removed field. An update of
  the entry path would overwrite the whole entry (Patch ``add`` replaces an existing member)
  and wipe fields sluice does not manage: an operator's fields on a shared ``QUEUE`` entry,
  or the thresholds the on-switch agent moves.
- ``delete`` of a whole entry: one delete of the entry path. In a shared table only sluice's
  fields go: one delete per field path, never the entry.
- ``delete`` with ``whole_table`` (the switch's last entries of that table): one delete of the
  table path for all of them, since GCU refuses to leave a table empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from controller.sonic.model import (
    GNMI_ORIGIN,
    Fields,
    Op,
    SetParts,
    SwitchConfig,
    joined_parts,
)

ORIGIN = GNMI_ORIGIN
DATABASE = "CONFIG_DB"
INSTANCE = "localhost"  # a single-ASIC switch (sonic-gnmi mixed_db_client.go)

Elems = tuple[str, ...]


class PathError(ValueError):
    """A path or value that is not a CONFIG_DB table, entry or field; ``gnmi.py`` reports it
    as a protocol error of the switch that sent it."""


def database_elems() -> Elems:
    """The CONFIG_DB root: a Get of it answers ``{table: {key: {field: value}}}``."""
    return (DATABASE, INSTANCE)


def table_elems(table: str, database: str = DATABASE) -> Elems:
    """A table of CONFIG_DB, or of ``database`` (``STATE_DB``, ``APPL_DB``)."""
    return (database, INSTANCE, table)


def entry_elems(table: str, key: str) -> Elems:
    """``("CONFIG_DB", "localhost", "QUEUE", "Ethernet0|3")``: the key is one element."""
    return (DATABASE, INSTANCE, table, key)


def field_elems(table: str, key: str, name: str) -> Elems:
    return (DATABASE, INSTANCE, table, key, name)


@dataclass(frozen=True, slots=True)
class ConfigPath:
    """Where a path points inside CONFIG_DB: a table, an entry (``key``) or a field."""

    table: str
    key: str | None = None
    field: str | None = None


def parse_elems(elems: Iterable[str]) -> ConfigPath:
    """The inverse of ``table_elems`` / ``entry_elems`` / ``field_elems``."""
    parts = tuple(elems)
    if len(parts) < 3 or parts[0] != DATABASE or parts[1] != INSTANCE:
        raise PathError(f"not a {DATABASE}/{INSTANCE} table path: {text(parts)}")
    if len(parts) > 5:
        raise PathError(f"deeper than TABLE/key/field: {text(parts)}")
    if any(not part for part in parts):
        raise PathError(f"empty element in {text(parts)}")
    rest = parts[3:]
    return ConfigPath(parts[2], rest[0] if rest else None, rest[1] if len(rest) > 1 else None)


def text(elems: Iterable[str]) -> str:
    """Display form ``/sonic-db:CONFIG_DB/localhost/QUEUE/Ethernet0|3`` (for messages)."""
    return f"/{ORIGIN}:" + "/".join(elems)


def encode_value(value: Fields | str) -> bytes:
    """JSON_IETF bytes: a field dict for an entry, a bare string for a field. Keys sorted so
    the same op always produces the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def op_parts(op: Op) -> SetParts[Elems]:
    """The deletes and updates that carry out one op (module docstring)."""
    if op.kind == "add":
        return SetParts(updates=((entry_elems(op.table, op.key), encode_value(op.fields)),))
    if op.kind == "delete" and op.whole_table:
        return SetParts(deletes=(table_elems(op.table),))
    if op.kind == "delete" and op.whole_entry:
        return SetParts(deletes=(entry_elems(op.table, op.key),))
    updates = tuple(
        (field_elems(op.table, op.key, name), encode_value(value))
        for name, value in sorted(op.fields.items())
    )
    deletes = tuple(
        field_elems(op.table, op.key, name) for name in op.removed_fields if name not in op.fields
    )
    return SetParts(deletes=deletes, updates=updates)


def set_parts(ops: Iterable[Op]) -> SetParts[Elems]:
    """One SetRequest for all of ``ops``, in their order within deletes and within updates.
    The switch applies the request as one transaction and validates its result as a whole
    (sonic-gnmi sonic_data_client/mixed_db_client.go SetConfigDB), so an op may reference an
    entry another op of the same request creates."""
    return joined_parts(op_parts(op) for op in ops)


def _as_fields(value: object, table: str, key: str) -> Fields:
    # A reconcile pass reads every owned entry of every switch, so the common case (a JSON
    # object of strings; JSON keys are always strings) is checked in one cheap pass.
    if isinstance(value, dict) and all(type(item) is str for item in value.values()):
        return dict(value)
    if not isinstance(value, dict):
        raise PathError(f"{table}|{key}: entry value is not a JSON object")
    name, item = next((n, i) for n, i in value.items() if not isinstance(i, str))
    # CONFIG_DB stores strings only; anything else means the reader misunderstood.
    raise PathError(f"{table}|{key} field '{name}': value is not a string ({type(item).__name__})")


def config_from_value(elems: Iterable[str], value: object) -> SwitchConfig:
    """The CONFIG_DB entries a Get answer holds: a table path carries ``{key: {field: v}}``,
    an entry path ``{field: v}``, a field path a bare string."""
    where = parse_elems(elems)
    if where.key is None:
        if not isinstance(value, dict):
            raise PathError(f"table {where.table}: value is not a JSON object")
        return {
            (where.table, str(key)): _as_fields(fields, where.table, str(key))
            for key, fields in value.items()
        }
    if where.field is None:
        return {(where.table, where.key): _as_fields(value, where.table, where.key)}
    if not isinstance(value, str):
        raise PathError(f"{where.table}|{where.key} field '{where.field}': not a string")
    return {(where.table, where.key): {where.field: value}}


def config_from_database(
    elems: Iterable[str], value: object, keep: frozenset[str]
) -> tuple[frozenset[str], SwitchConfig]:
    """The tables a Get answer for the CONFIG_DB root holds, and the entries of those in
    ``keep``. Only kept tables are parsed: others may hold list fields (sonic-gnmi renders a
    ``name@`` field as a JSON list), which sluice neither owns nor reads."""
    parts = tuple(elems)
    if parts != (DATABASE, INSTANCE):
        raise PathError(f"not the {DATABASE}/{INSTANCE} root: {text(parts)}")
    if not isinstance(value, dict):
        raise PathError(f"{text(parts)}: value is not a JSON object")
    config: SwitchConfig = {}
    for table in keep & value.keys():
        config.update(config_from_value(table_elems(table), value[table]))
    return frozenset(value), config


def decode_json(raw: bytes, elems: Iterable[str]) -> object:
    try:
        decoded: object = json.loads(raw)
    except ValueError as error:
        raise PathError(f"{text(elems)}: value is not JSON ({error})") from None
    return decoded


def entries_from_table(elems: Iterable[str], value: object) -> dict[str, Fields]:
    """The entries of a table answer of any database (``{key: {field: value}}``), each field
    value as text: STATE_DB and APPL_DB tables are read to be shown, never written back."""
    if not isinstance(value, dict):
        raise PathError(f"{text(elems)}: value is not a JSON object")
    entries: dict[str, Fields] = {}
    for key, fields in value.items():
        if not isinstance(fields, dict):
            raise PathError(f"{text(elems)}|{key}: entry value is not a JSON object")
        entries[str(key)] = {
            str(name): item if isinstance(item, str) else json.dumps(item)
            for name, item in fields.items()
        }
    return entries
