"""netsim_repro's per-bucket report of a run's flows (pias-sets), on rows worked by hand:
netsim's size buckets (small up to 100 KB, medium to 10 MB, large above), nearest-rank p99,
unfinished flows left out of the means and counted, timeouts summed and flows timed out."""

from __future__ import annotations

import pytest

from bench.netsim_repro import bucket_report


def row(size: int, fct_us: float | None, timeouts: int = 0) -> dict[str, str]:
    return {
        "bytes": str(size),
        "fct_ns": "" if fct_us is None else str(fct_us * 1e3),
        "timeouts": str(timeouts),
    }


def test_buckets_split_at_netsim_bounds_and_count_what_did_not_finish() -> None:
    rows = [
        row(100_000, 10.0),  # small: the bound itself is small
        row(100_001, 300.0),  # medium
        row(10_000_000, 500.0, timeouts=1),  # medium
        row(10_000_001, 9000.0, timeouts=2),  # large
        row(20_000_000, 11000.0),
        row(30_000_000, None, timeouts=3),  # large, unfinished
    ]
    report = bucket_report(rows)
    assert report["small"] == pytest.approx(
        {
            "flows": 1,
            "unfinished": 0,
            "mean_us": 10.0,
            "p99_us": 10.0,
            "timeouts": 0,
            "timed_out": 0,
        }
    )
    assert report["medium"]["mean_us"] == pytest.approx(400.0)
    assert report["medium"]["timed_out"] == 1
    large = report["large"]
    assert (large["flows"], large["unfinished"]) == (3, 1)
    assert large["mean_us"] == pytest.approx(10_000.0)
    assert (large["timeouts"], large["timed_out"]) == (5, 2)


def test_p99_is_nearest_rank() -> None:
    # 200 finished flows of 1..200 us: rank ceil(0.99 x 200) = 198.
    report = bucket_report([row(1000, float(us)) for us in range(1, 201)])
    assert report["small"]["p99_us"] == 198.0
