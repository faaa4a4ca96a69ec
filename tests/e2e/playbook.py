"""Run the real ``playbooks/site.yml`` with ansible-playbook from a fabric's control node, and
read host state back inside the namespaces (not through Ansible, so the check is independent)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.netns import Fabric

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks" / "site.yml"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
RECAP_LINE = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)"
)


@dataclass(frozen=True)
class Recap:
    ok: int
    changed: int
    unreachable: int
    failed: int


@dataclass(frozen=True)
class PlaybookRun:
    returncode: int
    stdout: str
    stderr: str
    recap: dict[str, Recap]  # from the screen's PLAY RECAP
    events: list[dict[str, Any]]  # from the sluice.fabric.events callback

    def tasks(self, host: str, status: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["event"] == "task" and e["host"] == host and e["status"] == status
        ]

    def stats(self) -> dict[str, dict[str, int]]:
        return next(e["hosts"] for e in self.events if e["event"] == "stats")


def parse_recap(stdout: str) -> dict[str, Recap]:
    recap: dict[str, Recap] = {}
    in_recap = False
    for line in stdout.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        match = RECAP_LINE.match(line) if in_recap else None
        if match:
            fields = {k: int(v) for k, v in match.groupdict().items() if k != "host"}
            recap[match.group("host")] = Recap(**fields)
    return recap


def run_site(
    fabric: Fabric,
    host_vars: dict[str, dict[str, Any]],
    *,
    check: bool = False,
    tags: str | None = None,
) -> PlaybookRun:
    path = fabric.write_inventory(host_vars=host_vars)
    argv = [str(ANSIBLE_PLAYBOOK), "-i", str(path), str(SITE), "--diff"]
    if check:
        argv.append("--check")
    if tags:
        argv += ["--tags", tags]
    events = fabric.workdir / "events.jsonl"
    events.unlink(missing_ok=True)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "playbooks" / "ansible.cfg"),  # finds sluice.fabric at REPO
        ANSIBLE_NOCOLOR="1",
        SLUICE_EVENTS_FILE=str(events),
    )
    result = subprocess.run(
        fabric.control_exec(argv), capture_output=True, text=True, env=env, timeout=240, check=False
    )
    lines = events.read_text().splitlines() if events.exists() else []
    return PlaybookRun(
        result.returncode,
        result.stdout,
        result.stderr,
        parse_recap(result.stdout),
        [json.loads(line) for line in lines],
    )


def in_namespace(fabric: Fabric, host: str, argv: list[str]) -> str:
    result = subprocess.run(
        fabric.host_exec(host, argv), capture_output=True, text=True, check=True
    )
    return result.stdout


def sysctl(fabric: Fabric, host: str, name: str) -> str:
    return in_namespace(fabric, host, ["cat", "/proc/sys/" + name.replace(".", "/")]).strip()


def htb_classes(fabric: Fabric, host: str, device: str = "eth0") -> dict[str, dict[str, str]]:
    """``tc class show`` (this iproute2 prints HTB classes as text even with -j) by class id."""
    classes: dict[str, dict[str, str]] = {}
    for line in in_namespace(
        fabric, host, ["tc", "-s", "class", "show", "dev", device]
    ).splitlines():
        tokens = line.split()
        if tokens[:2] == ["class", "htb"]:
            classid, rest = tokens[2], tokens[3:]
            if rest[:1] == ["root"]:  # a class directly under the qdisc prints no parent
                rest = ["parent", "root", *rest[1:]]
            classes[classid] = dict(zip(rest[::2], rest[1::2], strict=False))
            classes[classid]["_line"] = line
        elif tokens[:1] == ["Sent"] and classes:
            classes[list(classes)[-1]]["sent_bytes"] = tokens[1]
    return classes


def root_qdisc(fabric: Fabric, host: str, device: str = "eth0") -> dict[str, Any]:
    qdiscs = json.loads(in_namespace(fabric, host, ["tc", "-j", "qdisc", "show", "dev", device]))
    return next(q for q in qdiscs if q.get("root"))


def nft_ruleset(fabric: Fabric, host: str) -> list[dict[str, Any]]:
    listing = json.loads(in_namespace(fabric, host, ["nft", "-j", "list", "ruleset"]))
    return [item for item in listing["nftables"] if "metainfo" not in item]
