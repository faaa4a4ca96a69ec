"""`vsonic up` / `vsonic down` as an operator runs them: real processes, Redis and gRPC."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
import yaml
from pygnmi.client import gNMIclient, gNMIException  # type: ignore[import-untyped]

from controller.intent.models import Switch as IntentSwitch
from tests.integration.vsonic.conftest import call_with_timeout
from tests.integration.vsonic.support import PASSWORD, gnmi_get, run_vsonic
from tests.support.ports import free_port_run
from vsonic.gcu import SCOPE_REFUSAL
from vsonic.gnmi_server import Credentials
from vsonic.redis_process import free_port
from vsonic.supervisor import answers, is_running, load_state
from vsonic.tls import tls_files

CFG = "/sonic-db:CONFIG_DB/localhost"


def test_up_two_switches_then_down(tmp_path: Path) -> None:
    base = free_port_run(2)
    up = run_vsonic("up", "--switches", "2", "--base-port", str(base), "--state-dir", str(tmp_path),
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
        assert gnmi_get(base, f"{CFG}/DEVICE_METADATA/localhost/hostname", tmp_path) == "vs1"
        assert gnmi_get(base + 1, f"{CFG}/DEVICE_METADATA/localhost/hostname", tmp_path) == "vs2"
        # TLS by default: the certificate is printed for the controller, plaintext is refused.
        assert f"SLUICE_GNMI_TLS_CA={tls_files(tmp_path).cert}" in up.stdout
        assert not answers(base, Credentials("admin", PASSWORD), timeout_s=2)
        assert tls_files(tmp_path).key.stat().st_mode & 0o777 == 0o600
    finally:
        down = run_vsonic("down", "--state-dir", str(tmp_path))
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
    up = run_vsonic("up", "--switches", "3", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path))  # fmt: skip
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        inventory = yaml.safe_load((tmp_path / "inventory.yaml").read_text())
        assert {s["gnmi"]["port"] for s in inventory["switches"]} == {port}
        hostname = f"{CFG}/DEVICE_METADATA/localhost/hostname"
        assert gnmi_get(port, hostname, tmp_path, target="vs3") == "vs3"
    finally:
        down = run_vsonic("down", "--state-dir", str(tmp_path))
    assert down.returncode == 0
    assert started is not None
    assert len(started.gnmi) == 1
    assert started.redis_ports == []
    assert not is_running(started.gnmi[0]["pid"])


def test_up_twice_on_the_same_state_dir_is_refused(tmp_path: Path) -> None:
    port = free_port()
    first = run_vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                    "--state-dir", str(tmp_path))  # fmt: skip
    try:
        assert first.returncode == 0, first.stderr
        second = run_vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                         "--state-dir", str(tmp_path))  # fmt: skip
        assert second.returncode == 1
        assert "already has running switches" in second.stderr
    finally:
        assert run_vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_a_taken_port_fails_up_with_the_server_s_own_reason(tmp_path: Path) -> None:
    base = free_port_run(2)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        up = run_vsonic("up", "--switches", "2", "--base-port", str(base),
                        "--state-dir", str(tmp_path), "--ports", "1", "--no-dataplane")  # fmt: skip
    assert up.returncode == 1
    # The last line of vs2's own log, not only "see its log", and where that log is.
    log = tmp_path / "gnmi-vs2.log"
    last = log.read_text().strip().splitlines()[-1]
    assert f"gNMI server for vs2 exited: {last} (log {log})" in up.stderr
    assert load_state(tmp_path) is None


def test_without_a_password_one_is_generated_privately(tmp_path: Path) -> None:
    port = free_port()
    up = run_vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
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
        assert run_vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_insecure_serves_plaintext_when_asked_explicitly(tmp_path: Path) -> None:
    port = free_port()
    up = run_vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path), "--insecure")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        assert "SLUICE_GNMI_INSECURE=true" in up.stdout
        assert gnmi_get(port, f"{CFG}/DEVICE_METADATA/localhost/hostname", None, "vs1") == "vs1"
        assert not tls_files(tmp_path).cert.exists()
    finally:
        assert run_vsonic("down", "--state-dir", str(tmp_path)).returncode == 0


def test_up_passes_gcu_behaviour_to_every_switch(tmp_path: Path) -> None:
    port = free_port()
    up = run_vsonic("up", "--switches", "1", "--fleet", "--base-port", str(port),
                 "--state-dir", str(tmp_path), "--without-sluice-yang",
                 "--gcu-set-s", "0.1")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        path = f"{CFG}/SLUICE_AGENT/global"
        root = str(tls_files(tmp_path).cert)
        client = gNMIclient(target=("127.0.0.1", port), username="admin", password=PASSWORD,
                            gnmi_timeout=5, path_root=root)  # fmt: skip
        with client, pytest.raises(gNMIException, match=re.escape(SCOPE_REFUSAL)):
            call_with_timeout(
                client.set, update=[(path, {"algorithm": "static"})], target="vs1",
                encoding="json_ietf",
            )  # fmt: skip
    finally:
        assert run_vsonic("down", "--state-dir", str(tmp_path)).returncode == 0
