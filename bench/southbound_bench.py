"""Southbound benchmark: a push to 100 virtual switches and a no-drift reconcile pass over
1,000 fleet-mode targets, each next to a single-connection sequential baseline measured in
the same run.

Push: ``synthetic_intent(switches, ports)`` (bench/compile_bench.py) is compiled per switch
and planned against a freshly booted switch (every entry an add). The switches are vsonic
servers, one per switch on its own loopback port, all in one helper process
(bench/vsonic_host.py, MemoryStore, no Redis). Baseline: one switch after another through a
pool with one in-flight slot, ``apply_plan_to_switch`` (the same batches, one SetRequest
each, and the same read-back Get). sluice: ``apply_fleet`` with its parallelism and the
pool's in-flight limit. The switches are reset to their boot state between the two.

Reconcile: ``targets`` switches behind one fleet-mode vsonic server (one gNMI endpoint, one
HTTP/2 channel), each already holding its desired state. A pass Gets every table sluice owns
per target (one Get, all tables), plans against the desired state (``plan_switch``) and
requires every plan to be empty. Baseline: one target after another; sluice: ``parallel``
targets at a time under the in-flight limit.

RPC counts are what the switches received (the helper process counts them); CPU seconds are
given for the bench process and the switches' process, since the machine is shared.
``--switch-latency-ms`` adds a modelled pause to every switch answer (time a real switch
spends on its own CPU); by default there is none and the switches share one core.

Reproduce: ``uv run python -m bench.southbound_bench`` (``--switches``, ``--targets``,
``--ports``, ``--max-in-flight``, ``--parallel``, ``--batch-size``, ``--switch-latency-ms``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import SecretStr

from bench.compile_bench import synthetic_intent
from bench.vsonic_host import PASSWORD_ENV, USERNAME
from controller.policy.models import GnmiEndpoint, Intent
from controller.reconcile.apply import ApplyResult, apply_fleet, apply_plan_to_switch
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import plan_switch
from controller.sonic.model import Plan, SwitchConfig
from controller.sonic.tables import SCHEMAS
from controller.southbound.credentials import resolve_secret
from controller.southbound.gnmi import GnmiTarget, SessionPool, SwitchSession, target_for_switch

REPO = Path(__file__).resolve().parents[1]
OWNED_TABLES = tuple(sorted(SCHEMAS))  # every table sluice writes: a pass reads them all
HOST_START_TIMEOUT_S = 600.0
DEFAULTS = {
    "switches": 100,
    "targets": 1000,
    "ports": 32,
    "max_in_flight": 64,
    "parallel": 8,
    "batch_size": 100,
}
# Modelled switch-side time per Get/Set (bench/vsonic_host.py); 0: the switches answer as
# fast as vsonic can on this machine's shared core.
DEFAULT_LATENCY_MS = 0.0


# --------------------------------------------------------------------------------------------
# the switches' process


@dataclass(frozen=True)
class HostStats:
    gets: int
    sets: int
    cpu_s: float


class SwitchHost:
    """The bench/vsonic_host.py process: one JSON line per command and per answer."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        if self._process.stdin is None or self._process.stdout is None:
            raise RuntimeError("switch host started without pipes")
        return self._process.stdin, self._process.stdout

    def request(self, line: str) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write(line + "\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            code = self._process.wait(timeout=10)
            raise RuntimeError(f"switch host exited (code {code}); its stderr says why")
        reply: dict[str, Any] = json.loads(answer)
        if "error" in reply:
            raise RuntimeError(f"switch host: {reply['error']}")
        return reply

    def stats(self) -> HostStats:
        reply = self.request("stats")
        return HostStats(reply["rpcs"]["Get"], reply["rpcs"]["Set"], float(reply["cpu_s"]))

    def reset(self) -> None:
        self.request("reset")

    def stop(self) -> None:
        stdin, _ = self._pipes()
        try:
            stdin.write("stop\n")
            stdin.close()
        except BrokenPipeError:
            pass  # already gone
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)


