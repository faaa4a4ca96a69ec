"""One netsim run as the benches take it: the summary (JSON) and the per-flow rows (its
``--csv``), from the binary given."""

from __future__ import annotations

import csv
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any


def run_with_rows(
    netsim: Path, config: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """netsim's summary and per-flow rows (``src``, ``dst``, ``bytes``, ``fct_ns``, ...) for one
    run of ``config``."""
    with tempfile.TemporaryDirectory() as tmp:
        path, rows = Path(tmp) / "run.json", Path(tmp) / "flows.csv"
        path.write_text(json.dumps(config))
        out = subprocess.run(
            [str(netsim), "run", "--quiet", "--config", str(path), "--csv", str(rows)],
            check=True,
            capture_output=True,
            text=True,
        )
        with rows.open(newline="") as handle:
            flows = list(csv.DictReader(handle))
    summary: dict[str, Any] = json.loads(out.stdout)
    return summary, flows
