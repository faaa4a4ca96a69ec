"""Smoke test of the compile benchmark (bench/compile_bench.py) at a tiny size.

It runs as a command, each path in its own process, prints every row for every size asked,
and the old and new no-drift diffs both came out empty (the script exits non-zero
otherwise). No timing assertions.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STEPS = (
    "old compile",
    "new compile",
    "old no-drift diff",
    "new no-drift diff",
    "old compile + no-drift diff",
    "new compile + no-drift diff",
    "new: digest observed from scratch",
    "all-adds diff",
    "baseline: plain copy",
)


def test_compile_bench_prints_old_beside_new_for_each_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.compile_bench", "--switches", "3", "5", "--ports", "4"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if re.match(r"^\s+\d+ ", line)]
    for size in (3, 5):
        labels = [line.split(None, 1)[1] for line in rows if line.split()[0] == str(size)]
        assert len(labels) == len(STEPS)
        assert all(label.startswith(step) for label, step in zip(labels, STEPS, strict=True))
    # The all-adds diff makes one op per entry of every switch.
    adds = re.search(r"^\s+5 all-adds diff \((\d+) ops\)", done.stdout, re.M)
    copied = re.search(r"^\s+5 baseline: plain copy \((\d+) entries\)", done.stdout, re.M)
    assert adds is not None
    assert copied is not None
    assert int(adds.group(1)) == int(copied.group(1)) > 0
    assert "reproduce: uv run python -m bench.compile_bench --switches 3 5 --ports 4" in done.stdout
