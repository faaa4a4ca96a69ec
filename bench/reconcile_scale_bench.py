"""Reconcile at scale: a no-drift pass over 1,000, 3,000 and 10,000 fleet-mode targets of 32
ports, sluice's pass beside the old one (the baseline) in the same run.

The switches: ``bench.compile_bench.synthetic_intent(targets, ports)`` served by fleet-mode
vsonic (bench/vsonic_host.py, MemoryStore, one gNMI endpoint per process), each switch
already holding its desired state. ``--hosts`` processes share the fleet, each serving a
contiguous slice; the bench machine's cores are shared between them and the controller.
Every host serves gNMI over TLS with one certificate made for the run (bench/switch_tls.py);
the controller trusts it, as a deployment trusts its switches' CA.

The controller: each pass runs in a process of its own, started afresh, so its peak RSS
(``ru_maxrss``) is that pass's alone: building the targets' desired state (outside the
timing) and the pass itself. Both run ``ReconcileLoop.run_pass`` (controller/reconcile/
loop.py) in alert mode with ``--parallel`` workers and ``--max-in-flight`` RPCs at a time.

- baseline, the pass as it was: every target holds its own copy of its desired state
  (``compile_fleet``) and no digests, so every answer is decoded into entries and planned.
- sluice: the targets of one switch shape share one desired state and its table digests
  (``compile_fleet_by_shape``); an answer is compared by digest (controller/sonic/digest.py)
  and decoded only when it differs.

Each pass must find every target converged with an empty plan, checked after the timing, or
the bench stops. A baseline at the largest size may not fit in memory (it holds every
decoded answer until the pass ends): ``--baseline-max`` (default 3,000) bounds it.

Reproduce: ``uv run python -m bench.reconcile_scale_bench`` (``--sizes``, ``--ports``,
``--parallel``, ``--max-in-flight``, ``--hosts``, ``--baseline-max``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.compile_bench import synthetic_intent
from bench.southbound_bench import PassRecord, run_problems, utc_now
from bench.southbound_support import REPO, password_resolver, switch_host
from bench.switch_tls import bench_tls
from bench.vsonic_host import USERNAME
from controller.intent.models import GnmiEndpoint, Intent, Switch
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.reconcile.loop import ReconcileLoop, Target
from controller.sonic.compile import compile_fleet, compile_fleet_by_shape
from controller.southbound.gnmi import SessionPool, TlsOptions
from vsonic.gnmi_server import TlsFiles

MODES = ("baseline", "sluice")
DEFAULT_SIZES = (1000, 3000, 10000)
DEFAULTS = {"ports": 32, "parallel": 8, "max_in_flight": 64, "hosts": 1, "baseline_max": 3000}
PASSWORD_ENV = "BENCH_RECONCILE_PASSWORD"  # the child's gNMI password; never on argv


@dataclass(frozen=True)
class PassFigures:
    """One timed pass; ``problems``: the first few targets not converged, and why."""

    mode: str
    targets: int
    wall_s: float
    cpu_s: float
    switches_cpu_s: float
    gets: int
    peak_rss_mb: float
    converged: int
    problems: list[tuple[str, str]]

    @property
    def ms_per_target(self) -> float:
        return 1000 * self.wall_s / self.targets

    def row(self) -> str:
        return (
            f"  {self.targets:7d} {self.mode:<8} {self.wall_s:8.2f}s"
            f" {self.targets / self.wall_s:9.1f} {self.ms_per_target:9.3f} {self.cpu_s:8.2f}s"
            f" {self.switches_cpu_s:11.2f}s {self.peak_rss_mb:9.0f} MB {self.gets:6d}"
            f" {self.converged:9d}"
        )


HEADER = (
    f"  {'targets':>7} {'mode':<8} {'wall':>9} {'targets/s':>9} {'ms/target':>9}"
    f" {'cpu ctl':>9} {'cpu switches':>12} {'peak RSS ctl':>12} {'Gets':>6} {'converged':>9}"
)


# --------------------------------------------------------------------------------------------
# the controller's side: one pass in a process of its own


def fleet_switches(intent: Intent, ports: Sequence[int]) -> list[Switch]:
    """The intent's switches pointed at their host: ``ports[i]`` serves the i-th slice."""
    per_host = -(-len(intent.switches) // len(ports))
    return [
        switch.model_copy(
            update={
                "gnmi": GnmiEndpoint(
                    address="127.0.0.1", port=ports[index // per_host], target=switch.name
                )
            }
        )
        for index, switch in enumerate(intent.switches)
    ]


def fleet_targets(mode: str, intent: Intent, switches: list[Switch]) -> list[Target]:
    if mode == "baseline":
        copies = compile_fleet(intent)  # a copy per switch, as the targets held it before
        return [Target(s, 1, copies[s.name]) for s in switches]
    shared = compile_fleet_by_shape(intent)
    return [Target(s, 1, shared.configs[s.name], shared.digests[s.name]) for s in switches]


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (proc(5): stat fields 14, 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_pass(
    mode: str,
    size: int,
    ports: int,
    hosts: Mapping[int, int],
    limits: Sequence[int],
    tls: TlsOptions,
) -> PassFigures:
    """Build the targets, time one pass, check it: the figures as a JSON-ready dict.
    ``hosts``: switch-host pid -> its gNMI port; ``tls``: what the sessions trust."""
    parallel, max_in_flight = limits
    intent = synthetic_intent(size, ports)
    switches = fleet_switches(intent, list(hosts.values()))
    record = PassRecord(fleet_targets(mode, intent, switches))
    resolve = password_resolver(os.environ[PASSWORD_ENV])
    with SessionPool(max_in_flight=max_in_flight) as pool:
        access = GnmiAccess(pool, resolve, username=USERNAME, tls=tls)
        # The pass's sessions read once first, as a running controller's have: a session's
        # first Get reads the CONFIG_DB root to learn which tables exist, later ones name them.
        for switch in switches:
            access.read(switch, OWNED_TABLES)
        sessions = [access.session(s) for s in switches]
        gets = sum(s.rpc_counts.get("Get", 0) for s in sessions)
        loop = ReconcileLoop(record, access, utc_now, random.random, max_parallel=parallel)
        switches_cpu = sum(process_cpu_s(pid) for pid in hosts)
        cpu = time.process_time()
        start = time.perf_counter()
        runs = loop.run_pass()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        switches_cpu = sum(process_cpu_s(pid) for pid in hosts) - switches_cpu
        gets = sum(s.rpc_counts.get("Get", 0) for s in sessions) - gets
    problems = run_problems(runs, {t.switch.name: t.desired for t in record.fleet})
    return PassFigures(
        mode,
        size,
        wall,
        cpu,
        switches_cpu,
        gets,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        len(runs) - len(problems),
        sorted(problems.items())[:3],
    )


# --------------------------------------------------------------------------------------------
# the bench: switch hosts per size, a controller process per pass


@contextmanager
def fleet_hosts(
    size: int, ports: int, hosts: int, password: str, tls: TlsFiles
) -> Iterator[dict[int, int]]:
    """``hosts`` switch-host processes sharing ``size`` converged switches, serving TLS with
    ``tls``: {pid: port}."""
    per_host = -(-size // hosts)
    with ExitStack() as stack:
        served: dict[int, int] = {}
        for start in range(0, size, per_host):
            spec = {
                "layout": "fleet",
                "switches": size,
                "ports": ports,
                "converged": True,
                "validate_once": True,
                "slice": [start, min(start + per_host, size)],
            }
            host, port_of = stack.enter_context(switch_host(spec, password, tls))
            served[host.pid] = port_of["fleet"]
        yield served


def run_child(
    mode: str,
    size: int,
    args: argparse.Namespace,
    hosts: Mapping[int, int],
    password: str,
    tls: TlsFiles,
) -> PassFigures:
    command = [
        sys.executable, "-m", "bench.reconcile_scale_bench", "--child", mode,
        "--sizes", str(size), "--ports", str(args.ports), "--parallel", str(args.parallel),
        "--max-in-flight", str(args.max_in_flight), "--host-ports", json.dumps(hosts),
        "--tls-ca", str(tls.cert),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, PASSWORD_ENV: password},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} pass over {size} targets failed:\n{done.stderr[-3000:]}")
    return PassFigures(**json.loads(done.stdout.strip().splitlines()[-1]))


def require_converged(f: PassFigures) -> None:
    if f.converged != f.targets:
        raise SystemExit(f"{f.mode} at {f.targets}: not every target converged: {f.problems}")


def linearity(passes: Sequence[PassFigures]) -> list[str]:
    """Per mode, ms per target at each size over ms per target at the smallest."""
    lines = []
    for mode in MODES:
        mine = [p for p in passes if p.mode == mode]
        if len(mine) > 1:
            shown = ", ".join(
                f"{p.targets}: {p.ms_per_target / mine[0].ms_per_target:.2f}" for p in mine
            )
            lines.append(f"  {mode}: ms/target relative to {mine[0].targets} targets: {shown}")
    return lines


def speedups(passes: Sequence[PassFigures]) -> list[str]:
    walls = {(p.mode, p.targets): p.wall_s for p in passes}
    return [
        f"  speed-up at {size} (baseline wall / sluice wall): {walls['baseline', size] / wall:.2f}x"
        for (mode, size), wall in walls.items()
        if mode == "sluice" and ("baseline", size) in walls
    ]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    for name, default in DEFAULTS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--host-ports", help=argparse.SUPPRESS)
    parser.add_argument("--tls-ca", type=Path, help=argparse.SUPPRESS)
    return parser


def _flags(args: argparse.Namespace) -> str:
    flags = "" if args.sizes == ",".join(map(str, DEFAULT_SIZES)) else f" --sizes {args.sizes}"
    return flags + "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name, default in DEFAULTS.items()
        if getattr(args, name) != default
    )


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    if min(*sizes, *(getattr(args, name) for name in DEFAULTS if name != "baseline_max")) < 1:
        raise SystemExit("every size and limit must be at least 1")
    if args.child:
        if args.tls_ca is None:
            raise SystemExit("--child needs --tls-ca: the switch hosts serve TLS")
        hosts = {int(pid): int(port) for pid, port in json.loads(args.host_ports).items()}
        limits = (args.parallel, args.max_in_flight)
        trust = TlsOptions(root_cert=args.tls_ca)
        figures = one_pass(args.child, sizes[0], args.ports, hosts, limits, trust)
        print(json.dumps(asdict(figures)))
        return
    password = secrets.token_hex(16)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"reconcile scale bench: {os.cpu_count()} cores, load average {load} at start")
    print(
        f"no-drift pass, fleet mode, {args.ports} ports per target, {args.hosts} switch host"
        f" process(es), {args.parallel} parallel, {args.max_in_flight} in flight"
    )
    print("gNMI over TLS: every switch host serves one self-signed certificate the bench trusts")
    print(HEADER)
    passes = []
    with bench_tls() as tls:
        for size in sizes:
            with fleet_hosts(size, args.ports, args.hosts, password, tls) as hosts:
                modes = MODES if size <= args.baseline_max else MODES[1:]
                for mode in modes:
                    figures = run_child(mode, size, args, hosts, password, tls)
                    print(figures.row(), flush=True)
                    require_converged(figures)
                    passes.append(figures)
    for line in linearity(passes) + speedups(passes):
        print(line)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} at end")
    print("reproduce: uv run python -m bench.reconcile_scale_bench" + _flags(args))


if __name__ == "__main__":
    main()
