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
requires every plan to be empty. Baseline: one target after another, one RPC at a time.
sluice: ``ReconcileLoop.run_pass`` (controller/reconcile/loop.py) in alert mode with
``parallel`` workers under the pool's in-flight limit, each target with its table digests
(answers compared by digest, decoded only when they differ).

RPC counts are what the switches received (the helper process counts them); CPU seconds are
given for the bench process and the switches' process, since the machine is shared.
``--switch-latency-ms`` adds a modelled pause to every switch answer (time a real switch
spends on its own CPU); by default there is none and the switches share one core.

GCU-paced push (``--gcu-set-s``, default 2 s; 0 skips it): the push again to
``--gcu-switches`` switches that each take that long per Set, as a SONiC switch does when
every CONFIG_DB Set is a GCU run (checkpoint, patch, save: vsonic/gcu.py), with the same
sequential baseline; sluice runs ``--gcu-parallel`` switches at a time, and each Set carries
up to ``--gcu-batch-size`` ops (1000: two Sets per switch). Here the switches' time
dominates, not the controller's; the baseline alone takes about 7 minutes.

Reproduce: ``uv run python -m bench.southbound_bench`` (``--switches``, ``--targets``,
``--ports``, ``--max-in-flight``, ``--parallel``, ``--batch-size``, ``--switch-latency-ms``,
``--gcu-set-s``, ``--gcu-switches``, ``--gcu-parallel``, ``--gcu-batch-size``).
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from bench.compile_bench import synthetic_intent
from bench.southbound_support import (
    HEADER,
    Figures,
    SwitchHost,
    check_counts,
    loopback_switches,
    loopback_targets,
    measure,
    password_resolver,
    switch_host,
    warm_up,
)
from bench.switch_tls import bench_tls
from bench.vsonic_host import USERNAME
from controller.intent.models import Reconcile, ReconcileMode, Switch
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.reconcile.apply import (
    ApplyResult,
    apply_fleet,
    apply_plan_to_switch,
)
from controller.reconcile.loop import ReconcileLoop, SwitchRun, Target
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import plan_switch
from controller.sonic.digest import table_digests
from controller.sonic.model import Plan, SwitchConfig
from controller.southbound.gnmi import GnmiTarget, SessionPool, SwitchSession
from vsonic.gnmi_server import TlsFiles

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
# GCU-paced push: 2 s per Set is at the fast end of what operators report for a real switch
# (sonic-net/sonic-gnmi#784: 19.5 s on average for a 10-entry patch).
DEFAULT_GCU_SET_S = 2.0
DEFAULT_GCU_SWITCHES = 100
DEFAULT_GCU_PARALLEL = 50
# Ops per SetRequest in the paced push: a switch then gets two Sets (QoS tables, then the
# agent's), so the sequential baseline takes 100 x 2 x 2 s, about 7 minutes, not half an hour.
DEFAULT_GCU_BATCH_SIZE = 1000


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


def run_push(
    host: SwitchHost,
    targets: list[GnmiTarget],
    plans: Mapping[str, Plan],
    args: argparse.Namespace,
    *,
    baseline: bool,
) -> Figures:
    slots = 1 if baseline else args.max_in_flight
    with SessionPool(max_in_flight=slots) as pool:
        sessions = pool.sessions(targets)
        if baseline:
            label = "baseline: sequential, one RPC at a time"
            figures, results = measure(
                host, label, sessions, lambda: push_sequential(sessions, plans, args.batch_size)
            )
        else:
            label = f"sluice: apply_fleet {args.parallel} parallel, {slots} in flight"
            figures, results = measure(
                host,
                label,
                sessions,
                lambda: apply_fleet(
                    plans, sessions, max_parallel=args.parallel, batch_size=args.batch_size
                ),
            )
    require_verified(label, results)
    ops = sum(r.ops_written for r in results.values())
    return replace(figures, ops=ops, targets=len(results))


