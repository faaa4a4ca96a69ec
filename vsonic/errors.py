"""Errors the virtual switch raises. Each maps to one gRPC status code in the gNMI server.

vsonic is an independent model of SONiC and deliberately does not import ``controller``, so
it has its own small error hierarchy instead of ``controller.errors``.
"""

from __future__ import annotations


class VsonicError(Exception):
    """Base class; ``message`` is what the gNMI client sees (never a secret)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidPathError(VsonicError):
    """A gNMI path that does not name a sonic-db location (InvalidArgument)."""


class InvalidRequestError(VsonicError):
    """A request sonic-gnmi would refuse as such, e.g. TARGET_DEFINED (InvalidArgument)."""


class InvalidValueError(VsonicError):
    """A value that is not JSON_IETF, not JSON, or of the wrong shape (InvalidArgument)."""


class SchemaViolationError(VsonicError):
    """The would-be CONFIG_DB breaks a YANG rule; every problem names table, key and field."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class PathNotFoundError(VsonicError):
    """Get of an entry or field that does not exist, or a path sonic-gnmi cannot read
    (NotFound)."""


class AbsentTableError(PathNotFoundError):
    """A table path whose table has no key in redis: sonic-gnmi's "Failed to find" (NotFound
    in a Get; it ends a Subscribe)."""


class BadTargetError(VsonicError):
    """A request whose paths name no database, or several (sonic-gnmi ``ParseDatabase``):
    NotFound on every RPC, with the text of the Unimplemented status it wraps."""


class UnsupportedError(VsonicError):
    """Something sonic-gnmi does not do either, e.g. Set on COUNTERS_DB (Unimplemented)."""


class UnknownTargetError(VsonicError):
    """Fleet mode: the prefix target names no switch this process serves (NotFound)."""
