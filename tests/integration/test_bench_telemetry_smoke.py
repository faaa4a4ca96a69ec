"""Smoke test of the telemetry benchmark (bench/telemetry_bench.py) at a tiny size: 2 switches
x 2 ports served by two fleet vsonic processes (one switch each), each client for 2 s. Every
client counts updates (a SAMPLE at 1 s of 2 x 2 x 9 counter objects gives 36 a second), the
collector ingests what the bare loop receives, and the report says how to reproduce it. No
timing assertions."""

from __future__ import annotations

import pytest

from bench.telemetry_bench import ROLES, measure, render

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_tiny_run_counts_updates_for_every_client() -> None:
    r = measure(switches=2, ports=2, duration=2.0, warmup=3.0, servers=2)
    for role in ROLES:
        assert r[role]["updates"] > 0, role
        # At most one sample per object per second, plus one more when a tick straddles
        # the window's edge: 36 objects x (2 s + 1).
        assert r[role]["updates"] <= 36 * 3, role
    # Ingest alone: 2 ports x 9 objects x 20 rounds, every one through the handler.
    assert r["ingest"]["updates"] == r["ingest"]["ingested"] == 2 * 9 * 20
    assert r["idle"]["streams"] == 16  # 16 per switch of the first server, which has one
    assert r["idle"]["idle_cpu"] >= 0
    text = render(r)
    assert "ratio collector / bare loop" in text
    assert "uv run python -m bench.telemetry_bench --switches 2 --ports 2 --duration 2" in text
    assert "--servers 2" in text
    # The collector's scrape after its window holds every queue of both switches.
    assert r["collector"]["scrape"]["samples"] >= 2 * 2 * 8