def bench_push(
    args: argparse.Namespace, password: str, tls: TlsFiles, *, gcu_set_s: float = 0.0
) -> tuple[Figures, Figures]:
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
        "gcu_set_s": gcu_set_s,
    }
    section = f"push-gcu ({gcu_set_s:g} s per Set)" if gcu_set_s else "push"
    print(
        f"{section}: {args.switches} switches, one gNMI server each (one process, in memory),"
        f" {args.ports} ports, {per_switch:.0f} ops per switch, batches of {args.batch_size}"
    )
    with switch_host(spec, password, tls) as (host, ports):
        targets = loopback_targets(intent, ports, password, host.tls, fleet=False)
        warm_up(targets)
        base = run_push(host, targets, plans, args, baseline=True)
        host.reset()
        fast = run_push(host, targets, plans, args, baseline=False)
    return base, fast


# --------------------------------------------------------------------------------------------
# reconcile


@dataclass
class PassRecord:
    """The loop's ``ReconcileStore`` for one pass: fixed targets, alert mode (the bench
    never writes during a pass), every run kept."""

    fleet: list[Target]
    runs: list[SwitchRun] = field(default_factory=list)

    def policy(self) -> Reconcile:
        return Reconcile(mode=ReconcileMode.ALERT)

    def targets(self) -> list[Target]:
        return self.fleet

    def record(self, run: SwitchRun) -> None:
        self.runs.append(run)


def utc_now() -> datetime:
    return datetime.now(UTC)


def sequential_pass(
    sessions: Mapping[str, SwitchSession], desired: Mapping[str, SwitchConfig]
) -> dict[str, Plan]:
    """The baseline: one target after another, Get what sluice owns, plan against desired
    (also the ``owned`` record: it is what sluice wrote)."""
    plans = {}
    for name, config in desired.items():
        observed = sessions[name].get_tables(OWNED_TABLES)
        plans[name] = plan_switch(name, config, observed, config)
    return plans


def plan_problems(plans: Mapping[str, Plan]) -> dict[str, str]:
    return {name: f"{len(plan.ops)} ops" for name, plan in plans.items() if plan.ops}


def run_problems(runs: Iterable[SwitchRun], desired: Mapping[str, SwitchConfig]) -> dict[str, str]:
    """A run is fine when converged and the plan from what it read is empty (checked again
    here, after the timing, so 'no drift' and 'empty plan' cannot part ways unseen)."""
    problems = {}
    for run in runs:
        want = desired[run.switch]
        if run.status != "converged" or run.running is None:
            error = f": {run.error}" if run.error else ""
            problems[run.switch] = f"{run.status}, {len(run.drift)} drift{error}"
        elif plan_switch(run.switch, want, run.running, want).ops:
            problems[run.switch] = "converged, yet its plan is not empty"
    return problems


def require_converged(label: str, problems: Mapping[str, str], total: int) -> None:
    if problems:
        shown = ", ".join(f"{name} ({what})" for name, what in sorted(problems.items())[:5])
        raise SystemExit(f"{label}: {len(problems)} of {total} targets not converged: {shown}")


def run_reconcile(
    host: SwitchHost,
    switches: list[Switch],
    desired: Mapping[str, SwitchConfig],
    password: str,
    args: argparse.Namespace,
    *,
    baseline: bool,
) -> Figures:
    slots, parallel = (1, 1) if baseline else (args.max_in_flight, args.parallel)
    with SessionPool(max_in_flight=slots) as pool:
        access = GnmiAccess(
            pool,
            password_resolver(password),
            username=USERNAME,
            batch_size=args.batch_size,
            tls=host.tls,
        )
        sessions = {s.name: access.session(s) for s in switches}  # the ones the pass uses
        if baseline:
            label = "baseline: sequential Get, one channel"
            figures, plans = measure(
                host, label, sessions, lambda: sequential_pass(sessions, desired)
            )
            problems = plan_problems(plans)
        else:
            label = f"sluice: ReconcileLoop {parallel} parallel, {slots} in flight"
            fleet = [
                Target(s, 1, desired[s.name], table_digests(desired[s.name])) for s in switches
            ]
            record = PassRecord(fleet)
            loop = ReconcileLoop(record, access, utc_now, random.random, max_parallel=parallel)
            figures, _ = measure(host, label, sessions, loop.run_pass)
            problems = run_problems(record.runs, desired)
        if pool.channel_count != 1:
            raise SystemExit(f"{label}: {pool.channel_count} channels, expected one")
    require_converged(label, problems, len(switches))
    entries = sum(len(config) for config in desired.values())
    return replace(figures, ops=entries, targets=len(switches))


