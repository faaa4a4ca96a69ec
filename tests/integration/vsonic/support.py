"""Helpers for the ``vsonic`` command's tests: run it as an operator would, find two free
ports in a row, read one value over gNMI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pygnmi.client import gNMIclient  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import call_with_timeout
from vsonic.redis_process import free_port
from vsonic.supervisor import answers
from vsonic.tls import tls_files

PASSWORD = "cli-test-password"


def run_vsonic(*args: str, password: str | None = PASSWORD) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VSONIC_PASSWORD"}
    if password is not None:
        env["VSONIC_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "vsonic.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def two_free_ports() -> int:
    """A base port with base+1 also free (the second switch listens there)."""
    while True:
        base = free_port()
        if base < 65535 and answers(base + 1, None, timeout_s=0.2) is False:
            return base


def gnmi_get(port: int, path: str, state_dir: Path | None, target: str | None = None) -> object:
    """Over TLS, trusting the certificate ``vsonic up`` made in ``state_dir``. Plaintext only
    when ``state_dir`` is None: for the test of ``vsonic up --insecure`` (test_cli.py), whose
    subject is that plaintext; every other caller passes its state directory."""
    tls = {"insecure": True} if state_dir is None else {
        "path_root": str(tls_files(state_dir).cert)
    }  # fmt: skip
    with gNMIclient(target=("127.0.0.1", port), username="admin", password=PASSWORD,
                    gnmi_timeout=5, **tls) as client:  # fmt: skip
        reply = call_with_timeout(client.get, path=[path], target=target, encoding="json_ietf")
    return reply["notification"][0]["update"][0]["val"]
