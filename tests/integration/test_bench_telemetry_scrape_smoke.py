"""Smoke test of the scrape benchmark (bench/telemetry_scrape_bench.py) at a tiny size: both
renderings hold the same number of samples (the bench refuses otherwise) and the report names
both. No timing assertions."""

from __future__ import annotations

import pytest

from bench.telemetry_scrape_bench import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_tiny_scrape_bench_reports_both_renderings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--switches", "2", "--ports", "2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    # 2 switches x 2 ports x 8 queues x (8 queue gauges + threshold + info), 4 per port,
    # 6 per switch (heartbeat, mode, version, loop, stream up, update age), 4 collector.
    assert "2 switches x 2 ports: 352 samples" in out
    # All three renderings of the same samples are timed and compared.
    assert "sluice render (counter and PFC families by the core):" in out
    assert "baseline: the same in Python (before the core):" in out
    assert "baseline: prometheus_client families + generate_latest:" in out
    assert "ratio Python / render:" in out


def test_tiny_lossless_scrape_bench_holds_the_pfc_lines_to_pythons(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The bench refuses (SystemExit) when the PFC lines written in Python differ from the
    # core's; its report then prices both.
    assert main(["--switches", "2", "--ports", "2", "--repeats", "1", "--lossless"]) == 0
    out = capsys.readouterr().out
    assert "2 switches x 2 ports, a lossless class on priority" in out
    assert "baseline: PFC families in Python, the rest by the core (before this change):" in out
    assert "the PFC lines alone (" in out
