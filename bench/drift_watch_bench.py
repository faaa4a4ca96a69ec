"""Drift detection through ON_CHANGE at fleet scale, beside the periodic pass it replaces.

Switches: ``--switches`` targets spread over fleet-mode vsonic processes of ``--per-host``
switches each (``bench/vsonic_host.py``, ``converged``: CONFIG_DB already holds the compiled
desired state of ``bench.compile_bench.synthetic_intent``), so the streams' initial values are
what a switch sluice configured holds. Several processes, not one: a fleet server is measured
reliable up to about 1,000 concurrent streams (bench/vsonic_streams_bench.py). Every host
serves gNMI over TLS with one certificate made for the run (bench/switch_tls.py), which the
pass, the watcher and the drift injector trust.

Measured in one run, on this machine:

- baseline: one ``ReconcileLoop.run_pass`` over every target (alert mode, one channel per
  host, the worker's default parallelism), the pass whose period bounds how long a drift
  goes unseen without a watcher; run after the watcher, it must find exactly the switches
  the drifts were injected on. Passes run back to back find a drift in about one pass time
  on average (it lands mid-pass and waits for its switch's next turn) and two at worst; with
  the intent's default 60 s interval, about 30 s plus half a pass.
- the watcher (``controller.reconcile.watch.DriftWatcher``, one ON_CHANGE stream per target
  on the tables sluice owns, in this process): time until every stream has synced, this
  process's RSS and the hosts' RSS with every stream open; then ``--idle-s`` seconds idle,
  counting re-subscriptions (a stream torn down, e.g. by a GOAWAY for keepalive pings) and
  reports (none is expected);
- ``--drifts`` times: one switch picked at random gets a new ``SCHEDULER`` entry by a gNMI Set
  from another client (behind sluice's back); the time from sending that Set until the
  watcher reports the switch (``on_drift``), and any report for another switch (none is
  expected).

Reproduce: ``uv run python -m bench.drift_watch_bench --switches 1000 --ports 32``
(``--per-host``, ``--drifts``, ``--parallel``, ``--idle-s``, ``--skip-pass``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compile_bench import synthetic_intent
from bench.southbound_bench import PassRecord, run_problems, utc_now
from bench.southbound_support import SwitchHost, password_resolver, switch_host
from bench.switch_tls import bench_tls, client_tls
from bench.vsonic_host import USERNAME
from controller.intent.models import GnmiEndpoint, Switch
from controller.reconcile.access import GnmiAccess
from controller.reconcile.loop import ReconcileLoop, Target
from controller.reconcile.watch import DriftWatcher, WatchState
from controller.sonic.compile import compile_fleet
from controller.sonic.model import SwitchConfig
from controller.southbound.gnmi import (
    GnmiTarget,
    SessionPool,
    TlsOptions,
    open_channel,
    target_for_switch,
)
from vsonic.gnmi_server import TlsFiles

REPRODUCE = "uv run python -m bench.drift_watch_bench"
DRIFT_TABLE = "SCHEDULER"


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass(frozen=True)
class Fleet:
    """Every target: the intent's switches once per host, named ``<switch>-h<host>`` and
    selected on their host by the original name (the gNMI prefix target); ``tls``: what a
    session to any host trusts."""

    switches: list[Switch]
    desired: dict[str, SwitchConfig]  # by the original (per-host) name
    original: dict[str, str]  # target name -> the name on its host
    host_pids: list[int]
    tls: TlsOptions


def _fleet(
    hosts: list[tuple[SwitchHost, int]], per_host: int, ports: int, tls: TlsOptions
) -> Fleet:
    intent = synthetic_intent(per_host, ports)
    desired = compile_fleet(intent)
    switches: list[Switch] = []
    original: dict[str, str] = {}
    for index, (_host, port) in enumerate(hosts):
        for switch in intent.switches:
            name = f"{switch.name}-h{index}"
            endpoint = GnmiEndpoint(address="127.0.0.1", port=port, target=switch.name)
            switches.append(switch.model_copy(update={"name": name, "gnmi": endpoint}))
            original[name] = switch.name
    return Fleet(switches, desired, original, [host.pid for host, _ in hosts], tls)


@contextmanager
def _hosts(
    count: int, per_host: int, ports: int, password: str, tls: TlsFiles
) -> Iterator[list[tuple[SwitchHost, int]]]:
    spec = {"layout": "fleet", "switches": per_host, "ports": ports, "converged": True}
    with ExitStack() as stack:
        started = [stack.enter_context(switch_host(spec, password, tls)) for _ in range(count)]
        yield [(host, port_of["fleet"]) for host, port_of in started]


# --------------------------------------------------------------------------------------------
# baseline: one reconcile pass


def measure_pass(fleet: Fleet, password: str, parallel: int, drifted: set[str]) -> dict[str, Any]:
    """One pass, after the watcher's run: it must find exactly the switches that drifted."""
    with SessionPool() as pool:
        access = GnmiAccess(pool, password_resolver(password), username=USERNAME, tls=fleet.tls)
        record = PassRecord(
            [Target(s, 1, fleet.desired[fleet.original[s.name]]) for s in fleet.switches]
        )
        loop = ReconcileLoop(record, access, utc_now, random.random, max_parallel=parallel)
        start = time.perf_counter()
        loop.run_pass()
        wall_s = time.perf_counter() - start
    desired = {s.name: fleet.desired[fleet.original[s.name]] for s in fleet.switches}
    problems = run_problems(record.runs, desired)
    if set(problems) != drifted:
        raise SystemExit(
            f"the pass found {len(problems)} targets not converged, "
            f"{len(set(problems) ^ drifted)} of them (or missing) not the {len(drifted)} drifted"
        )
    return {"pass_s": wall_s, "rss_mb": _rss_mb(os.getpid())}


