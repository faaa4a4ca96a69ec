"""Failures named from what gRPC and SONiC's gNMI server answer (the details below are the
ones measured against sonic-gnmi and grpcio), and logged once per change."""

from __future__ import annotations

from controller.southbound.faults import Fault, FaultLog, Reason, absent_table, classify, redact

WRONG_CA = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:43041: Tls "
    "handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:1000007d:SSL routines:"
    "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate: OK"
)
PLAINTEXT_PEER = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:5: Ssl handshake "
    "failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:100000f7:SSL routines:"
    "OPENSSL_internal:WRONG_VERSION_NUMBER"
)
CLOSED_PORT = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9: "
    "Failed to connect to remote host: Connection refused"
)


def test_a_certificate_that_does_not_verify_is_named_not_left_as_unavailable() -> None:
    fault = classify("UNAVAILABLE", WRONG_CA)
    assert fault.reason is Reason.TLS_CERTIFICATE
    assert fault.cause == "certificate verify failed: unable to get local issuer certificate"


def test_other_tls_failures_name_the_tls_librarys_reason() -> None:
    fault = classify("UNAVAILABLE", PLAINTEXT_PEER)
    assert fault.reason is Reason.TLS_HANDSHAKE
    assert fault.cause == "TLS handshake failed: WRONG_VERSION_NUMBER"


def test_a_refused_password_and_a_closed_port_are_told_apart() -> None:
    refused = classify("UNAUTHENTICATED", "Unauthenticated")
    assert (refused.reason, refused.cause) == (
        Reason.AUTH_REFUSED,
        "credentials refused (Unauthenticated)",
    )
    closed = classify("UNAVAILABLE", CLOSED_PORT)
    assert (closed.reason, closed.cause) == (
        Reason.UNREACHABLE,
        "Failed to connect to remote host: Connection refused",
    )
    assert classify("DEADLINE_EXCEEDED", "Deadline Exceeded").reason is Reason.DEADLINE


def test_an_absent_table_is_named_with_its_database() -> None:
    details = "streamOnChangeSubscription error:  Failed to find CONFIG_DB TC_TO_QUEUE_MAP <nil> []"
    fault = classify("INVALID_ARGUMENT", details)
    assert fault.reason is Reason.ABSENT
    assert absent_table(fault.cause) == ("CONFIG_DB", "TC_TO_QUEUE_MAP")
    assert absent_table("Target conflict in path") is None
    conflict = classify("NOT_FOUND", "rpc error: code = Unimplemented desc = Target conflict")
    assert conflict.reason is Reason.REFUSED


def test_a_password_never_reaches_the_cause() -> None:
    details = redact("bad credentials for admin/s3cr3t", "s3cr3t")
    assert "s3cr3t" not in str(classify("UNAUTHENTICATED", details))
    assert redact("text", "") == "text"


def test_a_fault_is_logged_once_until_it_changes_and_once_when_it_clears() -> None:
    faults = FaultLog()
    closed = Fault(Reason.UNREACHABLE, "Connection refused", "UNAVAILABLE")
    tls = Fault(Reason.TLS_CERTIFICATE, "certificate verify failed", "UNAVAILABLE")
    assert [faults.changed(f) for f in (closed, closed, closed, tls, tls, closed)] == [
        True, False, False, True, False, True,
    ]  # fmt: skip
    assert faults.recovered()
    assert not faults.recovered()
    assert faults.changed(closed)
