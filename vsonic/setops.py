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
from vsonic.paths import DbPath


class OpKind(StrEnum):
    DELETE = "delete"
    REPLACE = "replace"
    UPDATE = "update"


@dataclass(frozen=True)
class SetOp:
    kind: OpKind
    path: DbPath
    value: Any = None  # decoded JSON_IETF; None for a delete


def _leaf(value: Any, where: str) -> str:
    """A CONFIG_DB value is a string. A JSON number is stored as its decimal text, as
    swsscommon's ConfigDBConnector does with str(); pygnmi sends a Python str unquoted, so
    "7" arrives as the number 7. Booleans, nulls, lists and objects are refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    shown = "null" if value is None else type(value).__name__
    raise InvalidValueError(
        f"{where}: must be a JSON string (CONFIG_DB values are strings), got {shown}"
    )


def _as_fields(value: Any, where: str) -> Fields:
    if not isinstance(value, dict):
        raise InvalidValueError(f"{where}: value must be a JSON object of field: string")
    return {name: _leaf(item, f"{where} field '{name}'") for name, item in value.items()}


def _as_table(value: Any, where: str) -> dict[str, Fields]:
    if not isinstance(value, dict):
        raise InvalidValueError(f"{where}: value must be a JSON object of key: {{field: string}}")
    return {key: _as_fields(fields, f"{where}/{key}") for key, fields in value.items()}


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
        config.setdefault((table, path.key), {})[path.field] = _leaf(value, where)


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
        if op.kind is OpKind.DELETE or (op.kind is OpKind.REPLACE and op.value is None):
            _delete(result, op.path)
        else:
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