@contextmanager
def switch_host(spec: Mapping[str, object], password: str) -> Iterator[tuple[SwitchHost, Any]]:
    """Start the switches' process, yield it and its ``{name: port}``, stop it after."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.vsonic_host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, PASSWORD_ENV: password},  # never on the command line
    )
    host = SwitchHost(process)
    try:
        ports = host.request(json.dumps(dict(spec)))["ports"]
        yield host, ports
    finally:
        host.stop()


# --------------------------------------------------------------------------------------------
# measuring


@dataclass(frozen=True)
class Figures:
    label: str
    wall_s: float
    bench_cpu_s: float
    switches_cpu_s: float
    sets: int
    gets: int
    sent: dict[str, int]
    ops: int = 0
    targets: int = 0

    def _rate(self, count: int) -> float:
        return count / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def rpcs_per_s(self) -> float:
        return self._rate(self.sets + self.gets)

    def row(self) -> str:
        return (
            f"  {self.label:<44} {self.wall_s:8.3f}s {self.sets:6d} {self.gets:6d}"
            f" {self.rpcs_per_s:9.1f} {self._rate(self.ops):10.1f} {self._rate(self.targets):9.1f}"
            f" {self.bench_cpu_s:8.3f}s {self.switches_cpu_s:8.3f}s"
        )


HEADER = (
    f"  {'mode':<44} {'wall':>9} {'Set':>6} {'Get':>6} {'RPCs/s':>9} {'ops/s':>10}"
    f" {'targets/s':>9} {'cpu bench':>9} {'cpu vsonic':>9}"
)


def rpcs_sent(sessions: Mapping[str, SwitchSession]) -> dict[str, int]:
    total: dict[str, int] = {}
    for session in sessions.values():
        for method, count in session.rpc_counts.items():
            total[method] = total.get(method, 0) + count
    return total


def measure(
    host: SwitchHost,
    label: str,
    sessions: Mapping[str, SwitchSession],
    work: Callable[[], None],
) -> Figures:
    """Run ``work`` once; wall and CPU time, and the RPCs the switches received."""
    before = host.stats()
    cpu = time.process_time()
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    bench_cpu = time.process_time() - cpu
    after = host.stats()
    return Figures(
        label,
        wall,
        bench_cpu,
        after.cpu_s - before.cpu_s,
        after.sets - before.sets,
        after.gets - before.gets,
        rpcs_sent(sessions),
    )


def check_counts(figures: Figures) -> None:
    """Say so when the bench sent more attempts than the switches received (retries)."""
    sent = (figures.sent.get("Set", 0), figures.sent.get("Get", 0))
    if sent != (figures.sets, figures.gets):
        print(
            f"  note: {figures.label}: sent {sent[0]} Set / {sent[1]} Get attempts,"
            f" switches received {figures.sets} / {figures.gets} (retries)"
        )


# --------------------------------------------------------------------------------------------
# targets


def loopback_targets(
    intent: Intent, ports: Mapping[str, int], password: str, *, fleet: bool
) -> list[GnmiTarget]:
    """The intent's switches re-pointed at the loopback servers, credentials resolved the
    controller's way (``credential_ref`` env:SLUICE_GNMI_PASSWORD). Fleet: one endpoint,
    the switch picked by the gNMI prefix target."""
    environ = {"SLUICE_GNMI_PASSWORD": password}

    def resolve(ref: str) -> SecretStr:
        return resolve_secret(ref, environ=environ)

    targets = []
    for switch in intent.switches:
        port = ports["fleet"] if fleet else ports[switch.name]
        here = switch.model_copy(update={"gnmi": GnmiEndpoint(address="127.0.0.1", port=port)})
        prefix = switch.name if fleet else None
        targets.append(target_for_switch(here, resolve, username=USERNAME, prefix_target=prefix))
    return targets


def warm_up(targets: list[GnmiTarget]) -> None:
    """One Get on a throwaway pool: import and first-call costs stay out of both timings."""
    with SessionPool() as pool:
        pool.session(targets[0]).get_tables(OWNED_TABLES)


# --------------------------------------------------------------------------------------------
# push


def push_sequential(
    sessions: Mapping[str, SwitchSession], plans: Mapping[str, Plan], batch_size: int
) -> dict[str, ApplyResult]:
    return {
        name: apply_plan_to_switch(sessions[name], plan, batch_size=batch_size)
        for name, plan in plans.items()
    }


def require_verified(label: str, results: Mapping[str, ApplyResult]) -> None:
    bad = [r for r in results.values() if r.status != "applied_verified"]
    if bad:
        shown = "; ".join(f"{r.switch}: {r.status} {r.reason}" for r in bad[:5])
        raise SystemExit(f"{label}: {len(bad)} of {len(results)} switches not verified: {shown}")


@dataclass(frozen=True)
class PushRun:
    figures: Figures
    results: dict[str, ApplyResult]


def run_push(
    host: SwitchHost,
    targets: list[GnmiTarget],
    plans: Mapping[str, Plan],
    args: argparse.Namespace,
    *,
    baseline: bool,
) -> PushRun:
    slots = 1 if baseline else args.max_in_flight
    results: dict[str, ApplyResult] = {}
    with SessionPool(max_in_flight=slots) as pool:
        sessions = pool.sessions(targets)

        def work() -> None:
            if baseline:
                results.update(push_sequential(sessions, plans, args.batch_size))
            else:
                results.update(
                    apply_fleet(
                        plans, sessions, max_parallel=args.parallel, batch_size=args.batch_size
                    )
                )

        label = (
            "baseline: sequential, one RPC at a time"
            if baseline
            else f"sluice: apply_fleet {args.parallel} parallel, {slots} in flight"
        )
        figures = measure(host, label, sessions, work)
    ops = sum(r.ops_written for r in results.values())
    figures = Figures(**{**figures.__dict__, "ops": ops, "targets": len(results)})
    require_verified(label, results)
    return PushRun(figures, results)


def bench_push(args: argparse.Namespace, password: str) -> tuple[Figures, Figures]:
    intent = synthetic_intent(args.switches, args.ports)
    desired = compile_fleet(intent)
    # A freshly booted switch holds none of sluice's tables: every entry is an add.
    plans = {name: plan_switch(name, config, {}) for name, config in desired.items()}
    per_switch = sum(len(p.ops) for p in plans.values()) / max(len(plans), 1)
    spec = {
        "layout": "standalone",
        "switches": args.switches,
        "ports": args.ports,
        "latency_ms": args.switch_latency_ms,
    }
    print(
        f"push: {args.switches} switches, one gNMI server each (one process, in memory),"
        f" {args.ports} ports, {per_switch:.0f} ops per switch, batches of {args.batch_size}"
    )
    with switch_host(spec, password) as (host, ports):
        targets = loopback_targets(intent, ports, password, fleet=False)
        warm_up(targets)
        base = run_push(host, targets, plans, args, baseline=True).figures
        host.reset()
        fast = run_push(host, targets, plans, args, baseline=False).figures
    return base, fast


# --------------------------------------------------------------------------------------------
# reconcile


def reconcile_target(session: SwitchSession, desired: SwitchConfig) -> Plan:
    """One target's share of a pass: read what sluice owns, plan against the desired state
    (which is also what sluice wrote before, so it is the ``owned`` record)."""
    observed = session.get_tables(OWNED_TABLES)
    return plan_switch(session.name, desired, observed, desired)


def reconcile_pass(
    sessions: Mapping[str, SwitchSession], desired: Mapping[str, SwitchConfig], parallel: int
) -> dict[str, Plan]:
    """Plans for every target; ``parallel`` targets at a time (1: one after another)."""
    if parallel == 1:
        return {name: reconcile_target(sessions[name], desired[name]) for name in desired}
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="reconcile") as pool:
        futures = {
            name: pool.submit(reconcile_target, sessions[name], config)
            for name, config in desired.items()
        }
        return {name: future.result() for name, future in futures.items()}


def require_empty(label: str, plans: Mapping[str, Plan]) -> None:
    drifted = {name: len(plan.ops) for name, plan in plans.items() if plan.ops}
    if drifted:
        shown = ", ".join(f"{name} ({n} ops)" for name, n in list(drifted.items())[:5])
        raise SystemExit(f"{label}: {len(drifted)} of {len(plans)} plans not empty: {shown}")


def run_reconcile(
    host: SwitchHost,
    targets: list[GnmiTarget],
    desired: Mapping[str, SwitchConfig],
    args: argparse.Namespace,
    *,
    baseline: bool,
) -> Figures:
    slots, parallel = (1, 1) if baseline else (args.max_in_flight, args.parallel)
    plans: dict[str, Plan] = {}
    with SessionPool(max_in_flight=slots) as pool:
        sessions = pool.sessions(targets)
        label = (
            "baseline: sequential Get, one channel"
            if baseline
            else f"sluice: {parallel} parallel, {slots} in flight, one channel"
        )
        figures = measure(
            host, label, sessions, lambda: plans.update(reconcile_pass(sessions, desired, parallel))
        )
        if pool.channel_count != 1:
            raise SystemExit(f"{label}: {pool.channel_count} channels, expected one")
    require_empty(label, plans)
    entries = sum(len(config) for config in desired.values())
    return Figures(**{**figures.__dict__, "ops": entries, "targets": len(plans)})


def bench_reconcile(args: argparse.Namespace, password: str) -> tuple[Figures, Figures]:
    intent = synthetic_intent(args.targets, args.ports)
    desired = compile_fleet(intent)
    per_target = sum(len(c) for c in desired.values()) / max(len(desired), 1)
    spec = {
        "layout": "fleet",
        "switches": args.targets,
        "ports": args.ports,
        "converged": True,
        "latency_ms": args.switch_latency_ms,
    }
    print(
        f"reconcile: {args.targets} targets, fleet mode (one gNMI server, in memory),"
        f" {args.ports} ports, {per_target:.0f} entries per target in {len(OWNED_TABLES)}"
        " owned tables; ops/s = entries compared per second"
    )
    with switch_host(spec, password) as (host, ports):
        targets = loopback_targets(intent, ports, password, fleet=True)
        warm_up(targets)
        base = run_reconcile(host, targets, desired, args, baseline=True)
        fast = run_reconcile(host, targets, desired, args, baseline=False)
    return base, fast


# --------------------------------------------------------------------------------------------
# main


def print_section(base: Figures, fast: Figures) -> None:
    print(HEADER)
    for figures in (base, fast):
        print(figures.row())
        check_counts(figures)
    ratio = base.wall_s / fast.wall_s if fast.wall_s > 0 else float("inf")
    print(f"  speed-up (baseline wall / sluice wall): {ratio:.2f}x")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    for name, default in DEFAULTS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    parser.add_argument(
        "--switch-latency-ms",
        type=float,
        default=DEFAULT_LATENCY_MS,
        help="modelled time each switch spends per Get/Set before answering",
    )
    return parser


def _flags(args: argparse.Namespace) -> str:
    flags = "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name, default in DEFAULTS.items()
        if getattr(args, name) != default
    )
    if args.switch_latency_ms != DEFAULT_LATENCY_MS:
        flags += f" --switch-latency-ms {args.switch_latency_ms:g}"
    return flags


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if min(getattr(args, name) for name in DEFAULTS) < 1:
        raise SystemExit("every size and limit must be at least 1")
    if args.switch_latency_ms < 0:
        raise SystemExit("--switch-latency-ms must not be negative")
    password = secrets.token_hex(16)
    print(f"southbound bench: {os.cpu_count()} cores, load average {_load()} at start")
    if args.switch_latency_ms:
        print(f"modelled switch time: {args.switch_latency_ms:g} ms before each Get/Set answer")
    print_section(*bench_push(args, password))
    base, fast = bench_reconcile(args, password)
    print_section(base, fast)
    # run_reconcile has already stopped the run if any plan was not empty.
    every = f"{base.targets}/{args.targets} baseline, {fast.targets}/{args.targets} sluice"
    print(f"  every plan empty: {every}")
    print(f"load average {_load()} at end")
    print("reproduce: uv run python -m bench.southbound_bench" + _flags(args))


if __name__ == "__main__":
    main()
