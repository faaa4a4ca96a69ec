"""A switch whose gNMI server only samples (``Switch.on_change = False``), over real gRPC: an
ON_CHANGE subscription is refused with UNIMPLEMENTED before any data, SAMPLE still works, and
the other switches of the same fleet server stream changes as before. Over TLS, as every
switch session is (the fleet serves the tests' switch certificate)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import tls_channel
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports

MODE = gnmi_pb2.SubscriptionList.Mode
SUB = gnmi_pb2.SubscriptionMode


def _request(target: str, mode: int) -> Any:
    path = gnmi_pb2.Path(
        origin="sonic-db",
        elem=[gnmi_pb2.PathElem(name=e) for e in ("CONFIG_DB", "localhost", "PORT")],
    )
    sub_list = gnmi_pb2.SubscriptionList(
        prefix=gnmi_pb2.Path(target=target),
        mode=MODE.Value("STREAM"),
        subscription=[gnmi_pb2.Subscription(path=path, mode=mode)],
        encoding=gnmi_pb2.Encoding.Value("JSON_IETF"),
    )
    return gnmi_pb2.SubscribeRequest(subscribe=sub_list)


@pytest.fixture
def fleet(switch_tls: TlsFiles) -> Iterator[tuple[Any, list[tuple[str, str]]]]:
    """Fleet server of ``streams`` (ON_CHANGE) and ``samples`` (SAMPLE only)."""
    targets = fleet_targets(["streams", "samples"], default_ports(2))
    targets.resolve("samples").on_change = False
    credentials = Credentials(username="admin", password=secrets.token_hex(8))
    service = GnmiService(targets, Clock(), credentials)
    running = start_server("127.0.0.1:0", service, switch_tls)
    channel = tls_channel(running.port, switch_tls)
    try:
        yield (
            gnmi_pb2_grpc.gNMIStub(channel),
            [
                ("username", credentials.username),
                ("password", credentials.password),
            ],
        )
    finally:
        channel.close()
        running.stop(grace_s=0.5)


def _first(stub: Any, metadata: list[tuple[str, str]], target: str, mode: int) -> Any:
    call = stub.Subscribe(iter([_request(target, mode)]), metadata=metadata, timeout=30)
    try:
        return next(call)
    finally:
        call.cancel()


def test_on_change_is_refused_with_unimplemented_on_a_sampling_switch(
    fleet: tuple[Any, list[tuple[str, str]]],
) -> None:
    stub, metadata = fleet
    with pytest.raises(grpc.RpcError) as refused:
        _first(stub, metadata, "samples", SUB.Value("ON_CHANGE"))
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "ON_CHANGE is not supported" in refused.value.details()


def test_sample_still_works_there_and_on_change_on_the_other_switch(
    fleet: tuple[Any, list[tuple[str, str]]],
) -> None:
    stub, metadata = fleet
    sampled = _first(stub, metadata, "samples", SUB.Value("SAMPLE"))
    streamed = _first(stub, metadata, "streams", SUB.Value("ON_CHANGE"))
    for first in (sampled, streamed):
        names = [e.name for e in first.update.update[0].path.elem]
        assert names[-1] == "PORT"
