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
    BadTargetError,
    InvalidPathError,
    InvalidRequestError,
    InvalidValueError,
    PathNotFoundError,
    SchemaViolationError,
    UnknownTargetError,
    UnsupportedError,
    VsonicError,
)
from vsonic.openconfig import ORIGIN as OC_ORIGIN
from vsonic.openconfig import Elem
from vsonic.paths import DbPath, check_origin, parse_path, request_db

JSON = gnmi_pb2.Encoding.Value("JSON")
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")

_STATUS: dict[type[VsonicError], Any] = {
    InvalidPathError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidValueError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    SchemaViolationError: grpc.StatusCode.INVALID_ARGUMENT,
    PathNotFoundError: grpc.StatusCode.NOT_FOUND,
    BadTargetError: grpc.StatusCode.NOT_FOUND,
    UnknownTargetError: grpc.StatusCode.NOT_FOUND,
    UnsupportedError: grpc.StatusCode.UNIMPLEMENTED,
}


def status_for(error: VsonicError) -> Any:
    for kind in type(error).__mro__:
        if kind in _STATUS:
            return _STATUS[kind]
    return grpc.StatusCode.INVALID_ARGUMENT


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


def is_openconfig(prefix: Any, paths: Any) -> bool:
    """A request for the ``openconfig`` origin (vsonic/openconfig.py): every path's origin,
    or the prefix's; one that mixes it with ``sonic-db`` is refused."""
    origins = {path.origin or prefix.origin for path in paths}
    if OC_ORIGIN not in origins:
        return False
    if len(origins) > 1:
        raise UnsupportedError(f"a request mixing origin {OC_ORIGIN} with others")
    return True


def keyed_elems(prefix: Any, path: Any) -> tuple[Elem, ...]:
    """Prefix then path elements as (name, sorted keys) pairs."""
    return tuple(
        (elem.name, tuple(sorted(elem.key.items()))) for elem in [*prefix.elem, *path.elem]
    )


def check_request_db(prefix: Any, paths: Any) -> str:
    """The one database a request's paths name (``paths.request_db``), origins checked."""
    for path in paths:
        check_origin(path.origin or prefix.origin)
    return request_db([elem_names(prefix) + elem_names(p) for p in paths])


def decode_ietf(typed_value: Any) -> Any:
    """The JSON a Set carries, as sonic-gnmi's JSON client parses it: only ``json_ietf_val``
    is read, so any other kind of value is empty text that fails to parse."""
    text = typed_value.json_ietf_val if typed_value.WhichOneof("value") == "json_ietf_val" else b""
    try:
        return json.loads(text)
    except ValueError:
        raise InvalidValueError(f"Fail to parse {text.decode(errors='replace')}") from None


def json_text(value: Any) -> bytes:
    """The JSON text of every answer: keys sorted, so equal values encode equal bytes; no
    spaces. orjson (a SAMPLE stream encodes a few hundred thousand hashes a second); the
    standard library, same form, for what orjson refuses (keys that are not strings,
    integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def notification(
    clock_ns: Callable[[], int], prefix: Any, updates: list[Any], deletes: list[Any]
) -> Any:
    return gnmi_pb2.Notification(
        timestamp=clock_ns(), prefix=prefix, update=updates, delete=deletes
    )
