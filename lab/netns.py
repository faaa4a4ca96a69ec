"""A test fabric of hosts made of network namespaces, each running its own sshd.

Layout for ``up(3)`` (tag ``ab12cd``)::

    sluice-ab12cd-ctl   br0 10.211.0.254/24 (the control node: ansible-playbook runs here)
       |-- h1 <veth> eth0 10.211.0.1/24   in sluice-ab12cd-h1, sshd on 10.211.0.1:22
       |-- h2 <veth> eth0 10.211.0.2/24   in sluice-ab12cd-h2, sshd on 10.211.0.2:22
       `-- h3 <veth> eth0 10.211.0.3/24   in sluice-ab12cd-h3, sshd on 10.211.0.3:22

Every address lives inside a namespace, so nothing here is reachable from (or leaks into) the
machine's own network; the control node reaches the hosts over the bridge. Each host has its
own ed25519 host key, and one client key made at set-up time is authorised on all of them;
``known_hosts`` pins the host keys so Ansible runs with strict host key checking.

Net sysctls, tc and nftables state are per network namespace, which is exactly what host QoS
configuration touches, so a namespace is a faithful stand-in for a host for these purposes.
The layout is planned by the pure ``plan_layout``; everything else is I/O at this edge.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

SSHD = "/usr/sbin/sshd"
SSH_PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it
DEFAULT_SUBNET = "10.211.0.0/24"
HOST_PYTHON = "/usr/bin/python3"  # platform notes: always name the interpreter
STATE_FILE = "fabric.json"


class NetnsError(RuntimeError):
    """A namespace, link or sshd step failed; the message carries the command's stderr."""


@dataclass(frozen=True, slots=True)
class NetnsHost:
    name: str  # inventory name, e.g. "h1"
    netns: str  # network namespace holding the host
    address: str  # eth0 address inside the namespace
    bridge_port: str  # the veth end enslaved to br0 in the control namespace


@dataclass(frozen=True, slots=True)
class FabricLayout:
    tag: str
    control_netns: str
    control_address: str
    prefix_len: int
    hosts: tuple[NetnsHost, ...]


def plan_layout(names: Sequence[str], tag: str, subnet: str = DEFAULT_SUBNET) -> FabricLayout:
    """Names and addresses for a fabric: host i gets the subnet's i-th address, the control
    node the last usable one. Pure, so it is checked without root."""
    network = ipaddress.ip_network(subnet)
    usable = list(network.hosts())
    if not names:
        raise NetnsError("a fabric needs at least one host")
    if len(set(names)) != len(names):
        raise NetnsError(f"host names must be unique: {list(names)}")
    if len(names) + 1 > len(usable):
        raise NetnsError(f"{subnet} has room for {len(usable) - 1} hosts, asked for {len(names)}")
    hosts = tuple(
        NetnsHost(
            name=name,
            netns=f"sluice-{tag}-{name}",
            address=str(usable[index]),
            # veth names are capped at 15 characters; the bridge end only needs to be unique
            # inside the control namespace.
            bridge_port=f"p{index + 1}",
        )
        for index, name in enumerate(names)
    )
    return FabricLayout(
        tag=tag,
        control_netns=f"sluice-{tag}-ctl",
        control_address=str(usable[-1]),
        prefix_len=network.prefixlen,
        hosts=hosts,
    )


