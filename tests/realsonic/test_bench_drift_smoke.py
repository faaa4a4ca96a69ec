"""Smoke test of bench/drift_realsonic_bench.py at a tiny size: three drifts of one SCHEDULER
entry written into a real switch's CONFIG_DB, each reported by the ON_CHANGE drift watch
through SONiC's own gNMI server and through vsonic over the same redis. No timing
assertions: how long a report takes is the bench's figure."""

from __future__ import annotations

import pytest

from bench.drift_realsonic_bench import SERVERS, measure, render

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(300)]


def test_every_drift_is_reported_through_both_servers() -> None:
    r = measure(drifts=3, gap_s=0.5)
    for server in SERVERS:
        assert r[server]["seen"] == 3, (server, r[server])
        assert r[server]["missed"] == 0, server
        assert 0 < r[server]["median_ms"] <= r[server]["max_ms"], server
    assert "uv run python -m bench.drift_realsonic_bench --drifts 3" in render(r)
