"""The demo's hosts step end to end, as the demo runs it: ``host_fabric`` brings the example
intent's four hosts up as namespaces before the API starts; the API is a real ``python -m
api`` process on a real PostgreSQL, started with the fabric's ``SLUICE_HOSTS_*``; the example
intent is applied first (as the demo does); then ``hosts_step`` drives the real ``sluice``
commands. Afterwards every namespace is read directly (not through Ansible or the API), the
recorded runs are read from the API, and once the context has closed, the fabric must be gone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from controller.services.tokens import AccessRole
from lab import netns
from lab.demo_common import stop_process
from lab.demo_hosts import (
    EXAMPLE_INTENT,
    FABRIC_RECORD,
    HostDemoError,
    HostFabricEnv,
    current_intent,
    host_fabric,
    hosts_step,
    intent_host_names,
    point_intent_at_namespaces,
)
from lab.localpg import free_port
from tests.integration.conftest import issue_token
from vsonic.tether import start_tethered

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
# nft prints some DSCP values by name: RFC 2474 class selector 6 = 48, RFC 3246 EF = 46,
# RFC 2597 AF41 = 34.
NFT_DSCP_NAMES = {"cs6": 48, "ef": 46, "af41": 34}
TC_UNITS = {"bit": 1, "Kbit": 10**3, "Mbit": 10**6, "Gbit": 10**9}
# The example intent's QJUMP level 7 (QJUMP, NSDI 2015 §3.1: epoch = 2nP/R + eps):
# n = 16, P = 256 B = 2048 bit, R = 25 Gb/s, eps = 4 us -> epoch = 2 x 16 x 2048 / 25e9 s
# + 4 us = 2.62144 us + 4 us = 6.62144 us; f_7 = 1 -> 2048 bit / 6.62144 us = 309.298 Mbit/s.
LEVEL7_BPS = 2048 / 6.62144e-6
LINE_RATE_BPS = 25e9  # level 0 has no factor: the host's 25 Gb/s NIC


class Transcript:
    """A ``run`` and ``say`` for hosts_step that run the real commands and keep what each
    printed, so the test can see what the demo showed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.outputs: dict[str, str] = {}

    def say(self, step: str) -> None:
        self.lines.append(f"==> {step}")

    def run(self, args: Sequence[str], env: dict[str, str]) -> str:
        shown = " ".join(Path(args[0]).name if i == 0 else a for i, a in enumerate(args))
        done = subprocess.run(
            list(args), env=env, text=True, capture_output=True, check=False, timeout=600
        )
        self.lines.append(f"$ {shown}")
        self.outputs[shown] = done.stdout
        if done.returncode != 0:
            raise HostDemoError(f"{shown} exited {done.returncode}: {done.stdout}{done.stderr}")
        return done.stdout


