"""Host rollout benchmark: real ansible-playbook over real SSH to N namespaced hosts (default 8).

Four timed runs of the worker's host runner (``controller.rollout.hosts.HostRunRunner``
driving ``AnsibleRunner``, the worker's path, over an in-memory store instead of PostgreSQL),
each over the inventory rendered from one intent:

- full apply on fresh hosts, serial (batch size 1: one ansible-playbook per host) -- the
  baseline -- and batched (one batch of all hosts, Ansible forks = N), each on its own fresh
  fabric so both start from nothing;
- no-change apply (every host already converged), serial and batched.

The ratio is serial / batched wall time, measured in the same run on the same machine. Every
run must end with every host ``changed`` (full) or ``ok`` (no change), else the figures mean
nothing and the bench stops. Needs root (network namespaces, sshd); tears everything down.

Reproduce: ``uv run --frozen python -m bench.host_rollout_bench`` (``--hosts N``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from controller.hosts.compile import compile_hosts
from controller.hosts.runner import AnsibleRunner, HostResult, HostStatus, ansible_setup
from controller.intent.loader import parse_intent
from controller.rollout.hosts import HostRunRunner, HostRunState
from controller.settings import HostsSettings
from lab import netns
from lab.host_runs import FakeHostRunStore


def bench_intent(fabric: netns.Fabric) -> dict[str, object]:
    """QJUMP levels, DSCP marks and a PIAS class on every host (as tests/e2e uses)."""
    key = f"file:{fabric.client_key}"
    hosts = [
        {"name": h.name, "address": h.address, "nic_gbps": 1, "ssh": {"key_ref": key}}
        for h in fabric.hosts
    ]
    return {
        "fabric": {
            "base_rtt_us": 40,
            "port_buffer_bytes": 2_000_000,
            "qjump": {"hosts": max(8, len(hosts)), "packet_bytes": 250, "epsilon_us": 8,
                      "factors": {7: 1, 4: 2}},
            "host_transport": {"congestion_control": "reno"},
        },
        "hosts": hosts,
        "service_classes": [
            {"name": "control", "dscp": [48], "queue": 7, "scheduling": {"type": "STRICT"},
             "ecn": "off", "qjump_level": 7,
             "hosts_match": {"protocol": "udp", "dports": [5405]}},
            {"name": "rpc", "dscp": [46], "queue": 6, "scheduling": {"type": "STRICT"},
             "pias": {"workload": "websearch", "load": 0.6,
                      "demotions": [{"dscp": 34, "queue": 5}]},
             "hosts_match": {"protocol": "tcp", "dports": [8080]}},
            {"name": "storage", "dscp": [10], "queue": 3,
             "scheduling": {"type": "DWRR", "weight": 50}},
        ],
    }  # fmt: skip


def timed_rollout(
    fabric: netns.Fabric, batch_size: int, expect: HostStatus, workdir: Path
) -> tuple[float, list[HostResult]]:
    config = HostsSettings(
        command_prefix=tuple(fabric.control_exec([])),
        ssh_common_args=" ".join(fabric.ssh_options()),
        control_path_dir=fabric.workdir / "cp",
    )
    rendered = compile_hosts(parse_intent(bench_intent(fabric)), group_vars=config.group_vars())
    rundir = Path(tempfile.mkdtemp(dir=workdir))
    runner = AnsibleRunner(ansible_setup(config), rundir, rendered.yaml(), check=False)
    store = FakeHostRunStore(rendered.hosts, batch_size)

    def run_batch(_run: HostRunState, hosts: Sequence[str], batch: int) -> list[HostResult]:
        return runner.run_batch(hosts, batch)

    host_runner = HostRunRunner(store, run_batch)
    start = time.perf_counter()
    while host_runner.run_once():
        pass
    seconds = time.perf_counter() - start
    wrong = {r.host: r.status.value for r in store.results if r.status != expect}
    if wrong or store.state != "completed":
        details = {r.host: r.message for r in store.results if r.status != expect}
        raise SystemExit(f"expected every host {expect.value}, got {wrong}: {details}")
    return seconds, store.results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=8)
    args = parser.parse_args(argv)
    n = args.hosts
    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory(prefix="sluice-host-bench-") as tmp:
        workdir = Path(tmp)
        with netns.running(n) as fabric:
            full_serial, _ = timed_rollout(fabric, 1, HostStatus.CHANGED, workdir)
            same_serial, _ = timed_rollout(fabric, 1, HostStatus.OK, workdir)
            same_batched, _ = timed_rollout(fabric, n, HostStatus.OK, workdir)
        with netns.running(n) as fabric:
            full_batched, _ = timed_rollout(fabric, n, HostStatus.CHANGED, workdir)
    rows = [
        ("full apply, serial (baseline)", 1, full_serial),
        ("full apply, batched", n, full_batched),
        ("no-change apply, serial (baseline)", 1, same_serial),
        ("no-change apply, batched", n, same_batched),
    ]
    print(f"hosts: {n} namespaced hosts, real SSH, ansible-playbook with playbooks/site.yml")
    print(f"{'run':<36} {'batch':>5} {'batches':>7} {'wall':>9} {'per host':>9}")
    for label, size, seconds in rows:
        batches = -(-n // size)
        print(f"{label:<36} {size:>5} {batches:>7} {seconds:8.2f}s {seconds / n:8.2f}s")
    print(f"full apply: serial / batched = {full_serial / full_batched:.2f}x")
    print(f"no-change apply: serial / batched = {same_serial / same_batched:.2f}x")
    print(f"no-change / full apply, batched = {same_batched / full_batched:.2f}")
    flags = "" if n == 8 else f" --hosts {n}"
    print("reproduce (as root): uv run --frozen python -m bench.host_rollout_bench" + flags)


if __name__ == "__main__":
    main()
