"""qos-agent benchmark: time per agent iteration on a 64-port x 8-queue switch (512 managed
MQ-ECN queues), compute only and end to end through Redis, each beside a baseline measured in
the same run.

Builds and runs ``agent_bench`` (``agents/qos-agent/src/bin/agent_bench.rs``) against a
redis-server this script starts on 127.0.0.1 (no persistence) and stops:

- compute only: ``RateEstimator::observe`` for every queue and ``decide_port`` for every port
  over counter snapshots made up front; baseline: a loop over the same snapshots that only
  differences each queue's byte counter (reading the snapshots and nothing else).
- through Redis: the agent's own iteration (``Agent::iterate`` with ``RedisBackend``: orders
  version, the FLEX_COUNTER_TABLE groups, counters of every queue, decisions, WRED writes for
  thresholds that moved, the STATE_DB report); baseline: the round trips an iteration cannot
  do without, made straight with the same Rust client on the same server: one HGET, one
  pipeline of the 4 FLEX_COUNTER_TABLE groups, one pipeline of 512 HGETALL, one MULTI/EXEC
  of 513 HSET.

Half the queues are busy and the halves swap every 10 iterations, so most iterations move no
threshold and a swap moves 7 of a port's 8 (queue 3's share is 1/5 of C either way).

Reproduce: ``uv run python -m bench.agent_bench`` (``--ports N``, ``--iterations N``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from vsonic.redis_process import RedisProcess, free_port

ROOT = Path(__file__).resolve().parents[1]
BUILD = ["cargo", "build", "--quiet", "-p", "qos-agent", "--bin", "agent_bench"]
REPRODUCE = "uv run python -m bench.agent_bench"


def measure(ports: int, iterations: int, *, release: bool = True) -> dict[str, Any]:
    """Builds the binary (release for figures; the tests use the optimised dev build that
    ``cargo test`` already made) and runs it against a fresh redis-server."""
    subprocess.run([*BUILD, "--release"] if release else BUILD, cwd=ROOT, check=True)
    binary = ROOT / "target" / ("release" if release else "debug") / "agent_bench"
    with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
        server = RedisProcess(port=free_port(), directory=Path(tmp))
        server.start()
        try:
            out = subprocess.run(
                [str(binary), "--ports", str(ports), "--iterations", str(iterations),
                 "--redis-port", str(server.port)],
                cwd=ROOT, check=True, capture_output=True, text=True,
            )  # fmt: skip
        finally:
            server.stop()
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:>10,.1f}"


def _stats_row(label: str, samples: list[float]) -> str:
    if not samples:
        return f"  {label:<46}{'-':>10}{'-':>10}{'-':>10}   (no such iteration)"
    p95 = (
        statistics.quantiles(samples, n=20, method="inclusive")[-1]
        if len(samples) > 1
        else samples[0]
    )
    return f"  {label:<46}{_us(statistics.median(samples))}{_us(p95)}{_us(max(samples))}"


def render(r: dict[str, Any]) -> str:
    n, iterations = r["ports"] * r["queues"], r["iterations"]
    compute, compute_base = r["compute_s"] / iterations, r["compute_baseline_s"] / iterations
    agent, base, moved = r["redis_s"], r["redis_baseline_s"], r["redis_moved"]
    # Iteration 0 reads the orders and falls back (the agent's first iteration after a
    # connect), so it is left out of both sides.
    steady = [t for i, (t, m) in enumerate(zip(agent, moved, strict=True)) if i and not m]
    moving = [t for i, (t, m) in enumerate(zip(agent, moved, strict=True)) if i and m]
    rows = [
        f"agent benchmark: {r['ports']} ports x {r['queues']} queues = {n} managed MQ-ECN queues, "
        f"{iterations} iterations (half the queues busy; the halves swap every "
        f"{r['flip_every']} iterations)",
        f"compute only (no I/O){'':<35}us/iteration",
        f"  {'agent: RateEstimator + decide_port, all queues':<54}{_us(compute)}",
        f"  {'baseline: difference each queue bytes counter':<54}{_us(compute_base)}",
        f"  ratio agent / baseline: {compute / compute_base:,.0f}x the time per iteration",
        f"through Redis (redis-server on 127.0.0.1){'':<7}{'median':>10}{'p95':>10}{'max':>10}"
        " us/iteration",
        _stats_row("agent: Agent::iterate + RedisBackend", agent[1:]),
        _stats_row("  iterations that move no threshold", steady),
        _stats_row("  iterations that move thresholds", moving),
        _stats_row(f"baseline: HGET, 4+{n} HGETALL, MULTI {n + 1} HSET", base[1:]),
        f"  ratio agent / baseline (medians): "
        f"{statistics.median(agent[1:]) / statistics.median(base[1:]):.2f}x",
        f"  thresholds written: {sum(moved):,} in {sum(1 for m in moved if m)} iterations",
        f"reproduce: {REPRODUCE} --ports {r['ports']} --iterations {iterations}",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ports", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args(argv)
    if args.ports < 1 or args.iterations < 3:
        parser.error("--ports must be at least 1 and --iterations at least 3")
    print(render(measure(args.ports, args.iterations)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
