"""The API over TLS (issue 25, "Credentials and transport"): ``python -m api`` given a
certificate (SLUICE_API_TLS_CERT/KEY) serves HTTPS only, checked with real TLS clients: an
ssl socket that verifies the certificate against its CA, httpx, and the sluice CLI trusting
the CA through SLUICE_API_CA. On main the API served no TLS."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from controller.cli import app as sluice
from controller.services.tokens import AccessRole
from controller.settings import ApiSettings
from lab.localpg import free_port
from tests.integration.conftest import issue_token
from vsonic.tether import tethered
from vsonic.tls import self_signed_tls

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 60


@dataclass(frozen=True)
class TlsApi:
    port: int
    ca: Path
    db_url: str

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def _verifying() -> ssl.SSLContext:
    return ssl.create_default_context()


@pytest.fixture(scope="module")
def tls_api(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsApi]:
    files = self_signed_tls(tmp_path_factory.mktemp("api-tls"))
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DATABASE_URL": module_db_url,
        "SLUICE_API_HOST": "127.0.0.1",
        "SLUICE_API_PORT": str(port),
        "SLUICE_API_TLS_CERT": str(files.cert),
        "SLUICE_API_TLS_KEY": str(files.key),
    }
    served = TlsApi(port, files.cert, module_db_url)
    with tethered([sys.executable, "-m", "api"], env=env) as process:
        _wait_for(served, process)
        yield served


def _wait_for(served: TlsApi, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    verify = ssl.create_default_context(cafile=served.ca)
    while time.monotonic() < deadline:
        assert process.poll() is None, "python -m api exited during start-up"
        try:
            if httpx.get(f"{served.url}/healthz", verify=verify, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"the API did not answer over TLS within {START_TIMEOUT_S} s")


def test_the_api_answers_over_tls_with_its_certificate(tls_api: TlsApi) -> None:
    context = ssl.create_default_context(cafile=tls_api.ca)
    with (
        socket.create_connection(("127.0.0.1", tls_api.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        peer = tls.getpeercert()
        assert peer is not None
        assert ("IP Address", "127.0.0.1") in peer["subjectAltName"]
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert b'"status":"ok"' in answer


def test_a_client_that_does_not_trust_the_ca_is_refused_by_its_own_check(tls_api: TlsApi) -> None:
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{tls_api.url}/healthz", verify=_verifying(), timeout=10)


def test_plain_http_gets_no_answer_from_the_tls_port(tls_api: TlsApi) -> None:
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{tls_api.port}/healthz", timeout=10)


def test_the_cli_reaches_the_tls_api_trusting_the_ca_it_is_given(
    tls_api: TlsApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = issue_token(tls_api.db_url, AccessRole.VIEWER, name="tls-cli")
    monkeypatch.setenv("SLUICE_API_URL", tls_api.url)
    monkeypatch.setenv("SLUICE_API_TOKEN", token)
    monkeypatch.setenv("SLUICE_API_CA", str(tls_api.ca))
    trusted = CliRunner().invoke(sluice, ["get", "switches", "-o", "json"])
    assert trusted.exit_code == 0, trusted.stdout + trusted.stderr
    monkeypatch.delenv("SLUICE_API_CA")
    untrusted = CliRunner().invoke(sluice, ["get", "switches", "-o", "json"])
    assert untrusted.exit_code == 7, untrusted.stdout + untrusted.stderr  # API unreachable
    assert token not in untrusted.stdout + untrusted.stderr


def test_a_certificate_without_its_key_is_refused_by_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SLUICE_API_TLS_CERT and SLUICE_API_TLS_KEY go together"):
        ApiSettings(tls_cert=tmp_path / "cert.pem")
