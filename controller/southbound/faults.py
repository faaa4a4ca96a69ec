"""What went wrong with a gNMI call, named (pure): the reason a stream or a session failed,
as a short fixed word for metrics and a cause in words for logs and results.

gRPC reports a TLS failure as ``UNAVAILABLE`` whose details carry the reason from the TLS
library ("failed to connect to all addresses; last error: UNKNOWN: ipv4:…: Tls handshake
failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:1000007d:SSL routines:
OPENSSL_internal:CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate"), the
same code as a port nobody listens on. A switch that refuses the password answers
``UNAUTHENTICATED`` (sonic-gnmi gnmi_server/basicAuth.go). sonic-gnmi answers a Subscribe or
Get of a table it does not hold with "Failed to find <DB> <TABLE> …"
(sonic_data_client/mixed_db_client.go ``getDbtablePath``) and a Subscribe that mixes
databases with "Target conflict in path". ``classify`` tells these apart from the status code
and the details; the details are the server's or the gRPC library's words, with the
session's password taken out (``redact``) before they are shown anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Reason(Enum):
    """Why a call failed: one word each, so a metric label has few values."""

    TLS_CERTIFICATE = "tls_certificate"  # the switch's certificate did not verify
    TLS_HANDSHAKE = "tls_handshake"  # any other TLS failure (plaintext peer, client cert)
    AUTH_REFUSED = "auth_refused"  # the username/password (or client identity) refused
    NOT_AUTHORISED = "not_authorised"  # authenticated, not allowed this call
    UNREACHABLE = "unreachable"  # nobody answered (refused, reset, no route)
    DEADLINE = "deadline"  # no answer within the deadline
    ABSENT = "absent"  # a table the request named is not on the switch
    REFUSED = "refused"  # the server answered the request with an error
    MALFORMED = "malformed"  # the answer could not be read
    EMPTY = "empty"  # a subscription answered nothing for objects it should cover


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure named: ``reason`` for metrics, ``cause`` in words for people (no secret:
    built from redacted details), ``code`` the gRPC status name when there is one."""

    reason: Reason
    cause: str
    code: str = ""

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.cause}"


_VERIFY = re.compile(r"CERTIFICATE_VERIFY_FAILED:?\s*([^:]*)", re.IGNORECASE)
_TLS_ERROR = re.compile(r"SSL_ERROR_[A-Z_]+:\s*(.*)")
_HANDSHAKE = re.compile(r"(?:tls|ssl) handshake failed", re.IGNORECASE)
_ABSENT = re.compile(r"Failed to find (\S+) (\S+)")
_MAX_CAUSE = 300


def redact(text: str, secret: str) -> str:
    """``text`` without ``secret`` (a password a server or library might echo)."""
    return text.replace(secret, "***") if secret else text


def _tls_cause(details: str) -> str:
    """The TLS library's own reason, without gRPC's wrapping and OpenSSL's error codes."""
    found = _TLS_ERROR.search(details)
    text = found.group(1) if found else details
    text = re.sub(r"error:[0-9a-fA-F]+:[^:]*:[^:]*:", "", text)
    return text.removesuffix(": OK").strip(" :") or "TLS handshake failed"


def classify(code: str, details: str) -> Fault:
    """The fault a gRPC status ``code`` (its name) and its (redacted) ``details`` describe."""
    details = " ".join(details.split())[: _MAX_CAUSE * 2] or "no message"
    verify = _VERIFY.search(details)
    if verify:
        why = verify.group(1).removesuffix(" OK").strip(" :")
        cause = "certificate verify failed" + (f": {why}" if why else "")
        return Fault(Reason.TLS_CERTIFICATE, cause, code)
    if _HANDSHAKE.search(details) or "SSL_ERROR" in details:
        return Fault(Reason.TLS_HANDSHAKE, f"TLS handshake failed: {_tls_cause(details)}", code)
    if code == "UNAUTHENTICATED":
        return Fault(Reason.AUTH_REFUSED, f"credentials refused ({details})"[:_MAX_CAUSE], code)
    if code == "PERMISSION_DENIED":
        return Fault(Reason.NOT_AUTHORISED, f"not authorised ({details})"[:_MAX_CAUSE], code)
    if _ABSENT.search(details):
        return Fault(Reason.ABSENT, details[:_MAX_CAUSE], code)
    if code == "UNAVAILABLE":
        return Fault(Reason.UNREACHABLE, _unavailable_cause(details), code)
    if code == "DEADLINE_EXCEEDED":
        return Fault(Reason.DEADLINE, "no answer within the deadline", code)
    return Fault(Reason.REFUSED, f"{code}: {details}"[:_MAX_CAUSE], code)


def _unavailable_cause(details: str) -> str:
    """ "connection refused" and the like, without gRPC's "failed to connect to all
    addresses; last error: UNKNOWN: ipv4:…:" preamble."""
    last = details.rpartition("last error:")[2] if "last error:" in details else details
    last = re.sub(r"^\s*[A-Z_]+:\s*", "", last)  # the inner status name
    last = re.sub(r"^(?:ipv4|ipv6|unix):[^ ]*?:\d+:\s*", "", last)
    return last.strip() or details


def absent_table(details: str) -> tuple[str, str] | None:
    """``(database, table)`` that sonic-gnmi's "Failed to find <DB> <TABLE>" names, if the
    details say so (its message for a table with no key in redis)."""
    found = _ABSENT.search(details)
    if found is None:
        return None
    return found.group(1), found.group(2)


class FaultLog:
    """A stream's faults as they change: ``changed`` is True for a fault that differs from
    the last one seen (so a failure retried every few seconds is logged once, and again only
    when its reason or cause moves); ``recovered`` is True once after a fault cleared."""

    def __init__(self) -> None:
        self.current: Fault | None = None

    def changed(self, fault: Fault) -> bool:
        moved = fault != self.current
        self.current = fault
        return moved

    def recovered(self) -> bool:
        was = self.current is not None
        self.current = None
        return was
