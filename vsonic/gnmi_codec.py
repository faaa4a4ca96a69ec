"""Between gNMI protobuf messages and vsonic's plain values: paths, typed values, errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc  # type: ignore[import-untyped]
import orjson
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.errors import (
    InvalidPathError,
    InvalidRequestError,
    InvalidValueError,
    PathNotFoundError,
    SchemaViolationError,
    UnknownTargetError,
    UnsupportedError,
    VsonicError,
)
from vsonic.paths import DbPath, parse_path

JSON = gnmi_pb2.Encoding.Value("JSON")
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")

_STATUS: dict[type[VsonicError], Any] = {
    InvalidPathError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidValueError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    SchemaViolationError: grpc.StatusCode.INVALID_ARGUMENT,
    PathNotFoundError: grpc.StatusCode.NOT_FOUND,
    UnknownTargetError: grpc.StatusCode.NOT_FOUND,
    UnsupportedError: grpc.StatusCode.UNIMPLEMENTED,
}


def status_for(error: VsonicError) -> Any:
    return _STATUS.get(type(error), grpc.StatusCode.INVALID_ARGUMENT)


@contextmanager
def errors_as_status(context: Any) -> Iterator[None]:
    """Turn vsonic errors into the gRPC status sonic-gnmi would answer with."""
    try:
        yield
    except VsonicError as error:
        context.abort(status_for(error), error.message)


def elem_names(path: Any) -> list[str]:
    return [elem.name for elem in path.elem]


def db_path(prefix: Any, path: Any) -> DbPath:
    """Prefix elements then path elements; the origin may sit on either (path wins)."""
    origin = path.origin or prefix.origin
    return parse_path(origin, elem_names(prefix) + elem_names(path))


def decode_ietf(typed_value: Any, where: str) -> Any:
    """The JSON a Set carries. Only JSON_IETF is accepted, as sonic-gnmi's CONFIG_DB writer."""
    kind = typed_value.WhichOneof("value")
    if kind != "json_ietf_val":
        shown = kind or "no value"
        raise InvalidValueError(
            f"{where}: Value encoding is not IETF JSON (got {shown}); send json_ietf_val"
        )
    try:
        return json.loads(typed_value.json_ietf_val)
    except ValueError as error:
        raise InvalidValueError(f"{where}: json_ietf_val is not valid JSON: {error}") from None


def check_encoding(encoding: int) -> int:
    if encoding not in (JSON, JSON_IETF):
        name = gnmi_pb2.Encoding.Name(encoding)
        raise UnsupportedError(f"encoding {name} is not supported; use JSON_IETF or JSON")
    return encoding


def json_text(value: Any) -> bytes:
    """The JSON text of every answer: keys sorted, so equal values encode equal bytes; no
    spaces. orjson (a SAMPLE stream encodes a few hundred thousand hashes a second); the
    standard library, same form, for what orjson refuses (keys that are not strings,
    integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def typed_json(value: Any, encoding: int) -> Any:
    return typed_json_text(json_text(value), encoding)


def typed_json_text(text: bytes, encoding: int) -> Any:
    """A TypedValue around JSON text already encoded by ``json_text``."""
    if encoding == JSON_IETF:
        return gnmi_pb2.TypedValue(json_ietf_val=text)
    return gnmi_pb2.TypedValue(json_val=text)


def child_path(path: Any, name: str) -> Any:
    """``path`` with one more element (a table path plus a key)."""
    child = gnmi_pb2.Path()
    child.CopyFrom(path)
    child.elem.add(name=name)
    return child


def notification(
    clock_ns: Callable[[], int], prefix: Any, updates: list[Any], deletes: list[Any]
) -> Any:
    return gnmi_pb2.Notification(
        timestamp=clock_ns(), prefix=prefix, update=updates, delete=deletes
    )
