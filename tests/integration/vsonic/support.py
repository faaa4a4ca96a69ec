"""Helpers for the ``vsonic`` command's tests: run it as an operator would, find two free
ports in a row, read one value over gNMI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pygnmi.client import gNMIclient  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import call_with_timeout
from vsonic.tether import CleanupGuard
from vsonic.tls import tls_files

PASSWORD = "cli-test-password"
# A guard per state folder that ``up`` started and ``down`` has not stopped yet: should the
# test run be killed in between, it runs ``vsonic down`` on the servers left.
_GUARDS: dict[str, CleanupGuard] = {}


def run_vsonic(*args: str, password: str | None = PASSWORD) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VSONIC_PASSWORD"}
    if password is not None:
        env["VSONIC_PASSWORD"] = password
    vsonic = [sys.executable, "-m", "vsonic.cli"]
    state_dir = _state_dir(args)
    guarded = args[0] == "up" and state_dir is not None and state_dir not in _GUARDS
    if guarded and state_dir is not None:
        _GUARDS[state_dir] = CleanupGuard([*vsonic, "down", "--state-dir", state_dir], env=env)
    done = subprocess.run(
        [*vsonic, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    # A refused ``up`` started nothing (it stops what it had started).
    stopped = args[0] == "down" or (guarded and done.returncode != 0)
    if stopped and state_dir in _GUARDS:
        _GUARDS.pop(state_dir).dismiss()
    return done


def _state_dir(args: tuple[str, ...]) -> str | None:
    return args[args.index("--state-dir") + 1] if "--state-dir" in args else None


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
