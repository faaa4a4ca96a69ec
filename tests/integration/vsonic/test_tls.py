"""Optional TLS: the server presents a certificate made here with `cryptography`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.tls_certs import self_signed_tls
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports
from vsonic.tls import certificate_dns_names, state_tls

CREDS = Credentials("admin", "tls-test-password")
METADATA = [("username", CREDS.username), ("password", CREDS.password)]


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, TlsFiles]]:
    files = self_signed_tls(tmp_path)
    service = GnmiService(fleet_targets(["vs1"], default_ports(1)), Clock(), CREDS)
    running = start_server("127.0.0.1:0", service, tls=files)
    try:
        yield running.port, files
    finally:
        running.stop(grace_s=0.5)


def test_a_client_trusting_the_certificate_gets_answers(tls_server: tuple[int, TlsFiles]) -> None:
    port, files = tls_server
    creds = grpc.ssl_channel_credentials(root_certificates=files.cert.read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{port}", creds) as channel:
        reply = gnmi_pb2_grpc.gNMIStub(channel).Capabilities(
            gnmi_pb2.CapabilityRequest(), metadata=METADATA, timeout=10
        )
    assert [m.name for m in reply.supported_models] == ["sonic-db"]


def test_a_plaintext_client_cannot_talk_to_the_tls_port(tls_server: tuple[int, TlsFiles]) -> None:
    port, _ = tls_server
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, pytest.raises(grpc.RpcError) as e:
        gnmi_pb2_grpc.gNMIStub(channel).Capabilities(
            gnmi_pb2.CapabilityRequest(), metadata=METADATA, timeout=5
        )
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_state_certificate_names_the_advertised_name_and_is_remade_for_a_new_one(
    tmp_path: Path,
) -> None:
    first = state_tls(tmp_path)
    assert certificate_dns_names(first.cert) == {"vsonic.test"}
    made = first.cert.read_bytes()
    assert state_tls(tmp_path).cert.read_bytes() == made  # kept while it names what is asked
    # The compose lab's volume may hold a certificate from before `--advertise vswitch`.
    renamed = state_tls(tmp_path, ["vswitch"])
    assert certificate_dns_names(renamed.cert) == {"vsonic.test", "vswitch"}
    assert renamed.cert.read_bytes() != made
    assert state_tls(tmp_path, ["vswitch"]).cert.read_bytes() == renamed.cert.read_bytes()
