"""Smoke test of the body-memory benchmark (bench/api_body_memory.py) at a small size: it runs
as a command against a served API and prints both rows, the small body refused for its
content (422) and the large one for its size (413). No memory or timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_body_bench_prints_the_refusals_and_the_growth_share() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.api_body_memory", "--body-mb", "24"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if " body" in line]
    statuses = [row[-3] for row in rows if len(row) > 4 and row[-3].isdigit()]
    assert statuses == ["422", "413"], done.stdout
    assert "growth_over_body" in json.loads(done.stdout.splitlines()[-1])
