"""Smoke test of the vsonic streams benchmark (bench/vsonic_streams_bench.py) at a tiny size:
a fleet vsonic of 3 switches in its own process, 12 ON_CHANGE streams. Every stream gets its
initial sync and then the update of the Set on its switch; the index and the cache agree with
the full scan (the bench checks that itself); the report says how to reproduce it. No timing
assertions."""

from __future__ import annotations

import pytest

from bench.vsonic_streams_bench import measure, render

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_tiny_run_syncs_and_updates_every_stream() -> None:
    r = measure(switches=3, streams=12, ports=2, idle_s=0.5, gets=3, rounds=3)
    run = r["streams_run"]
    assert run["synced"] == run["updated"] == 12
    assert len(run["get_none_s"]) == len(run["get_open_s"]) == 3
    assert r["index"]["table_keys"] == 2 * 8  # QUEUE: 2 ports x 8 queues
    text = render(r)
    assert "streams updated after one Set per switch: 12 / 12" in text
    assert "uv run python -m bench.vsonic_streams_bench --switches 3 --streams 12 --ports 2" in text