def _running(pid: int) -> bool:
    """A zombie counts as gone: PID 1 here does not reap daemons' children."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return state.split()[1] != "Z"  # "State:\tZ (zombie)"


def _namespace_pids(names: Sequence[str]) -> list[int]:
    pids: list[int] = []
    for name in names:
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        pids += [int(token) for token in out.stdout.split()]
    return pids


def _netns_list() -> set[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in listing.stdout.splitlines() if line.strip()}


@contextmanager
def api_process(db_url: str, hosts_env: Mapping[str, str], log: Path) -> Iterator[str]:
    """``python -m api`` as the demo starts it, with the fabric's SLUICE_HOSTS_* settings."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": db_url, "SLUICE_API_PORT": str(port), **hosts_env}
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = start_tethered(
            [str(BIN / "python"), "-m", "api"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
        while not _healthy(url):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        stop_process(proc, signal.SIGINT, timeout_s=30)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def in_netns(hosts: HostFabricEnv, name: str, argv: list[str]) -> str:
    return subprocess.run(
        hosts.fabric.host_exec(name, argv), capture_output=True, text=True, check=True
    ).stdout


def htb_rates(text: str) -> dict[str, float]:
    """``tc class show`` lines to {class id: rate in bit/s}."""
    rates: dict[str, float] = {}
    for line in text.splitlines():
        match = re.match(r"class htb (\S+) .*?\brate ([0-9.]+)([KMG]?bit)\b", line)
        if match:
            rates[match.group(1)] = float(match.group(2)) * TC_UNITS[match.group(3)]
    return rates


def nft_marks(hosts: HostFabricEnv, name: str, table: str) -> dict[str, int]:
    """{rule comment: DSCP it sets} of a sluice table, from ``nft -j`` in the namespace."""
    listing = json.loads(in_netns(hosts, name, ["nft", "-j", "list", "table", "inet", table]))
    marks: dict[str, int] = {}
    for item in listing["nftables"]:
        rule = item.get("rule")
        for expr in rule["expr"] if rule else []:
            mangle = expr.get("mangle", {})
            if mangle.get("key", {}).get("payload", {}).get("field") == "dscp":
                value = mangle["value"]
                marks[rule["comment"]] = NFT_DSCP_NAMES.get(value, value)
    return marks


def read_namespace(hosts: HostFabricEnv, name: str) -> dict[str, Any]:
    return {
        "tcp_ecn": in_netns(hosts, name, ["sysctl", "-n", "net.ipv4.tcp_ecn"]).strip(),
        "rates": htb_rates(in_netns(hosts, name, ["tc", "class", "show", "dev", "eth0"])),
        "dscp": nft_marks(hosts, name, "sluice_dscp"),
        "pias": nft_marks(hosts, name, "sluice_pias"),
        "dscp_text": in_netns(hosts, name, ["nft", "list", "table", "inet", "sluice_dscp"]),
    }


def api_reads(url: str, token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"{url}/api/v1", headers=headers, timeout=30) as client:
        listing = client.get("/hosts/runs", params={"limit": 50}).json()["items"]
        runs = [client.get(f"/hosts/runs/{item['id']}").json() for item in reversed(listing)]
        return {"runs": runs, "intent": client.get("/intent").json()}


@pytest.fixture(scope="module")
def story(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if os.geteuid() != 0:
        pytest.fail("e2e tests need root for network namespaces and sshd", pytrace=False)
    run_dir = tmp_path_factory.mktemp("demo-hosts")
    names = intent_host_names(yaml.safe_load(EXAMPLE_INTENT.read_text()))
    token = issue_token(module_db_url, AccessRole.OPERATOR)
    transcript = Transcript()
    with host_fabric(run_dir, names, keep=False) as hosts:
        namespaces = [h.netns for h in hosts.fabric.hosts] + [hosts.fabric.layout.control_netns]
        with api_process(module_db_url, hosts.env, run_dir / "api.log") as url:
            env = {**os.environ, "SLUICE_API_URL": url, "SLUICE_API_TOKEN": token}
            env["DATABASE_URL"] = module_db_url  # the step starts the worker over it
            # The demo applies the example intent (hosts at 10.0.x.y) before this step.
            transcript.run([str(BIN / "sluice"), "apply", "-f", str(EXAMPLE_INTENT),
                            "--reason", "test: the demo's first step"], env)  # fmt: skip
            hosts_step(env, run_dir, hosts, run=transcript.run, say=transcript.say)
            reads = api_reads(url, token)
        facts: dict[str, Any] = {
            "hosts": hosts,
            "namespaces": namespaces,
            "workdir": hosts.fabric.workdir,
            "read": {name: read_namespace(hosts, name) for name in names},
            "pids_up": _namespace_pids(namespaces),
        }
    facts.update(reads, transcript=transcript, run_dir=run_dir, names=names)
    facts["netns_after"] = _netns_list()
    return facts


def test_the_intent_applied_points_every_host_at_its_namespace(story: dict[str, Any]) -> None:
    hosts: HostFabricEnv = story["hosts"]
    stored = story["intent"]
    # Version 1: the example as the demo applied it; version 2: its hosts in the namespaces.
    assert stored["version"]["number"] == 2
    addresses = {h["name"]: h["address"] for h in stored["intent"]["hosts"]}
    assert addresses == hosts.addresses
    assert addresses == {h.name: h.address for h in hosts.fabric.hosts}
    example = yaml.safe_load(EXAMPLE_INTENT.read_text())
    assert [s["name"] for s in stored["intent"]["switches"]] == [
        s["name"] for s in example["switches"]
    ]


def test_plan_reported_changes_for_every_host_and_changed_nothing(story: dict[str, Any]) -> None:
    plan, first, _ = story["runs"]
    assert (plan["mode"], plan["state"]) == ("plan", "completed")
    assert {r["host"]: r["status"] for r in plan["results"]} == dict.fromkeys(
        story["names"], "changed"
    )
    for result in plan["results"]:
        assert {t["role"] for t in result["changed_tasks"]} == {"ecn", "qjump", "dscp", "pias"}
    # Had check mode changed anything, the first apply would have found those hosts ok.
    assert {r["host"]: r["status"] for r in first["results"]} == dict.fromkeys(
        story["names"], "changed"
    )


def test_apply_went_in_batches_of_two_and_reached_every_namespace(story: dict[str, Any]) -> None:
    first = story["runs"][1]
    assert (first["mode"], first["state"], first["failures"]) == ("apply", "completed", 0)
    assert {r["host"]: r["batch"] for r in first["results"]} == {
        "host1": 1, "host2": 1, "host3": 2, "host4": 2,
    }  # fmt: skip
    for name in story["names"]:
        state = story["read"][name]
        assert state["tcp_ecn"] == "1"  # rpc's queue marks ECN (standard): senders ask for it
        # tc prints rates rounded to a few digits; 2e-3 covers that, not a different rate.
        assert state["rates"]["1:17"] == pytest.approx(LEVEL7_BPS, rel=2e-3)
        assert state["rates"]["1:10"] == pytest.approx(LINE_RATE_BPS, rel=2e-3)
        assert state["dscp"] == {"class control": 48, "class rpc": 46}
        assert state["pias"] == {"rpc stage 0": 46, "rpc stage 1": 34}
        control = next(
            line for line in state["dscp_text"].splitlines() if '"class control"' in line
        )
        assert "tcp dport 7000" in control
        assert "meta priority set 1:17" in control  # QJUMP level 7's HTB class


def test_the_second_apply_changed_nothing(story: dict[str, Any]) -> None:
    runs = story["runs"]
    assert [r["mode"] for r in runs] == ["plan", "apply", "apply"]
    second = runs[2]
    assert second["state"] == "completed"
    assert {r["host"]: r["status"] for r in second["results"]} == dict.fromkeys(
        story["names"], "ok"
    )
    assert all(r["changed_tasks"] == [] for r in second["results"])


def test_the_demo_showed_each_command_and_the_read_back(story: dict[str, Any]) -> None:
    transcript: Transcript = story["transcript"]
    commands = [line for line in transcript.lines if line.startswith("$ ")]
    hosts: HostFabricEnv = story["hosts"]
    host1 = hosts.fabric.host("host1").netns
    assert commands[1].startswith("$ sluice apply -f ")
    assert commands[2:5] == [
        "$ sluice hosts plan",
        "$ sluice hosts apply --batch-size 2 --poll 0.5",
        f"$ ip netns exec {host1} tc class show dev eth0",
    ]
    assert commands[-1] == "$ sluice hosts apply --poll 0.5"
    shown = transcript.outputs
    assert "class htb 1:17" in shown[f"ip netns exec {host1} tc class show dev eth0"]
    assert "net.ipv4.tcp_ecn = 1" in shown[f"ip netns exec {host1} sysctl net.ipv4.tcp_ecn"]
    pias = shown[f"ip netns exec {host1} nft list table inet sluice_pias"]
    assert "table inet sluice_pias" in pias
    progress = shown["sluice hosts apply --batch-size 2 --poll 0.5"]
    for name in story["names"]:
        batch = 1 if name in ("host1", "host2") else 2
        assert f"batch {batch}/2: {name} changed" in progress


def test_everything_was_torn_down(story: dict[str, Any]) -> None:
    assert story["pids_up"]  # there were sshd processes to stop
    assert not set(story["namespaces"]) & story["netns_after"]
    assert not any(_running(pid) for pid in story["pids_up"])
    assert not story["workdir"].exists()
    assert not (story["run_dir"] / FABRIC_RECORD).exists()


def test_with_no_intent_yet_the_file_is_applied_at_the_namespace_addresses(
    db_url: str, tmp_path: Path
) -> None:
    """The step also works when the demo applied nothing before it. Needs no root: only the
    fabric's layout is planned, nothing is brought up, and only the intent is applied."""
    names = ["host1", "host2", "host3", "host4"]
    fabric = netns.Fabric(layout=netns.plan_layout(names, "abcdef"), workdir=tmp_path / "f")
    # plan_layout gives host i the subnet's i-th address: 10.211.0.1 .. 10.211.0.4.
    expected = {"host1": "10.211.0.1", "host2": "10.211.0.2", "host3": "10.211.0.3",
                "host4": "10.211.0.4"}  # fmt: skip
    hosts = HostFabricEnv(fabric=fabric, env={}, addresses=expected)
    token = issue_token(db_url, AccessRole.OPERATOR)
    with api_process(db_url, {}, tmp_path / "api.log") as url:
        env = {**os.environ, "SLUICE_API_URL": url, "SLUICE_API_TOKEN": token}
        before = current_intent(env)
        point_intent_at_namespaces(env, tmp_path, hosts, EXAMPLE_INTENT, Transcript().run)
        stored = current_intent(env)
    assert before is None
    assert stored is not None
    assert {h["name"]: h["address"] for h in stored["hosts"]} == expected
    example = yaml.safe_load(EXAMPLE_INTENT.read_text())
    assert [c["name"] for c in stored["service_classes"]] == [
        c["name"] for c in example["service_classes"]
    ]