# --------------------------------------------------------------------------------------------
# the watcher


@dataclass
class Reports:
    at: dict[str, list[float]] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, switch: str, table: str | None) -> None:
        self.at.setdefault(switch, []).append(time.perf_counter())
        self.arrived.set()


async def _set_drift(stub: Any, prefix_target: str, index: int, password: str) -> None:
    from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

    elems = ("CONFIG_DB", "localhost", DRIFT_TABLE, f"SLUICE_SCHED_DRIFT{index}")
    update = gnmi_pb2.Update(
        path=gnmi_pb2.Path(origin="sonic-db", elem=[gnmi_pb2.PathElem(name=e) for e in elems]),
        val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps({"type": "DWRR", "weight": "9"}).encode()),
    )
    request = gnmi_pb2.SetRequest(prefix=gnmi_pb2.Path(target=prefix_target), update=[update])
    metadata = (("username", USERNAME), ("password", password))
    await stub.Set(request, metadata=metadata, timeout=60)


async def _wait_watching(watcher: DriftWatcher, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(s is WatchState.WATCHING for s in watcher.states().values()) < count:
        if time.monotonic() > deadline:
            states = list(watcher.states().values())
            shown = {s.value: states.count(s) for s in set(states)}
            raise SystemExit(f"not every stream synced in {timeout_s:.0f} s: {shown}")
        await asyncio.sleep(0.1)


async def measure_watch(
    fleet: Fleet, password: str, drifts: int, seed: int, idle_s: float
) -> dict[str, Any]:
    resolve = password_resolver(password)
    targets: dict[str, GnmiTarget] = {
        s.name: target_for_switch(s, resolve, username=USERNAME, tls=fleet.tls)
        for s in fleet.switches
    }
    reports = Reports()
    rss_before = _rss_mb(os.getpid())
    hosts_before = sum(_rss_mb(pid) for pid in fleet.host_pids)
    watcher = DriftWatcher(reports, rand=random.Random(seed).random)
    result: dict[str, Any] = {}
    start = time.perf_counter()
    watcher.sync(targets)
    try:
        await _wait_watching(watcher, len(targets), timeout_s=1800)
        result["synced_s"] = time.perf_counter() - start
        await asyncio.sleep(2.0)  # initial values drained
        result["rss_mb"] = _rss_mb(os.getpid())
        result["rss_before_mb"] = rss_before
        result["hosts_mb"] = sum(_rss_mb(pid) for pid in fleet.host_pids)
        result["hosts_before_mb"] = hosts_before
        # Idle streams must stay up (no GOAWAY for keepalive pings, no re-subscription).
        await asyncio.sleep(idle_s)
        result["resubscribed"] = watcher.resubscriptions()
        result["idle_reports"] = sum(len(v) for v in reports.at.values())
        reports.at.clear()
        result.update(await _inject(fleet, targets, reports, password, drifts, seed))
    finally:
        await watcher.close()
    return result


async def _inject(
    fleet: Fleet,
    targets: dict[str, GnmiTarget],
    reports: Reports,
    password: str,
    drifts: int,
    seed: int,
) -> dict[str, Any]:
    from pygnmi.spec.v080 import gnmi_pb2_grpc

    picker = random.Random(seed)
    channels: dict[int, Any] = {}
    latencies: list[float] = []
    drifted: set[str] = set()
    others = 0
    try:
        for index in range(drifts):
            name = picker.choice(sorted(targets))
            drifted.add(name)
            target = targets[name]
            channel = channels.get(target.port)
            if channel is None:
                # Another client, over the same TLS as sluice's sessions.
                channel = channels[target.port] = open_channel(target, aio=True)
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            reports.at.clear()
            reports.arrived.clear()
            sent = time.perf_counter()
            await _set_drift(stub, fleet.original[name], index, password)
            while name not in reports.at:
                await asyncio.wait_for(reports.arrived.wait(), timeout=60)
                reports.arrived.clear()
            latencies.append(reports.at[name][0] - sent)
            await asyncio.sleep(0.3)  # late reports of this round are counted below
            others += sum(len(v) for k, v in reports.at.items() if k != name)
    finally:
        for channel in channels.values():
            await channel.close()
    return {"latencies_s": latencies, "other_reports": others, "drifted": drifted}


# --------------------------------------------------------------------------------------------


def render(
    args: argparse.Namespace, hosts: int, base: dict[str, Any] | None, w: dict[str, Any]
) -> str:
    lat = w["latencies_s"]
    median, worst = statistics.median(lat), max(lat)
    lines = [
        f"reproduce: {REPRODUCE} --switches {args.switches} --per-host {args.per_host} "
        f"--ports {args.ports} --drifts {args.drifts} --parallel {args.parallel} "
        f"--idle-s {args.idle_s:g}" + (" --skip-pass" if base is None else ""),
        f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"targets: {args.switches} ({hosts} fleet vsonic process(es) x {args.per_host}), "
        f"{args.ports} ports each, CONFIG_DB converged",
    ]
    if base is not None:
        lines += [
            f"baseline: one reconcile pass over {args.switches} targets: {base['pass_s']:.2f} s "
            f"({args.parallel} parallel); passes back to back detect a drift in ~"
            f"{base['pass_s']:.1f} s on average, {2 * base['pass_s']:.1f} s at worst; at the "
            f"default 60 s interval ~{30 + base['pass_s'] / 2:.1f} s on average",
        ]
    lines += [
        f"watcher: {args.switches} ON_CHANGE streams synced in {w['synced_s']:.1f} s; "
        f"controller RSS {w['rss_before_mb']:.0f} -> {w['rss_mb']:.0f} MB "
        f"({(w['rss_mb'] - w['rss_before_mb']) / args.switches * 1024:.1f} KB per target); "
        f"vsonic hosts RSS {w['hosts_before_mb']:.0f} -> {w['hosts_mb']:.0f} MB",
        f"idle {args.idle_s:g} s with every stream open: {w['resubscribed']} re-subscriptions, "
        f"{w['idle_reports']} reports",
        f"drift on one of {args.switches} targets, Set sent -> reported ({len(lat)} drifts): "
        f"median {median * 1e3:.0f} ms, max {worst * 1e3:.0f} ms; reports for other targets "
        f"{w['other_reports']}",
    ]
    if base is not None:
        lines.append(
            f"ratio back-to-back passes / ON_CHANGE (median detection): "
            f"{base['pass_s'] / median:.0f}x"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REPRODUCE)
    parser.add_argument("--switches", type=int, default=1000)
    parser.add_argument("--per-host", type=int, default=1000)
    parser.add_argument("--ports", type=int, default=32)
    parser.add_argument("--drifts", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--idle-s", type=float, default=0.0, help="idle wait before drifts")
    parser.add_argument("--skip-pass", action="store_true")
    args = parser.parse_args(argv)
    if args.switches % args.per_host:
        parser.error("--switches must be a multiple of --per-host")
    hosts = args.switches // args.per_host
    password = f"drift-{random.SystemRandom().getrandbits(64):x}"
    with bench_tls() as tls, _hosts(hosts, args.per_host, args.ports, password, tls) as started:
        fleet = _fleet(started, args.per_host, args.ports, client_tls(tls))
        # The watcher first: its memory figure must not include what the pass left behind.
        watched = asyncio.run(measure_watch(fleet, password, args.drifts, args.seed, args.idle_s))
        base = (
            None
            if args.skip_pass
            else measure_pass(fleet, password, args.parallel, watched["drifted"])
        )
    print(render(args, hosts, base, watched))
    return 0


if __name__ == "__main__":
    sys.exit(main())
