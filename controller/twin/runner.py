"""Runs the netsim binary on a run description (the I/O edge of the twin).

netsim writes its summary to a file (``--json``) and progress lines to stderr; each stderr
line is handed to ``on_progress`` as it arrives, so long runs show where they are.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.intent.models import Intent
from controller.twin.results import result
from controller.twin.translate import Request, translate

JsonObject = dict[str, Any]


class NetsimFailed(RuntimeError):
    """netsim is missing, exited non-zero, timed out or wrote no summary."""


def run_netsim(
    binary: Path,
    config: JsonObject,
    *,
    timeout_s: float,
    on_progress: Callable[[str], None] = lambda _line: None,
) -> JsonObject:
    """netsim's summary of ``config``."""
    if not binary.is_file():
        raise NetsimFailed(f"netsim binary not found at {binary} (cargo build -p netsim)")
    with tempfile.TemporaryDirectory(prefix="sluice-twin-") as work:
        config_path, summary_path = Path(work) / "run.json", Path(work) / "summary.json"
        config_path.write_text(json.dumps(config))
        command = [str(binary), "run", "--config", str(config_path), "--json", str(summary_path)]
        with subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        ) as process:
            last: list[str] = []
            try:
                assert process.stderr is not None  # set by stderr=PIPE
                for line in process.stderr:
                    last = [*last[-5:], line.rstrip()]
                    if line.startswith("netsim:"):
                        on_progress(line.rstrip())
                code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired as error:
                process.kill()
                raise NetsimFailed(f"netsim ran past {timeout_s} s") from error
        if code != 0 or not summary_path.is_file():
            raise NetsimFailed(f"netsim exited {code}: {' | '.join(last[-3:])}")
        summary: JsonObject = json.loads(summary_path.read_text())
        return summary


def run_twin(
    intent: Intent,
    request: Request,
    binary: Path,
    *,
    timeout_s: float,
    on_progress: Callable[[str], None] = lambda _line: None,
) -> JsonObject:
    """The twin's result for ``intent`` under ``request``: FCT per class and per bucket, the
    lossless classes' drops, pauses and CNPs, and what the twin does not model."""
    twin = translate(intent, request)
    summary = run_netsim(binary, twin.config, timeout_s=timeout_s, on_progress=on_progress)
    return result(summary, twin.classes, twin.not_modelled, twin.lossless, twin.config["topology"])
