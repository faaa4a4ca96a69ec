"""The demo's hosts step: the example intent's hosts as network namespaces, configured through
the controller with Ansible (issue 5, docs/hosts.md).

Two parts, because the API process must learn where the hosts are before it starts:

1. ``host_fabric(run_dir, names, keep=...)`` brings up one namespaced host per intent host
   (``lab.netns``: veths into a bridge in a control namespace, an sshd per host)
   and yields a ``HostFabricEnv``: the ``SLUICE_HOSTS_*`` variables that make the API run
   ``ansible-playbook`` inside the control namespace with the fabric's SSH key and pinned host
   keys, and each host's namespace address. The fabric is torn down at the end unless ``keep``.
   A machine that cannot make namespaces gets ``HostFabricUnavailable`` with the reason.
2. ``hosts_step(env, run_dir, hosts, run=..., say=...)``, with the API serving, points the
   current intent's hosts at their namespaces (``sluice apply``), then runs ``sluice hosts
   plan`` (check mode), ``sluice hosts apply`` (two hosts per batch, progress per host),
   reads the result back inside one namespace (tc, nftables, sysctl) and applies again to
   show that nothing is left to change.

``python -m lab.demo_hosts`` runs it after the rest of the demo's set-up (database,
migration, token, API), for trying this step alone.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from lab import netns
from lab.demo_common import DemoError, Run, Say, controller_worker, run, say

BIN = Path(sys.executable).parent
EXAMPLE_INTENT = Path(__file__).resolve().parent.parent / "docs" / "example-intent.yaml"
FABRIC_RECORD = "hosts-fabric.json"  # where a kept fabric's workdir is noted for the next run
APPLY_BATCH_SIZE = 2  # four hosts in two batches: the staged rollout shows in the progress
# What netns.up needs besides root (docs/hosts.md, "The namespaced test fabric").
REQUIRED_TOOLS = ("ip", "tc", "nft", "ssh", "ssh-keygen")
SLUICE_TABLES = ("sluice_dscp", "sluice_pias")


class HostDemoError(DemoError):
    """A step of the hosts demo failed; the message says which and why."""


class HostFabricUnavailable(HostDemoError):
    """This machine cannot make namespaced hosts (not root, a tool missing, namespaces refused);
    the demo may skip the hosts step and print this reason."""


@dataclass(frozen=True)
class HostFabricEnv:
    """A running fabric, what the API process needs to reach it, and where each host is."""

    fabric: netns.Fabric
    env: dict[str, str]  # SLUICE_HOSTS_* for the API process
    addresses: dict[str, str]  # intent host name -> its address inside its namespace


# --- pure -------------------------------------------------------------------------------------


def missing_prerequisites(
    euid: int, which: Callable[[str], str | None], exists: Callable[[Path], bool]
) -> list[str]:
    """What keeps this machine from making namespaced hosts; empty when nothing does."""
    missing = [] if euid == 0 else ["root (network namespaces and sshd need it)"]
    missing += [f"the {tool} command" for tool in REQUIRED_TOOLS if which(tool) is None]
    if not exists(Path(netns.SSHD)):
        missing.append(f"{netns.SSHD} (openssh-server)")
    return missing


def intent_host_names(document: Mapping[str, Any]) -> list[str]:
    """The intent's host names, in intent order."""
    return [str(host["name"]) for host in document.get("hosts") or []]


def demo_intent_for_hosts(document: Mapping[str, Any], addresses: Mapping[str, str]) -> Any:
    """``document`` (an intent as parsed YAML/JSON) with each host's address replaced by its
    namespace address; everything else unchanged. Every intent host needs an address and
    every address an intent host, else the fabric and the intent disagree."""
    names = intent_host_names(document)
    without = [name for name in names if name not in addresses]
    unknown = sorted(set(addresses) - set(names))
    if without or unknown:
        raise HostDemoError(
            f"the fabric does not match the intent's hosts: no address for {without}, "
            f"addresses for hosts the intent lacks {unknown}"
        )
    adjusted = copy.deepcopy(dict(document))
    for host in adjusted["hosts"]:
        host["address"] = addresses[host["name"]]
    return adjusted


