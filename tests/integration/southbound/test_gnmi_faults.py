"""Faults no honest switch produces on demand: a malformed answer and a server that never
answers. Both run over real gRPC with TLS; the servers are fakes (vsonic answers correctly)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pydantic import SecretStr
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from controller.errors import (
    SouthboundProtocolError,
    SouthboundSetUnconfirmed,
    SouthboundUnreachable,
)
from controller.reconcile.apply import apply_plan_to_switch
from controller.sonic.model import Op, Plan
from controller.southbound.gnmi import CallPolicy, GnmiTarget, SessionPool, session_tls
from controller.southbound.retry import RetryPolicy
from vsonic.gnmi_server import TlsFiles

SCHED = Op("add", "SCHEDULER", "SLUICE_SCHED_1", {"type": "STRICT"}, {})


class FakeMalformedGnmiServicer(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    """Accepts every Set; answers every Get with ``value`` (a TypedValue)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        return gnmi_pb2.SetResponse()

    def Get(self, request: Any, context: Any) -> Any:  # noqa: N802
        update = gnmi_pb2.Update(path=request.path[0], val=self.value)
        return gnmi_pb2.GetResponse(notification=[gnmi_pb2.Notification(update=[update])])


class FakeStalledGnmiServicer(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    """Holds every Set until ``release`` is set: a switch that hangs."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.release.wait()
        return gnmi_pb2.SetResponse()


def serve(servicer: Any, tls: TlsFiles) -> tuple[Any, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    gnmi_pb2_grpc.add_gNMIServicer_to_server(servicer, server)
    credentials = grpc.ssl_server_credentials([(tls.key.read_bytes(), tls.cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return server, port


@pytest.fixture
def malformed(switch_tls: TlsFiles) -> Iterator[tuple[FakeMalformedGnmiServicer, int]]:
    servicer = FakeMalformedGnmiServicer(gnmi_pb2.TypedValue())
    server, port = serve(servicer, switch_tls)
    try:
        yield servicer, port
    finally:
        server.stop(0.2).wait()


def target(port: int, tls: TlsFiles) -> GnmiTarget:
    """The fake switch over TLS, trusting its certificate (as every switch session is)."""
    options = session_tls(insecure=False, ca=tls.cert)
    secret = SecretStr(secrets.token_hex(8))
    return GnmiTarget("odd1", "127.0.0.1", port, "admin", secret, tls=options)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (gnmi_pb2.TypedValue(json_ietf_val=b"{not json"), "not JSON"),
        (gnmi_pb2.TypedValue(string_val="DWRR"), "string_val"),
        (gnmi_pb2.TypedValue(json_ietf_val=b'["a", "list"]'), "not a JSON object"),
        (
            # A fresh session reads the CONFIG_DB root: {table: {key: {field: value}}}.
            gnmi_pb2.TypedValue(
                json_ietf_val=b'{"DEVICE_METADATA": {}, "SCHEDULER": {"S1": {"weight": 40}}}'
            ),
            "field 'weight'",
        ),
    ],
)
def test_a_malformed_get_answer_is_a_protocol_error(
    malformed: tuple[FakeMalformedGnmiServicer, int],
    value: Any,
    named: str,
    switch_tls: TlsFiles,
) -> None:
    servicer, port = malformed
    servicer.value = value
    with SessionPool() as pool:
        session = pool.session(target(port, switch_tls))
        with pytest.raises(SouthboundProtocolError, match=named):
            session.get_tables(["SCHEDULER"])
        assert session.rpc_counts == {"Get": 1}  # never retried


def test_a_malformed_read_back_fails_the_apply_with_the_reason(
    malformed: tuple[FakeMalformedGnmiServicer, int], switch_tls: TlsFiles
) -> None:
    servicer, port = malformed
    servicer.value = gnmi_pb2.TypedValue(json_ietf_val=b"{not json")
    with SessionPool() as pool:
        session = pool.session(target(port, switch_tls))
        result = apply_plan_to_switch(session, Plan("odd1", (SCHED,)))
    assert result.status == "failed"
    assert result.ops_written == 1  # the Set was accepted; only the read-back went wrong
    assert "read-back" in (result.reason or "")
    assert "not JSON" in (result.reason or "")


def test_a_hanging_switch_hits_the_set_deadline_once_and_the_set_is_unconfirmed(
    switch_tls: TlsFiles,
) -> None:
    servicer = FakeStalledGnmiServicer()
    server, port = serve(servicer, switch_tls)
    sleeps: list[float] = []
    policy = CallPolicy(
        deadline_s=0.2,
        retry=RetryPolicy(attempts=2, base_delay_s=0.01),
        set_deadline_s=0.3,
        progress_every_s=0.1,
    )
    try:
        with SessionPool(policy=policy, sleep=sleeps.append) as pool:
            session = pool.session(target(port, switch_tls))
            with pytest.raises(SouthboundSetUnconfirmed, match="DEADLINE_EXCEEDED") as raised:
                session.set([SCHED])
            # Never retried: the switch may still be applying it.
            assert session.rpc_counts == {"Set": 1}
            assert sleeps == []
            # Four Set deadlines (the default factor: GCU took 3x and more on a loaded switch).
            assert raised.value.outcome_wait_s == pytest.approx(1.2)
            assert isinstance(raised.value, SouthboundUnreachable)
    finally:
        servicer.release.set()
        server.stop(0.2).wait()
