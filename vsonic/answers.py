"""What sonic-gnmi answers a Get and a Set with, where it differs from plain gNMI habits.

Sources: sonic-net/sonic-gnmi:gnmi_server/server.go (``Get``, ``Set``,
``supportedEncodings``) and sonic_data_client/mixed_db_client.go (``msi2TypedValue``).

- Encodings: JSON, JSON_IETF and PROTO are accepted on Get; anything else is UNIMPLEMENTED.
  With PROTO an entry answers the bytes of its ``pb`` field (what the DASH tables hold), and
  an entry without one fails the Get with NOT_FOUND ("No proto bytes found").
- A refused Set: the error of the data client goes back as it is, which gRPC-Go sends as
  status UNKNOWN with the message; only a request for a target the server cannot route
  (here: a fleet switch it does not serve) is NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc  # type: ignore[import-untyped]
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from vsonic.errors import PathNotFoundError, UnknownTargetError, UnsupportedError, VsonicError
from vsonic.gnmi_codec import JSON, JSON_IETF, status_for, typed_json

PROTO = gnmi_pb2.Encoding.Value("PROTO")
GET_ENCODINGS = (JSON, JSON_IETF, PROTO)


def check_get_encoding(encoding: int) -> int:
    if encoding not in GET_ENCODINGS:
        name = gnmi_pb2.Encoding.Name(encoding)
        raise UnsupportedError(f"unsupported encoding: {name}")
    return encoding


def get_value(value: Any, encoding: int, where: str) -> Any:
    """The TypedValue of a Get answer in ``encoding``."""
    if encoding != PROTO:
        return typed_json(value, encoding)
    if not isinstance(value, dict) or not isinstance(value.get("pb"), str):
        raise PathNotFoundError(f"No proto bytes found in redis {where}")
    return gnmi_pb2.TypedValue(proto_bytes=value["pb"].encode("latin-1"))


@contextmanager
def set_errors_as_status(context: Any) -> Iterator[None]:
    """A refused Set as sonic-gnmi answers it: UNKNOWN with the message."""
    try:
        yield
    except UnknownTargetError as error:
        context.abort(status_for(error), error.message)
    except VsonicError as error:
        context.abort(grpc.StatusCode.UNKNOWN, error.message)