def hosts_env(fabric: netns.Fabric, runs_dir: Path) -> dict[str, str]:
    """``SLUICE_HOSTS_*`` (controller/hosts/config.py) for an API process whose host runs must
    reach ``fabric``: ansible-playbook inside the control namespace, the fabric's pinned host
    keys and its client key. The key is the control node's side of the login, so it goes in
    the inventory's shared variables, not in the intent."""
    return {
        "SLUICE_HOSTS_COMMAND_PREFIX": json.dumps(fabric.control_exec([])),
        "SLUICE_HOSTS_SSH_COMMON_ARGS": " ".join(fabric.ssh_options()),
        "SLUICE_HOSTS_CONTROL_PATH_DIR": str(fabric.workdir / "cp"),
        "SLUICE_HOSTS_INVENTORY_VARS": json.dumps(
            {"ansible_ssh_private_key_file": str(fabric.client_key)}
        ),
        "SLUICE_HOSTS_WORKDIR": str(runs_dir),
    }


def apply_left_changes(run: Mapping[str, Any]) -> list[str]:
    """Why a host apply run did not show "nothing to change": empty when it completed and
    every host of it reported ``ok``."""
    problems = [] if run.get("state") == "completed" else [f"run state {run.get('state')}"]
    results = {str(r["host"]): str(r["status"]) for r in run.get("results", [])}
    for host in run.get("hosts", []):
        status = results.get(host, "no result")
        if status != "ok":
            problems.append(f"{host} {status}")
    return problems


# --- the fabric -------------------------------------------------------------------------------


def _down_leftover(run_dir: Path) -> None:
    """A fabric an earlier ``--keep-running`` demo left up is torn down before a new one."""
    record = run_dir / FABRIC_RECORD
    if not record.exists():
        return
    workdir = Path(json.loads(record.read_text())["workdir"])
    if (workdir / netns.STATE_FILE).exists():
        netns.load(workdir).down()
    record.unlink()


