"""Smoke test of the drift-watch benchmark (bench/drift_watch_bench.py) at a tiny size: two
fleet vsonic processes of 2 switches each, converged. Every drift injected is reported for
its own switch and no other; the baseline pass finds every target converged (the bench
checks that itself); the report says how to reproduce it. No timing assertions."""

from __future__ import annotations

import pytest

from bench.drift_watch_bench import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_tiny_run_reports_each_drift_for_its_switch_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--switches", "4", "--per-host", "2", "--ports", "2", "--drifts", "3"]) == 0
    text = capsys.readouterr().out
    assert "targets: 4 (2 fleet vsonic process(es) x 2), 2 ports each" in text
    assert "4 ON_CHANGE streams synced" in text
    assert "(3 drifts)" in text
    assert "reports for other targets 0" in text
    assert "0 re-subscriptions, 0 reports" in text
    assert "baseline: one reconcile pass over 4 targets" in text
    assert "uv run python -m bench.drift_watch_bench --switches 4 --per-host 2 --ports 2" in text
