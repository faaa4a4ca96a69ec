"""Smoke test of the reconcile scale benchmark (bench/reconcile_scale_bench.py) at tiny sizes.

It runs as a command across two switch-host processes, prints a row per size and mode (no
baseline above ``--baseline-max``), one Get per target and every target converged; a pass
that finds targets not converged stops it. Real gRPC over TLS to real vsonic fleet servers on
127.0.0.1; no timing assertions.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from bench.reconcile_scale_bench import PASSWORD_ENV, one_pass, require_converged
from bench.southbound_support import switch_host
from bench.switch_tls import bench_tls

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(
    r"^\s+(?P<targets>\d+) (?P<mode>baseline|sluice)\s+(?P<wall>\d+\.\d\d)s\s+\d+\.\d\s+"
    r"\d+\.\d{3}\s+\d+\.\d\ds\s+\d+\.\d\ds\s+(?P<rss>\d+) MB\s+(?P<gets>\d+)\s+(?P<converged>\d+)$"
)


def test_bench_runs_at_tiny_sizes_and_every_target_converges() -> None:
    flags = ["--sizes", "6,10", "--ports", "4", "--hosts", "2", "--baseline-max", "6"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.reconcile_scale_bench", *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [m.groupdict() for line in done.stdout.splitlines() if (m := ROW.match(line))]
    assert [(r["targets"], r["mode"]) for r in rows] == [
        ("6", "baseline"),
        ("6", "sluice"),
        ("10", "sluice"),
    ]
    for r in rows:
        # A no-drift pass: one Get per target, every target converged.
        assert r["gets"] == r["converged"] == r["targets"]
        assert int(r["rss"]) > 0
    assert "speed-up at 6 (baseline wall / sluice wall)" in done.stdout
    assert "sluice: ms/target relative to 6 targets: 6: 1.00, 10: " in done.stdout
    reproduce = done.stdout.strip().splitlines()[-1]
    assert reproduce == "reproduce: uv run python -m bench.reconcile_scale_bench " + " ".join(flags)


@pytest.mark.parametrize("mode", ["baseline", "sluice"])
def test_a_pass_that_finds_drift_stops_the_bench(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = secrets.token_hex(8)
    monkeypatch.setenv(PASSWORD_ENV, password)
    # The switches hold the state for 4 ports; the controller wants 8: every target drifts.
    spec = {"layout": "fleet", "switches": 3, "ports": 4, "converged": True, "validate_once": True}
    with bench_tls() as tls, switch_host(spec, password, tls) as (host, ports):
        figures = one_pass(mode, 3, 8, {host.pid: ports["fleet"]}, (2, 4), host.tls)
        assert host.stats().sets == 0  # alert mode: found, never written
    assert (figures.gets, figures.converged, len(figures.problems)) == (3, 0, 3)
    assert all("alerted" in why for _, why in figures.problems)
    with pytest.raises(SystemExit, match="not every target converged"):
        require_converged(figures)
