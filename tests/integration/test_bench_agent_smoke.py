"""Smoke test of the agent benchmark (bench/agent_bench.py) at a tiny size: 2 ports x 8 queues,
12 iterations, through a real redis-server it starts and stops. It runs, every iteration is
timed on both sides, the agent writes exactly the thresholds the load makes move (worked out
by hand below), the compute pass walked every snapshot, and the report says how to
reproduce it. No timing assertions."""

from __future__ import annotations

import pytest

from bench.agent_bench import measure, render

pytestmark = pytest.mark.integration

PORTS, ITERATIONS = 2, 12


def test_tiny_run_times_every_iteration_and_writes_what_moves() -> None:
    r = measure(PORTS, ITERATIONS, release=False)
    assert len(r["redis_s"]) == len(r["redis_baseline_s"]) == ITERATIONS
    assert all(t > 0 for t in [*r["redis_s"], *r["redis_baseline_s"]])
    assert r["compute_s"] > 0
    assert r["compute_baseline_s"] > 0
    # K = 500,000 B; queue q has weight q + 1. Iterations 0-9: even queues busy (weights
    # 1+3+5+7 = 16), odd ones idle; from 10: the other way round (2+4+6+8 = 20).
    # Iteration 0 is the agent's first after connecting: it falls back to static_bytes, which
    # the profiles already hold: no write. Iteration 1 computes: a busy queue gets w/16 of C,
    # an idle one w/(16+w), never the floor w/36: all 8 of a port move. Iteration 10: busy
    # w/20, idle w/(20+w); queue 3 (w 4) had 4/(16+4) = 1/5 and now 4/20 = 1/5: 7 move.
    expected = [0, 8 * PORTS] + [0] * 8 + [7 * PORTS, 0]
    assert r["redis_moved"] == expected
    # The byte deltas telescope to each queue's last count: 125,000,000 x (q+1) / 16 =
    # 7,812,500 x (q+1) B per busy iteration. Even queues busy 10 times (sum of q+1 = 16),
    # odd ones twice (20): 7,812,500 x (10 x 16 + 2 x 20) = 1,562,500,000 B a port.
    assert r["checksum"] == PORTS * 1_562_500_000
    text = render(r)
    assert f"thresholds written: {8 * PORTS + 7 * PORTS} in 2 iterations" in text
    assert f"uv run python -m bench.agent_bench --ports {PORTS} --iterations {ITERATIONS}" in text
