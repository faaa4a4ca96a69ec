"""Apply the operations of one gNMI SetRequest to a CONFIG_DB snapshot. Pure.

sonic-gnmi turns a CONFIG_DB SetRequest into one JSON Patch for GCU
(sonic_data_client/mixed_db_client.go ConvertToJsonPatch): delete -> ``remove``, update ->
``add``, replace -> ``replace``, processed in that order (deletes, then
replaces, then updates). JSON Patch ``add`` on an existing member replaces it, so an update
of an entry path *overwrites the whole entry* (fields not named are gone), and an update of a
table path overwrites the whole table. To change one field and keep the others, write the
field path. Removing something that does not exist is skipped, as sonic-gnmi does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vsonic.db import Config, Fields
from vsonic.errors import InvalidValueError, UnsupportedError
from vsonic.gotext import go_value
from vsonic.paths import DbPath
from vsonic.schema import GCU_SCOPE_REFUSAL


class OpKind(StrEnum):
    DELETE = "delete"
    REPLACE = "replace"
    UPDATE = "update"


@dataclass(frozen=True)
class SetOp:
    kind: OpKind
    path: DbPath
    value: Any = None  # decoded JSON_IETF; None for a delete


def _field_value(value: Any) -> str:
    """A field of an entry the Set writes whole. CONFIG_DB values are strings; sonic-gnmi
    passes any other JSON value on in the patch and GCU writes it as Python's ``str`` of it
    (swsscommon ConfigDBConnector ``typed_to_raw``), then fails the Set when it finds the
    config unlike its target (``mistyped``)."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return str(value)
    raise InvalidValueError(GCU_SCOPE_REFUSAL)


def mistyped(ops: list[SetOp]) -> bool:
    """True when an entry the Set writes whole (an entry path, or each entry of a table path)
    has a value that is no string: GCU writes it, then refuses the Set
    (``GCU_SCOPE_REFUSAL``), so the client sees an error and the switch holds the change."""
    for op in ops:
        if op.value is None or op.path.field is not None or not isinstance(op.value, dict):
            continue
        entries = [op.value] if op.path.key is not None else list(op.value.values())
        for entry in entries:
            if isinstance(entry, dict) and not all(isinstance(v, str) for v in entry.values()):
                return True
    return False


def _leaf(value: Any) -> str:
    """A field path's value: sonic-gnmi's JSON client takes a string (or a leaf-list, which
    vsonic does not model) and refuses anything else, a bare number too."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        raise UnsupportedError("a leaf-list value is not modelled by vsonic")
    raise InvalidValueError(f"Invalid field {go_value(value)}")


def _as_fields(value: Any, where: str) -> Fields:
    if not isinstance(value, dict):
        raise InvalidValueError(f"Invalid entry {go_value(value)}")
    return {name: _field_value(item) for name, item in value.items()}


def _as_table(value: Any, where: str) -> dict[str, Fields]:
    if not isinstance(value, dict):
        raise InvalidValueError(f"Invalid table {go_value(value)}")
    return {key: _as_fields(fields, f"{where}/{key}") for key, fields in value.items()}


def _missing(config: Config, path: DbPath) -> str | None:
    """Why sonic-gnmi's JSON client cannot remove ``path`` (a replace removes first), in its
    words: the table, entry or field, each shown with what holds it (Go's ``%v``)."""
    table = str(path.table)
    entries = {key: fields for (name, key), fields in config.items() if name == table}
    if not entries:
        nested: dict[str, dict[str, Fields]] = {}
        for (name, key), fields in config.items():
            nested.setdefault(name, {})[key] = fields
        return f"Invalid database {table} -> {go_value(nested)}"
    if path.key is None:
        return None
    entry = entries.get(path.key)
    if entry is None:
        return f"Invalid entry {go_value(entries)}"
    if path.field is not None and path.field not in entry:
        return f"Invalid entry {go_value(entry)}"
    return None


def _delete(config: Config, path: DbPath) -> None:
    table = path.table
    if path.key is None:
        for name in [n for n in config if n[0] == table]:
            del config[name]
    elif path.field is None:
        config.pop((str(table), path.key), None)
    else:
        fields = config.get((str(table), path.key))
        if fields is not None:
            fields.pop(path.field, None)


def _write(config: Config, path: DbPath, value: Any) -> None:
    table, where = str(path.table), path.text()
    if path.key is None:
        entries = _as_table(value, where)
        _delete(config, path)
        for key, fields in entries.items():
            config[(table, key)] = fields
    elif path.field is None:
        config[(table, path.key)] = _as_fields(value, where)
    else:
        config.setdefault((table, path.key), {})[path.field] = _leaf(value)


_ORDER = {OpKind.DELETE: 0, OpKind.REPLACE: 1, OpKind.UPDATE: 2}


def apply_ops(config: Config, ops: list[SetOp]) -> Config:
    """The CONFIG_DB that ``ops`` leave behind; ``config`` itself is not changed."""
    result: Config = {name: dict(fields) for name, fields in config.items()}
    for op in sorted(ops, key=lambda o: _ORDER[o.kind]):  # stable: request order within a kind
        if op.path.db_name != "CONFIG_DB":
            raise UnsupportedError(f"Set RPC does not support {op.path.db_name}")
        if op.path.table is None:
            raise UnsupportedError(
                f"{op.path.text()}: whole-database Set is not supported by vsonic"
            )
        if op.path.index is not None:
            raise UnsupportedError(f"{op.path.text()}: a leaf-list item is not modelled by vsonic")
        if op.kind is OpKind.DELETE or (op.kind is OpKind.REPLACE and op.value is None):
            _delete(result, op.path)
            continue
        if op.kind is OpKind.REPLACE:  # remove, then add: what is not there fails the Set
            problem = _missing(result, op.path)
            if problem is not None:
                raise InvalidValueError(problem)
            _delete(result, op.path)
        _write(result, op.path, op.value)
    return result


def changed_entries(before: Config, after: Config) -> dict[tuple[str, str], Fields | None]:
    """What to write: each entry that differs, with its new fields or None when deleted."""
    changes: dict[tuple[str, str], Fields | None] = {
        name: fields for name, fields in after.items() if before.get(name) != fields
    }
    changes.update(dict.fromkeys(before.keys() - after.keys()))
    return changes


def touched_tables(ops: list[SetOp]) -> set[str]:
    """The CONFIG_DB tables the operations name, whether or not they change anything."""
    return {str(op.path.table) for op in ops if op.path.table is not None}
