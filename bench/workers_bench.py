"""Rollout throughput with 1, 2 and 3 worker processes sharing a fleet through the engine
(docs/scaling.md, "Several workers"), beside today's single-worker mode in the same run.

``uv run --frozen python -m bench.workers_bench [--switches 1000] [--set-delay-ms 20]``

Each row is a fresh database and a fresh fleet: one vsonic fleet-mode server (TLS) in this
process (each Set held ``--set-delay-ms`` first, a stand-in for a switch's apply time), a
rollout of every switch (canary, then batches of ``--batch``), and N real worker processes.
The time is from the rollout's start to its completion; workers start first and are warm.
The baseline is single mode (one worker, ``SLUICE_WORKER_ENGINE=single``); the ratios are
against it. Processes stand in for machines: on this shared 2-core host they also share
CPUs, so the ratio shows coordination overhead and overlap of switch latency, not the
speed-up of separate machines.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.engine_fleet import running_fleet, start_worker, stop_worker
from controller.intent.loader import dump_intent
from controller.services.common import Actor, utc_now
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.store.db import make_engine, make_sessions
from controller.store.migrate import upgrade
from lab.localpg import LocalPostgres
from vsonic.gnmi_server import TlsFiles
from vsonic.tls import self_signed_tls

OPERATOR = Actor(name="workers-bench", request_id="bench")
WAIT_S = 600.0


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    wall_s: float
    switches: int
    load: float  # the machine's 1-minute load average at the row's end (other sessions too)

    @property
    def per_s(self) -> float:
        return self.switches / self.wall_s


def run_one(
    server: LocalPostgres,
    tls: TlsFiles,
    label: str,
    engine: str,
    workers: int,
    args: argparse.Namespace,
) -> Row:
    name = f"workers_bench_{engine}_{workers}"
    admin = server.url().replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = server.url(name)
    upgrade(url)
    db = make_engine(url, pool_size=2)
    logs = Path(tempfile.mkdtemp(prefix="workers-bench-"))
    try:
        with ExitStack() as stack:
            delay_s = args.set_delay_ms / 1e3
            fleet = stack.enter_context(running_fleet(args.switches, tls, delay_s))
            sessions = make_sessions(db)
            intents = IntentService(sessions, clock=utc_now)
            intents.replace(
                dump_intent(fleet.intent()), expected=intents.head(), actor=OPERATOR, reason="b"
            )
            for i in range(workers):
                process = start_worker(
                    url, fleet, logs / f"w{i}.log", engine=engine, max_parallel=args.parallel
                )
                stack.callback(stop_worker, process)
            time.sleep(2.0)  # let the workers start (imports, connections) before the clock
            rollouts = RolloutService(sessions, clock=utc_now)
            policy = RolloutPolicy(
                None, canary=(fleet.names[0],), batch_size=args.batch, failure_budget=0
            )
            started = time.perf_counter()
            info = rollouts.start(policy, actor=OPERATOR)
            deadline = time.monotonic() + WAIT_S
            while rollouts.get(info.id).state != "completed":
                if time.monotonic() > deadline:
                    raise SystemExit(f"{label}: no completion in {WAIT_S:.0f} s; logs in {logs}")
                time.sleep(0.05)
            wall_s = time.perf_counter() - started
            verified = sum(
                1 for r in rollouts.get(info.id).results if r.status == "applied_verified"
            )
            if verified != args.switches:
                raise SystemExit(f"{label}: {verified} of {args.switches} verified")
    finally:
        db.dispose()
        shutil.rmtree(logs, ignore_errors=True)
    return Row(label, wall_s, args.switches, os.getloadavg()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=4, help="switches at once per worker")
    parser.add_argument("--set-delay-ms", type=float, default=20.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sluice-pg-bench-"))
    root.chmod(0o755)
    server = LocalPostgres(root=root)
    server.start()
    tls = self_signed_tls(root)  # the fleet serves gNMI over TLS, as the workers expect
    try:
        rows = [run_one(server, tls, "single mode, 1 worker (baseline)", "single", 1, args)]
        for workers in (1, 2, 3):
            label = f"procrastinate, {workers} worker(s)"
            rows.append(run_one(server, tls, label, "procrastinate", workers, args))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    base = rows[0]
    print(
        f"rollout of {args.switches} switches, batches of {args.batch}, {args.parallel} at once"
        f" per worker, Set held {args.set_delay_ms:.0f} ms"
    )
    print(f"  {'mode':<36} {'wall':>8} {'switches/s':>11} {'vs baseline':>12} {'load':>6}")
    for row in rows:
        ratio = row.per_s / base.per_s
        print(
            f"  {row.label:<36} {row.wall_s:7.2f}s {row.per_s:11.1f} {ratio:11.2f}x {row.load:6.1f}"
        )


if __name__ == "__main__":
    main()