def bench_reconcile(
    args: argparse.Namespace, password: str, tls: TlsFiles
) -> tuple[Figures, Figures]:
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
    with switch_host(spec, password, tls) as (host, ports):
        warm_up(loopback_targets(intent, ports, password, host.tls, fleet=True))
        switches = loopback_switches(intent, ports, fleet=True)
        base = run_reconcile(host, switches, desired, password, args, baseline=True)
        fast = run_reconcile(host, switches, desired, password, args, baseline=False)
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
    parser.add_argument(
        "--gcu-set-s",
        type=float,
        default=DEFAULT_GCU_SET_S,
        help="GCU-paced push: seconds each switch takes per Set (0 skips that run)",
    )
    parser.add_argument("--gcu-switches", type=int, default=DEFAULT_GCU_SWITCHES)
    parser.add_argument("--gcu-parallel", type=int, default=DEFAULT_GCU_PARALLEL)
    parser.add_argument("--gcu-batch-size", type=int, default=DEFAULT_GCU_BATCH_SIZE)
    return parser


def _flags(args: argparse.Namespace) -> str:
    flags = "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name, default in DEFAULTS.items()
        if getattr(args, name) != default
    )
    if args.switch_latency_ms != DEFAULT_LATENCY_MS:
        flags += f" --switch-latency-ms {args.switch_latency_ms:g}"
    if args.gcu_set_s != DEFAULT_GCU_SET_S:
        flags += f" --gcu-set-s {args.gcu_set_s:g}"
    if args.gcu_switches != DEFAULT_GCU_SWITCHES:
        flags += f" --gcu-switches {args.gcu_switches}"
    if args.gcu_parallel != DEFAULT_GCU_PARALLEL:
        flags += f" --gcu-parallel {args.gcu_parallel}"
    if args.gcu_batch_size != DEFAULT_GCU_BATCH_SIZE:
        flags += f" --gcu-batch-size {args.gcu_batch_size}"
    return flags


def bench_gcu_push(args: argparse.Namespace, password: str, tls: TlsFiles) -> None:
    """The push to switches that take ``gcu_set_s`` per Set, next to its baseline."""
    gcu = argparse.Namespace(
        **{
            **vars(args),
            "switches": args.gcu_switches,
            "parallel": args.gcu_parallel,
            "batch_size": args.gcu_batch_size,
        }
    )
    gcu.max_in_flight = max(args.max_in_flight, args.gcu_parallel)
    print_section(*bench_push(gcu, password, tls, gcu_set_s=args.gcu_set_s))


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if min(getattr(args, name) for name in DEFAULTS) < 1:
        raise SystemExit("every size and limit must be at least 1")
    if args.switch_latency_ms < 0 or args.gcu_set_s < 0:
        raise SystemExit("--switch-latency-ms and --gcu-set-s must not be negative")
    if min(args.gcu_switches, args.gcu_parallel, args.gcu_batch_size) < 1:
        raise SystemExit("--gcu-switches, --gcu-parallel and --gcu-batch-size must be at least 1")
    password = secrets.token_hex(16)
    print(f"southbound bench: {os.cpu_count()} cores, load average {_load()} at start")
    if args.switch_latency_ms:
        print(f"modelled switch time: {args.switch_latency_ms:g} ms before each Get/Set answer")
    print("gNMI over TLS: every switch serves one self-signed certificate the bench trusts")
    with bench_tls() as tls:
        print_section(*bench_push(args, password, tls))
        base, fast = bench_reconcile(args, password, tls)
        print_section(base, fast)
        # run_reconcile has already stopped the run if any target was not converged.
        every = f"{base.targets}/{args.targets} baseline, {fast.targets}/{args.targets} sluice"
        print(f"  every plan empty: {every}")
        if args.gcu_set_s:
            bench_gcu_push(args, password, tls)
    print(f"load average {_load()} at end")
    print("reproduce: uv run python -m bench.southbound_bench" + _flags(args))


if __name__ == "__main__":
    main()
