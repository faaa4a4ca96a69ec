"""The namespaced test fabric: addresses stay inside namespaces, SSH reaches every host with
pinned host keys, a stopped sshd makes exactly that host unreachable, teardown leaves nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab import netns

pytestmark = pytest.mark.e2e


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def test_plan_layout_gives_hosts_the_first_addresses_and_control_the_last() -> None:
    layout = netns.plan_layout(["a", "b"], tag="t1", subnet="10.9.0.0/29")
    # 10.9.0.0/29 has usable hosts .1 .. .6; hosts take .1 and .2, control the last (.6).
    assert [h.address for h in layout.hosts] == ["10.9.0.1", "10.9.0.2"]
    assert layout.control_address == "10.9.0.6"
    assert [h.netns for h in layout.hosts] == ["sluice-t1-a", "sluice-t1-b"]
    assert all(len(h.bridge_port) <= 15 for h in layout.hosts)


@pytest.mark.parametrize(
    ("names", "subnet"),
    [([], "10.9.0.0/24"), (["a", "a"], "10.9.0.0/24"), (["a", "b", "c"], "10.9.0.0/30")],
)
def test_plan_layout_refuses_empty_duplicate_or_overfull(names: list[str], subnet: str) -> None:
    with pytest.raises(netns.NetnsError):
        netns.plan_layout(names, tag="t", subnet=subnet)


def test_each_host_answers_ssh_from_its_own_namespace(small_fabric: netns.Fabric) -> None:
    for host in small_fabric.hosts:
        result = small_fabric.ssh(host.name, "ip -j -4 addr show dev eth0")
        assert result.returncode == 0, result.stderr
        assert f'"local":"{host.address}"' in result.stdout
    # The machine's own namespace holds none of the fabric's addresses.
    own = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True, check=True)
    assert all(h.address not in own.stdout for h in small_fabric.hosts)


def test_stopped_sshd_makes_only_that_host_unreachable(small_fabric: netns.Fabric) -> None:
    small_fabric.stop_sshd("h2")
    assert small_fabric.ssh("h2", "true").returncode != 0
    assert small_fabric.ssh("h1", "true").returncode == 0
    assert small_fabric.ssh("h3", "true").returncode == 0
    small_fabric.start_sshd("h2")
    assert small_fabric.ssh("h2", "true").returncode == 0


def test_down_removes_namespaces_processes_and_keys() -> None:
    fabric = netns.up(2)
    names = {h.netns for h in fabric.hosts} | {fabric.layout.control_netns}
    pid_files = [fabric.workdir / h.name / "sshd.pid" for h in fabric.hosts]
    pids = [int(p.read_text()) for p in pid_files]
    reloaded = netns.load(fabric.workdir)  # another process tears down from the workdir
    reloaded.down()
    assert names.isdisjoint(_namespaces())
    assert not any(Path(f"/proc/{pid}").exists() and _running(pid) for pid in pids)
    assert not fabric.workdir.exists()


def _running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    return "zombie" not in status


def test_command_line_brings_a_fabric_up_and_another_process_tears_it_down() -> None:
    command = [sys.executable, "-m", "lab.netns"]
    up = subprocess.run([*command, "up", "2", "--names", "web,db"], capture_output=True, text=True)
    assert up.returncode == 0, up.stderr
    report = json.loads(up.stdout)
    workdir = Path(report["workdir"])
    try:
        inventory = yaml.safe_load(Path(report["inventory"]).read_text())
        hosts = inventory["all"]["hosts"]
        assert hosts == {
            "web": {"ansible_host": "10.211.0.1"},
            "db": {"ansible_host": "10.211.0.2"},
        }
        assert inventory["all"]["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"
        assert netns.load(workdir).ssh("db", "true").returncode == 0
    finally:
        down = subprocess.run([*command, "down", str(workdir)], capture_output=True, text=True)
    assert down.returncode == 0, down.stderr
    assert {h["netns"] for h in report["hosts"]}.isdisjoint(_namespaces())
    assert not workdir.exists()
