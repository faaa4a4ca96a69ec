"""Mutual TLS: a switch that requires a client certificate (as sonic-gnmi does with
``--ca_crt`` and ``--client_auth cert``) answers a session that presents one from the
settings, and refuses one that does not. vsonic's gNMI service behind a real gRPC server
that verifies clients."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
from pydantic import SecretStr
from pygnmi.spec.v080 import gnmi_pb2_grpc  # type: ignore[import-untyped]

from controller.errors import SouthboundUnreachable
from controller.southbound.gnmi import CallPolicy, GnmiTarget, SessionPool, session_tls
from controller.southbound.retry import RetryPolicy
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles
from vsonic.seed import default_ports
from vsonic.tls import self_signed_tls

CREDS = Credentials("admin", secrets.token_hex(8))
POLICY = CallPolicy(deadline_s=3.0, retry=RetryPolicy(attempts=1))


@pytest.fixture
def mutual(tmp_path: Path) -> Iterator[tuple[int, TlsFiles, TlsFiles]]:
    (tmp_path / "server").mkdir()
    (tmp_path / "client").mkdir()
    server_tls = self_signed_tls(tmp_path / "server")
    client_tls = self_signed_tls(tmp_path / "client")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service = GnmiService(fleet_targets(["vs1"], default_ports(1)), Clock(), CREDS)
    gnmi_pb2_grpc.add_gNMIServicer_to_server(service, server)
    credentials = grpc.ssl_server_credentials(
        [(server_tls.key.read_bytes(), server_tls.cert.read_bytes())],
        root_certificates=client_tls.cert.read_bytes(),
        require_client_auth=True,
    )
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield port, server_tls, client_tls
    finally:
        server.stop(0.2).wait()


def _target(
    port: int, name: str, ca: Path, cert: Path | None = None, key: Path | None = None
) -> GnmiTarget:
    options = session_tls(insecure=False, ca=ca, cert=cert, key=key)
    return GnmiTarget(name, "127.0.0.1", port, CREDS.username, SecretStr(CREDS.password), options)


def test_a_session_with_the_client_certificate_is_answered(
    mutual: tuple[int, TlsFiles, TlsFiles],
) -> None:
    port, server_tls, client_tls = mutual
    target = _target(port, "vs1", ca=server_tls.cert, cert=client_tls.cert, key=client_tls.key)
    with SessionPool(policy=POLICY) as pool:
        assert pool.session(target).capabilities().supports_json_ietf


def test_a_session_without_one_is_refused(mutual: tuple[int, TlsFiles, TlsFiles]) -> None:
    port, server_tls, _ = mutual
    with SessionPool(policy=POLICY) as pool, pytest.raises(SouthboundUnreachable):
        pool.session(_target(port, "vs1-anonymous", ca=server_tls.cert)).capabilities()
