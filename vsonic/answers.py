"""What sonic-gnmi reads at a path, and what it answers a Get and a Set with.

Sources (sonic-net/sonic-gnmi 5ec1c20b): gnmi_server/server.go (``Get``, ``Set``,
``supportedEncodings``) and sonic_data_client/mixed_db_client.go (``getDbtablePath``,
``tableData2Msi``, ``tableData2TypedValue``, ``makeJSON_redis``, ``Get``); every rule here was
also compared with the running server (tests/realsonic/test_vsonic_diff_server.py).

- A path reads, by depth: a whole database (every ``TABLE<sep>key`` hash, by table; never
  COUNTERS_DB, "Can not read all tables in COUNTERS_DB"); a table (``{key: fields}``; a table
  with no key matching ``TABLE*`` in redis is "Failed to find <DB> <TABLE> <nil> []", even
  where another table's name starts with it and the path then just reads nothing); an entry
  (its fields); a field (its value; a ``<field>@`` leaf-list as a list); a leaf-list item.
  An entry's ``NULL`` field is left out, ``<field>@`` becomes ``<field>``: a list.
- Encodings: JSON, JSON_IETF and PROTO are accepted on Get; anything else is UNIMPLEMENTED.
  A field always answers JSON_IETF. With PROTO an entry answers its ``pb`` field as bytes
  (what the DASH tables hold) and fails without one; with JSON (which sonic-db does not
  implement) an entry reads nothing and a table fails "Unknown encoding JSON".
- A Get fails whole with NOT_FOUND on the first path that fails, or on an entry or field
  that reads nothing ("No valid entry found for path …"); a table or database that reads
  nothing is left out of the answer.
- A refused Set: the data client's error goes back as it is, which gRPC-Go sends as status
  UNKNOWN with the message; only paths naming no database or several (``BadTargetError``),
  and in fleet mode a target the server does not serve, are NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc  # type: ignore[import-untyped]
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.db import SEPARATORS, Fields, Store, read_table
from vsonic.errors import (
    AbsentTableError,
    BadTargetError,
    PathNotFoundError,
    UnknownTargetError,
    UnsupportedError,
    VsonicError,
)
from vsonic.gnmi_codec import JSON, JSON_IETF, status_for
from vsonic.gotext import go_path, go_value
from vsonic.paths import DbPath

PROTO = gnmi_pb2.Encoding.Value("PROTO")
GET_ENCODINGS = (JSON, JSON_IETF, PROTO)
LEAF_LIST_SUFFIX = "@"


def check_get_encoding(encoding: int) -> int:
    if encoding not in GET_ENCODINGS:
        name = gnmi_pb2.Encoding.Name(encoding)
        raise UnsupportedError(f"unsupported encoding: {name}")
    return encoding


@dataclass(frozen=True)
class Read:
    """What a path read: JSON (``proto`` None) or the proto bytes of an entry."""

    json: Any = None
    proto: bytes | None = None

    def typed_value(self, json_text: bytes) -> Any:
        if self.proto is not None:
            return gnmi_pb2.TypedValue(proto_bytes=self.proto)
        return gnmi_pb2.TypedValue(json_ietf_val=json_text)


def entry_json(fields: Fields) -> dict[str, Any]:
    """An entry as sonic-gnmi renders it (``makeJSON_redis``)."""
    rendered: dict[str, Any] = {}
    for name, value in fields.items():
        if name.endswith(LEAF_LIST_SUFFIX):
            rendered[name[: -len(LEAF_LIST_SUFFIX)]] = value.split(",")
        else:
            rendered[name] = value
    return rendered


def table_json(store: Store, path: DbPath) -> dict[str, Any]:
    """``{key: fields}`` of a table path; AbsentTableError when no key starts with its name."""
    table = str(path.table)
    entries = read_table(store, path.db, table)
    if not entries and not store.read_prefixed(path.db, table):
        raise AbsentTableError(f"Failed to find {path.db_name} {table} <nil> []")
    return {key: entry_json(fields) for key, fields in entries.items()}


def database_json(store: Store, path: DbPath) -> dict[str, Any]:
    if path.db_name == "COUNTERS_DB":
        raise PathNotFoundError("Can not read all tables in COUNTERS_DB")
    separator = SEPARATORS[path.db]
    nested: dict[str, dict[str, Any]] = {}
    for rkey, fields in sorted(store.read_prefixed(path.db, "").items()):
        table, sep, key = rkey.partition(separator)
        if sep:
            nested.setdefault(table, {})[key] = entry_json(fields)
    return nested


def read_path(store: Store, path: DbPath, encoding: int = JSON_IETF) -> Read | None:
    """What ``path`` reads in ``encoding``, None when it reads nothing."""
    if path.field is not None:
        return _read_field(store, path)
    if path.table is None or (path.key is None and not path.keyless):
        found = database_json(store, path) if path.table is None else table_json(store, path)
        if not found:
            return None
        if encoding == JSON:
            raise PathNotFoundError("Unknown encoding JSON")
        if encoding == PROTO:
            raise PathNotFoundError(f"No proto bytes found in msi {go_value(found)}")
        return Read(found)
    fields = store.read_hash(path.db, path.rkey())
    if not fields or encoding == JSON:
        return None
    if encoding == PROTO:
        if "pb" not in fields:
            raise PathNotFoundError(f"No proto bytes found in redis {go_value(fields)}")
        return Read(proto=fields["pb"].encode("latin-1"))
    return Read(entry_json(fields))


def _read_field(store: Store, path: DbPath) -> Read | None:
    fields = store.read_hash(path.db, path.rkey()) or {}
    name = str(path.field)
    if path.index is None and name in fields:
        return Read(fields[name])
    items = fields.get(name + LEAF_LIST_SUFFIX)
    if items is None:
        return None
    listed = items.split(",")
    if path.index is None:
        return Read(listed)
    if not 0 <= path.index < len(listed):
        raise PathNotFoundError(f"Invalid index {path.index} for {go_value(listed)}")
    return Read(listed[path.index])


def no_valid_entry(proto_path: Any) -> PathNotFoundError:
    """An entry or field path that read nothing (sonic-gnmi's Get, gNMI spec 3.3.4)."""
    return PathNotFoundError(f"No valid entry found for path {go_path(proto_path)}")


def names_entry(path: DbPath) -> bool:
    """An entry or field path, as opposed to a table or database path."""
    return bool(path.key) or path.field is not None


@contextmanager
def set_errors_as_status(context: Any) -> Iterator[None]:
    """A refused Set as sonic-gnmi answers it: UNKNOWN with the message."""
    try:
        yield
    except (UnknownTargetError, BadTargetError) as error:
        context.abort(status_for(error), error.message)
    except VsonicError as error:
        context.abort(grpc.StatusCode.UNKNOWN, error.message)
