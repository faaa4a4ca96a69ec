"""`vsonic up` / `vsonic down` as an operator runs them: real processes, Redis and gRPC."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pygnmi.client import gNMIclient, gNMIException  # type: ignore[import-untyped]

from controller.policy.models import Switch as IntentSwitch
from tests.integration.vsonic.conftest import call_with_timeout
from vsonic.gnmi_server import Credentials
from vsonic.redis_process import free_port
from vsonic.supervisor import answers, is_running, load_state
from vsonic.tls import tls_files

CFG = "/sonic-db:CONFIG_DB/localhost"
PASSWORD = "cli-test-password"


def _vsonic(*args: str, password: str | None = PASSWORD) -> subprocess.CompletedProcess[str]:
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


def _two_free_ports() -> int:
    """A base port with base+1 also free (the second switch listens there)."""
    while True:
        base = free_port()
        if base < 65535 and answers(base + 1, None, timeout_s=0.2) is False:
            return base


def _get(port: int, path: str, state_dir: Path | None, target: str | None = None) -> object:
    """Over TLS, trusting the certificate ``vsonic up`` made in ``state_dir``; plaintext when
    ``state_dir`` is None (switches started ``--insecure``)."""
    tls = {"insecure": True} if state_dir is None else {
        "path_root": str(tls_files(state_dir).cert)
    }  # fmt: skip
    with gNMIclient(target=("127.0.0.1", port), username="admin", password=PASSWORD,
                    gnmi_timeout=5, **tls) as client:  # fmt: skip
        reply = call_with_timeout(client.get, path=[path], target=target, encoding="json_ietf")
    return reply["notification"][0]["update"][0]["val"]


def test_up_two_switches_then_down(tmp_path: Path) -> None:
    base = _two_free_ports()
    up = _vsonic("up", "--switches", "2", "--base-port", str(base), "--state-dir", str(tmp_path),
                 "--ports", "4", "--no-dataplane")  # fmt: skip
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        assert PASSWORD not in up.stdout + up.stderr
        inventory = yaml.safe_load((tmp_path / "inventory.yaml").read_text())
        # The controller's own intent model accepts every inventory entry as a Switch.
        switches = [IntentSwitch.model_validate(s) for s in inventory["switches"]]
        assert [(s.name, s.gnmi.port) for s in switches] == [("vs1", base), ("vs2", base + 1)]
        assert switches[0].credential_ref == "env:VSONIC_PASSWORD"
        assert [p.name for p in switches[0].ports] == ["Ethernet0", "Ethernet4", "Ethernet8",
                                                       "Ethernet12"]  # fmt: skip
        # Each switch answers with its own databases.
        assert _get(base, f"{CFG}/DEVICE_METADATA/localhost/hostname", tmp_path) == "vs1"
        assert _get(base + 1, f"{CFG}/DEVICE_METADATA/localhost/hostname", tmp_path) == "vs2"
        # TLS by default: the certificate is printed for the controller, plaintext is refused.
        assert f"SLUICE_GNMI_TLS_CA={tls_files(tmp_path).cert}" in up.stdout
        assert not answers(base, Credentials("admin", PASSWORD), timeout_s=2)
        assert tls_files(tmp_path).key.stat().st_mode & 0o777 == 0o600
    finally:
        down = _vsonic("down", "--state-dir", str(tmp_path))
    assert down.returncode == 0, down.stderr
    assert started is not None
    assert len(started.gnmi) == 2
    assert len(started.redis_ports) == 2
    assert not any(is_running(s["pid"]) for s in started.gnmi)
    creds = Credentials("admin", PASSWORD)
    assert not answers(base, creds, timeout_s=1)
    assert not answers(base + 1, creds, timeout_s=1)
    assert load_state(tmp_path) is None


def test_up_fleet_serves_every_switch_from_one_process(tmp_path: Path) -> None:
    port = free_port()
    up = _vsonic("up", "--switches", "3", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path))  # fmt: skip
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        inventory = yaml.safe_load((tmp_path / "inventory.yaml").read_text())
        assert {s["gnmi"]["port"] for s in inventory["switches"]} == {port}
        hostname = f"{CFG}/DEVICE_METADATA/localhost/hostname"
        assert _get(port, hostname, tmp_path, target="vs3") == "vs3"
    finally:
        down = _vsonic("down", "--state-dir", str(tmp_path))
    assert down.returncode == 0
    assert started is not None
    assert len(started.gnmi) == 1
    assert started.redis_ports == []
    assert not is_running(started.gnmi[0]["pid"])


def test_up_twice_on_the_same_state_dir_is_refused(tmp_path: Path) -> None:
    port = free_port()
    first = _vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                    "--state-dir", str(tmp_path))  # fmt: skip
    try:
        assert first.returncode == 0, first.stderr
        second = _vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                         "--state-dir", str(tmp_path))  # fmt: skip
        assert second.returncode == 1
        assert "already has running switches" in second.stderr
    finally:
        assert _vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_without_a_password_one_is_generated_privately(tmp_path: Path) -> None:
    port = free_port()
    up = _vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path), password=None)  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        secret_file = tmp_path / "password"
        assert secret_file.stat().st_mode & 0o777 == 0o600
        generated = secret_file.read_text().strip()
        assert generated not in up.stdout + up.stderr
        tls = tls_files(tmp_path)
        assert answers(port, Credentials("admin", generated), timeout_s=5, tls=tls)
        assert not answers(port, Credentials("admin", PASSWORD), timeout_s=5, tls=tls)
    finally:
        assert _vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_insecure_serves_plaintext_when_asked_explicitly(tmp_path: Path) -> None:
    port = free_port()
    up = _vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path), "--insecure")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        assert "SLUICE_GNMI_INSECURE=true" in up.stdout
        assert _get(port, f"{CFG}/DEVICE_METADATA/localhost/hostname", None, "vs1") == "vs1"
        assert not tls_files(tmp_path).cert.exists()
    finally:
        assert _vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_up_passes_gcu_behaviour_to_every_switch(tmp_path: Path) -> None:
    port = free_port()
    up = _vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path), "--without-sluice-yang",
                 "--gcu-set-s", "0.1")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        path = f"{CFG}/SLUICE_AGENT/global"
        root = str(tls_files(tmp_path).cert)
        client = gNMIclient(target=("127.0.0.1", port), username="admin", password=PASSWORD,
                            gnmi_timeout=5, path_root=root)  # fmt: skip
        with client, pytest.raises(gNMIException, match="tables without YANG models"):
            call_with_timeout(
                client.set, update=[(path, {"algorithm": "static"})], target="vs1",
                encoding="json_ietf",
            )  # fmt: skip
    finally:
        assert _vsonic("down", "--state-dir", str(tmp_path)).returncode == 0
