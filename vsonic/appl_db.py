"""An APPL_DB Set as sonic-gnmi applies it: straight into redis through swss's
``ProducerStateTable``, as orchagent's producers write, with no host service and no YANG.

Sources: sonic-net/sonic-gnmi sonic_data_client/mixed_db_client.go (``SetDB``,
``handleTableData``, ``ConvertDbEntry``) and sonic-net/sonic-swss-common
common/producerstatetable.cpp (its set and del scripts). An entry ``k`` of table ``T`` is
written as the hash ``_T:k`` plus ``k`` in the set ``T_KEY_SET`` (a delete: ``k`` in
``T_KEY_SET`` and ``T_DEL_SET``, ``_T:k`` deleted), then ``T_CHANNEL@0`` is published for a
consumer such as orchagent to pop it. String values are written as they are, a list as
``<field>@`` joined by commas; any other value is dropped, as ``ConvertDbEntry`` drops it.
Deletes come first, then replaces and updates (both an add), each as it comes; a Set that
fails part way keeps what it wrote before, as sonic-gnmi's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vsonic.answers import table_json
from vsonic.db import APPL_DB, SEPARATORS, RedisStore, Store, read_table
from vsonic.errors import InvalidValueError, UnsupportedError
from vsonic.gotext import go_value
from vsonic.paths import DbPath
from vsonic.setops import OpKind, SetOp

# KEYS: channel, key set, del set, the state hash; ARGV: "G", key, then field, value pairs.
_SET = """
local added = redis.call('SADD', KEYS[2], ARGV[2])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1]) end
if added > 0 then redis.call('PUBLISH', KEYS[1], ARGV[1]) end
"""
_DEL = """
local added = redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('DEL', KEYS[4])
if added > 0 then redis.call('PUBLISH', KEYS[1], ARGV[1]) end
"""
UPDATE_NOTIFICATION = "G"  # swss-common SWSS_TABLE_UPDATE_NOTIFICATION


def entry_fields(value: dict[str, Any]) -> dict[str, str]:
    """``ConvertDbEntry``: strings as they are, lists as ``<field>@``, the rest dropped."""
    fields: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, str):
            fields[name] = item
        elif isinstance(item, list):
            fields[name + "@"] = ",".join(i for i in item if isinstance(i, str))
    return fields


class Producer:
    """Writes one switch's APPL_DB as a ProducerStateTable does."""

    def __init__(self, store: Store) -> None:
        if not isinstance(store, RedisStore):
            raise UnsupportedError("Set RPC does not support APPL_DB on a fleet switch")
        self._store = store
        self._client = store.client(APPL_DB)

    def apply(self, ops: Sequence[SetOp]) -> None:
        order = {OpKind.DELETE: 0, OpKind.REPLACE: 1, OpKind.UPDATE: 1}
        for op in sorted(ops, key=lambda o: order[o.kind]):
            path = op.path
            if path.table is None:
                raise UnsupportedError("Set RPC does not support a whole APPL_DB")
            if path.field is not None:
                raise InvalidValueError(f"Unsupported path {path.text()}, can't update field")
            if op.kind is OpKind.DELETE:
                self._delete(path.table, path.key)
            elif path.key is not None:
                self._set(path.table, path.key, _entry(op.value, path.key))
            else:
                if not isinstance(op.value, dict):
                    raise InvalidValueError(
                        f"Unsupported value {go_value(op.value)} type {_go_type(op.value)}"
                    )
                for key, value in op.value.items():
                    self._set(path.table, key, _entry(value, key))

    def _delete(self, table: str, key: str | None) -> None:
        if key is None:
            table_json(self._store, _table_path(table))  # "Failed to find" when absent
            keys = sorted(read_table(self._store, APPL_DB, table))
        else:
            keys = [key]
        for each in keys:
            self._client.eval(  # type: ignore[no-untyped-call]
                _DEL, 4, *self._keys(table, each), UPDATE_NOTIFICATION, each
            )

    def _set(self, table: str, key: str, fields: dict[str, str]) -> None:
        pairs = [x for kv in fields.items() for x in kv]
        self._client.eval(  # type: ignore[no-untyped-call]
            _SET, 4, *self._keys(table, key), UPDATE_NOTIFICATION, key, *pairs
        )

    def _keys(self, table: str, key: str) -> list[str]:
        separator = SEPARATORS[APPL_DB]
        return [
            f"{table}_CHANNEL@{APPL_DB}",
            f"{table}_KEY_SET",
            f"{table}_DEL_SET",
            f"_{table}{separator}{key}",
        ]


def _entry(value: Any, key: str) -> dict[str, str]:
    if not isinstance(value, dict):
        shown = f"{go_value(value)} type {_go_type(value)}"
        raise InvalidValueError(f"Key {key}: Unsupported value {shown}")
    return entry_fields(value)


def _go_type(value: Any) -> str:
    """``reflect.TypeOf`` of a value Go's encoding/json decoded."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, list):
        return "[]interface {}"
    return "<nil>" if value is None else "map[string]interface {}"


def _table_path(table: str) -> DbPath:
    return DbPath("APPL_DB", table)