@contextmanager
def host_fabric(
    run_dir: Path, names: Sequence[str], *, keep: bool = False
) -> Iterator[HostFabricEnv]:
    """Namespaced hosts named ``names`` with sshd, and the API's ``SLUICE_HOSTS_*`` for them.
    Raises ``HostFabricUnavailable`` (nothing left behind) when they cannot be made."""
    missing = missing_prerequisites(os.geteuid(), shutil.which, Path.exists)
    if missing:
        raise HostFabricUnavailable(
            f"cannot make namespaced hosts here: needs {', '.join(missing)}"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    _down_leftover(run_dir)
    try:
        # The keys and SSH control sockets live in a short temp path: a socket path longer
        # than 107 bytes is refused, and a checkout's path can be long.
        fabric = netns.up(len(names), names=names)
    except netns.NetnsError as error:
        raise HostFabricUnavailable(f"cannot make namespaced hosts here: {error}") from error
    record = run_dir / FABRIC_RECORD
    addresses = {host.name: host.address for host in fabric.hosts}
    try:
        record.write_text(json.dumps({"workdir": str(fabric.workdir)}))
        yield HostFabricEnv(fabric, hosts_env(fabric, run_dir / "host-runs"), addresses)
    finally:
        if keep:
            print(
                f"hosts left up; tear down with: python -m lab.netns down {fabric.workdir}",
                flush=True,
            )
        else:
            fabric.down()
            record.unlink(missing_ok=True)


# --- the step ---------------------------------------------------------------------------------


def _api_get(env: Mapping[str, str], path: str, **params: Any) -> httpx.Response:
    """GET ``/api/v1{path}`` with the demo's token; a transport failure or a status other
    than 2xx or 404 is a ``HostDemoError`` (the demo reports it, no traceback)."""
    headers = {"Authorization": f"Bearer {env['SLUICE_API_TOKEN']}"}
    url = f"{env['SLUICE_API_URL']}/api/v1{path}"
    try:
        response = httpx.get(url, headers=headers, params=params, timeout=30)
    except httpx.HTTPError as error:
        raise HostDemoError(f"GET {path}: {error}") from error
    if response.status_code != 404 and not response.is_success:
        raise HostDemoError(f"GET {path}: {response.status_code} {response.text[:200]}")
    return response


def current_intent(env: Mapping[str, str]) -> Any | None:
    """The intent the API holds now, or None when none was applied yet."""
    response = _api_get(env, "/intent")
    return None if response.status_code == 404 else response.json()["intent"]


def newest_host_run(env: Mapping[str, str]) -> Any:
    items = _api_get(env, "/hosts/runs", limit=1).json()["items"]
    if not items:
        raise HostDemoError("the API lists no host runs")
    return _api_get(env, f"/hosts/runs/{items[0]['id']}").json()


def point_intent_at_namespaces(
    env: dict[str, str], run_dir: Path, hosts: HostFabricEnv, intent_file: Path, run: Run
) -> None:
    """Apply the current intent (or ``intent_file`` when there is none yet) with its hosts at
    their namespace addresses; switches, classes and any earlier demo change are kept."""
    document = current_intent(env)
    if document is None:
        document = yaml.safe_load(intent_file.read_text(encoding="utf-8"))
    target = run_dir / "intent-hosts.yaml"
    adjusted = demo_intent_for_hosts(document, hosts.addresses)
    target.write_text(yaml.safe_dump(adjusted, sort_keys=False))
    run([str(BIN / "sluice"), "apply", "-f", str(target), "--summary", "--reason",
         "demo: the hosts at their namespace addresses"], env)  # fmt: skip


def read_back(env: dict[str, str], hosts: HostFabricEnv, name: str, run: Run) -> None:
    """What the apply left inside one host's namespace, read there, not through Ansible."""
    fabric = hosts.fabric
    run(fabric.host_exec(name, ["tc", "class", "show", "dev", "eth0"]), env)
    for table in SLUICE_TABLES:
        run(fabric.host_exec(name, ["nft", "list", "table", "inet", table]), env)
    run(fabric.host_exec(name, ["sysctl", "net.ipv4.tcp_ecn"]), env)


def hosts_step(
    env: Mapping[str, str],
    run_dir: Path,
    hosts: HostFabricEnv,
    *,
    intent_file: Path = EXAMPLE_INTENT,
    run: Run = run,
    say: Say = say,
    keep: bool = False,
) -> None:
    """The whole hosts demo (see the module docstring); raises ``HostDemoError``. ``env``
    holds ``DATABASE_URL``, ``SLUICE_API_URL`` and an operator's ``SLUICE_API_TOKEN``; the
    step starts the worker (which runs what the API records) with ``hosts.env``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    say("starting the controller worker, told where the hosts are (it runs the host plans "
        "and applies the API records)")  # fmt: skip
    with controller_worker({**env, **hosts.env}, run_dir / "hosts-worker.log", keep):
        _hosts_step(env, run_dir, hosts, intent_file=intent_file, run=run, say=say)


def _hosts_step(
    env: Mapping[str, str],
    run_dir: Path,
    hosts: HostFabricEnv,
    *,
    intent_file: Path,
    run: Run,
    say: Say,
) -> None:
    full = dict(env)
    sluice = str(BIN / "sluice")
    first = next(iter(hosts.addresses))
    listing = ", ".join(f"{name} {address}" for name, address in hosts.addresses.items())
    say(f"the intent's hosts are network namespaces with sshd: {listing}")
    point_intent_at_namespaces(full, run_dir, hosts, intent_file, run)
    say("hosts plan: Ansible in check mode shows what each host would change, changing nothing")
    run([sluice, "hosts", "plan"], full)
    say(f"hosts apply: {APPLY_BATCH_SIZE} hosts per batch, a line per host as its batch ends")
    run([sluice, "hosts", "apply", "--batch-size", str(APPLY_BATCH_SIZE), "--poll", "0.5"], full)
    say(f"read back inside {first}'s namespace: QJUMP HTB classes, DSCP/PIAS tables, ECN")
    read_back(full, hosts, first, run)
    say("hosts apply again: every host already is what the intent says")
    run([sluice, "hosts", "apply", "--poll", "0.5"], full)
    left = apply_left_changes(newest_host_run(full))
    if left:
        raise HostDemoError(f"the second host apply was not a no-change run: {', '.join(left)}")
    say("the second apply changed nothing on any host")