def _run(argv: Sequence[str], *, input_text: str | None = None) -> str:
    result = subprocess.run(
        list(argv), input=input_text, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def _sshd_config(host: NetnsHost, hostdir: Path, authorized_keys: Path) -> str:
    # StrictModes off: the key files live in a temp folder whose parents we do not control.
    return "\n".join(
        [
            f"ListenAddress {host.address}",
            "Port 22",
            f"HostKey {hostdir / 'ssh_host_ed25519_key'}",
            f"AuthorizedKeysFile {authorized_keys}",
            f"PidFile {hostdir / 'sshd.pid'}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "UseDNS no",
            "StrictModes no",
            "MaxStartups 100",
            "MaxSessions 100",
            "LogLevel ERROR",
            "Subsystem sftp internal-sftp",
            "",
        ]
    )


def _pid_alive(pid: int) -> bool:
    """True while the process runs; a zombie counts as gone (PID 1 here does not reap)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "Z" not in state.split()[1:2]


def _kill_and_wait(pids: Sequence[int], timeout_s: float = 5.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(_pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _netns_pids(netns: str) -> list[int]:
    try:
        out = _run(["ip", "netns", "pids", netns])
    except NetnsError:
        return []
    return [int(token) for token in out.split()]


@dataclass
class Fabric:
    """A running fabric. ``down()`` removes every namespace, process and key it made."""

    layout: FabricLayout
    workdir: Path

    @property
    def hosts(self) -> tuple[NetnsHost, ...]:
        return self.layout.hosts

    @property
    def client_key(self) -> Path:
        return self.workdir / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.workdir / "known_hosts"

    def host(self, name: str) -> NetnsHost:
        for host in self.layout.hosts:
            if host.name == name:
                return host
        raise NetnsError(f"no host {name!r} in this fabric")

    def control_exec(self, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped to run on the control node (where the hosts are reachable)."""
        return ["ip", "netns", "exec", self.layout.control_netns, *argv]

    def host_exec(self, name: str, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped to run inside one host's namespace."""
        return ["ip", "netns", "exec", self.host(name).netns, *argv]

    def ssh_options(self) -> list[str]:
        return [
            "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=5",
        ]  # fmt: skip

    def inventory(self) -> dict[str, object]:
        """An Ansible YAML inventory (as a dict) pointing at the hosts."""
        return {
            "all": {
                "hosts": {h.name: {"ansible_host": h.address} for h in self.layout.hosts},
                "vars": {
                    "ansible_user": "root",
                    "ansible_connection": "ssh",
                    "ansible_python_interpreter": HOST_PYTHON,
                    "ansible_ssh_private_key_file": str(self.client_key),
                    "ansible_ssh_common_args": " ".join(self.ssh_options()),
                    # Fabrics reuse addresses; a per-fabric control path keeps one fabric's
                    # persistent SSH masters from serving another's hosts.
                    "ansible_control_path_dir": str(self.workdir / "cp"),
                },
            }
        }

    def ssh(self, name: str, command: str) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on a host over real SSH from the control node."""
        host = self.host(name)
        argv = self.control_exec(
            [
                "ssh",
                "-i",
                str(self.client_key),
                *self.ssh_options(),
                f"root@{host.address}",
                command,
            ]
        )
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    def start_sshd(self, name: str) -> None:
        host = self.host(name)
        config = self.workdir / host.name / "sshd_config"
        _run(self.host_exec(name, [SSHD, "-f", str(config), "-E", str(config.with_suffix(".log"))]))
        self._wait_for_ssh(name)

    def stop_sshd(self, name: str) -> None:
        """Stop a host's sshd and its sessions; the namespace stays, so it looks like a host
        whose SSH service is down."""
        _kill_and_wait(_netns_pids(self.host(name).netns))

    def _wait_for_ssh(self, name: str, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.ssh(name, "true")
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise NetnsError(f"sshd on {name} not reachable: {result.stderr.strip()}")
            time.sleep(0.1)

    def write_inventory(
        self, path: Path | None = None, host_vars: dict[str, dict[str, Any]] | None = None
    ) -> Path:
        """The inventory as YAML (``workdir/inventory.yml`` by default), with per-host vars."""
        inventory = self.inventory()
        hosts: dict[str, dict[str, Any]] = inventory["all"]["hosts"]  # type: ignore[index]
        for name, values in (host_vars or {}).items():
            self.host(name)  # refuse vars for a host the fabric does not have
            hosts[name].update(values)
        target = path or self.workdir / "inventory.yml"
        target.write_text(yaml.safe_dump(inventory, sort_keys=False))
        return target

    def down(self) -> None:
        down(self)


def _keygen(path: Path, comment: str) -> None:
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def _make_namespaces(layout: FabricLayout) -> None:
    ctl = layout.control_netns
    _run(["ip", "netns", "add", ctl])
    _run(["ip", "-n", ctl, "link", "set", "lo", "up"])
    _run(["ip", "-n", ctl, "link", "add", "br0", "type", "bridge"])
    control_cidr = f"{layout.control_address}/{layout.prefix_len}"
    _run(["ip", "-n", ctl, "addr", "add", control_cidr, "dev", "br0"])
    _run(["ip", "-n", ctl, "link", "set", "br0", "up"])
    for host in layout.hosts:
        _run(["ip", "netns", "add", host.netns])
        _run(["ip", "-n", host.netns, "link", "set", "lo", "up"])
        # Both veth ends are born inside their namespaces, so no name ever touches the
        # machine's own namespace.
        _run(["ip", "-n", host.netns, "link", "add", "eth0", "type", "veth",
              "peer", "name", host.bridge_port, "netns", ctl])  # fmt: skip
        _run(["ip", "-n", ctl, "link", "set", host.bridge_port, "master", "br0", "up"])
        host_cidr = f"{host.address}/{layout.prefix_len}"
        _run(["ip", "-n", host.netns, "addr", "add", host_cidr, "dev", "eth0"])
        _run(["ip", "-n", host.netns, "link", "set", "eth0", "up"])


def _prepare_keys(fabric: Fabric) -> None:
    _keygen(fabric.client_key, f"sluice-{fabric.layout.tag}-client")
    authorized = fabric.workdir / "authorized_keys"
    authorized.write_text(fabric.client_key.with_suffix(".pub").read_text())
    (fabric.workdir / "cp").mkdir(mode=0o700)
    known: list[str] = []
    for host in fabric.layout.hosts:
        hostdir = fabric.workdir / host.name
        hostdir.mkdir(mode=0o700)
        _keygen(hostdir / "ssh_host_ed25519_key", f"sluice-{host.name}")
        public = (hostdir / "ssh_host_ed25519_key.pub").read_text().split()
        known.append(f"{host.address} {public[0]} {public[1]}")
        (hostdir / "sshd_config").write_text(_sshd_config(host, hostdir, authorized))
    fabric.known_hosts.write_text("\n".join(known) + "\n")


def up(
    n: int,
    *,
    names: Sequence[str] | None = None,
    subnet: str = DEFAULT_SUBNET,
    tag: str | None = None,
    workdir: Path | None = None,
) -> Fabric:
    """Bring up ``n`` namespaced hosts (named ``h1..hn`` unless ``names`` is given), each with
    sshd reachable from the control node. Needs root. On any failure everything made so far
    is torn down before the error is raised."""
    host_names = list(names) if names is not None else [f"h{i}" for i in range(1, n + 1)]
    if len(host_names) != n:
        raise NetnsError(f"asked for {n} hosts but named {len(host_names)}")
    layout = plan_layout(host_names, tag or secrets.token_hex(3), subnet)
    root = workdir or Path(tempfile.mkdtemp(prefix=f"sluice-fabric-{layout.tag}-"))
    root.mkdir(mode=0o700, exist_ok=True)
    fabric = Fabric(layout=layout, workdir=root)
    (root / STATE_FILE).write_text(json.dumps(asdict(layout), indent=2))
    try:
        SSH_PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        _prepare_keys(fabric)
        _make_namespaces(layout)
        for host in layout.hosts:
            fabric.start_sshd(host.name)
    except BaseException:
        down(fabric)
        raise
    return fabric


@contextlib.contextmanager
def running(n: int, *, names: Sequence[str] | None = None) -> Iterator[Fabric]:
    """``up(n, names=names)`` for the length of a ``with`` block, torn down however it ends."""
    fabric = up(n, names=names)
    try:
        yield fabric
    finally:
        fabric.down()


def load(workdir: Path) -> Fabric:
    """The fabric recorded in ``workdir`` (so another process can tear it down)."""
    raw = json.loads((workdir / STATE_FILE).read_text())
    hosts = tuple(NetnsHost(**h) for h in raw.pop("hosts"))
    return Fabric(layout=FabricLayout(hosts=hosts, **raw), workdir=workdir)


def down(fabric: Fabric) -> None:
    """Stop every process inside the fabric's namespaces (sshd, sessions, SSH masters), delete
    the namespaces (which deletes the veths and the bridge) and remove the keys. Idempotent."""
    layout = fabric.layout
    namespaces = [h.netns for h in layout.hosts] + [layout.control_netns]
    existing = set(_run(["ip", "netns", "list"]).split())
    for netns in namespaces:
        if netns in existing:
            _kill_and_wait(_netns_pids(netns))
            _run(["ip", "netns", "del", netns])
    shutil.rmtree(fabric.workdir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m lab.netns up 3 [--names a,b,c]`` prints the fabric as JSON
    (its workdir and inventory path); ``... down WORKDIR`` tears it down. For the demo and
    the bench, which bring hosts up in one process and down in another."""
    parser = argparse.ArgumentParser(prog="python -m lab.netns")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="bring up N namespaced hosts with sshd")
    p_up.add_argument("n", type=int)
    p_up.add_argument("--names", help="comma-separated host names (default h1..hN)")
    p_up.add_argument("--subnet", default=DEFAULT_SUBNET)
    p_up.add_argument("--workdir", type=Path)
    p_down = sub.add_parser("down", help="tear down the fabric recorded in WORKDIR")
    p_down.add_argument("workdir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "down":
        load(args.workdir).down()
        return
    names = args.names.split(",") if args.names else None
    fabric = up(args.n, names=names, subnet=args.subnet, workdir=args.workdir)
    report = {
        "workdir": str(fabric.workdir),
        "inventory": str(fabric.write_inventory()),
        "control_netns": fabric.layout.control_netns,
        "hosts": [asdict(h) for h in fabric.hosts],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
