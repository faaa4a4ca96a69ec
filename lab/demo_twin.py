"""The demo's what-if step: the example intent run in the packet-level twin (netsim) with the
``sluice twin`` command an operator would type, then the same flows with storage's DWRR
weight raised, side by side (docs/netsim.md, "The twin"). A short run: a few hundred flows."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from controller.settings import TwinSettings
from lab.demo_common import run, say

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
FLOWS = "400"


def heavier_storage(intent_file: Path, run_dir: Path) -> Path:
    """A copy of the intent with storage's weight raised from 50 to 400."""
    document = yaml.safe_load(intent_file.read_text(encoding="utf-8"))
    for service_class in document.get("service_classes", []):
        if service_class.get("name") == "storage":
            service_class["scheduling"]["weight"] = 400
    out = run_dir / "intent-storage-400.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def twin_step(env: dict[str, str], intent_file: Path, run_dir: Path) -> None:
    """Print the per-class FCT table for the intent, then the weight change's deltas."""
    if not TwinSettings().netsim.is_file():
        say("building the packet-level twin (cargo build -p netsim)")
        run(
            ["cargo", "build", "-q", "-p", "netsim", "--manifest-path", str(REPO / "Cargo.toml")],
            env,
        )
    sluice = str(BIN / "sluice")
    say("what-if: the example intent in the packet-level twin, web search at load 0.6")
    run([sluice, "twin", "-f", str(intent_file), "--flows", FLOWS, "--load", "0.6"], env)
    say("what-if: storage's DWRR weight 50 -> 400, storage and best-effort sharing load 0.8")
    mix = ["--mix", "storage=0.5,best-effort=0.5", "--load", "0.8", "--flows", FLOWS]
    other = heavier_storage(intent_file, run_dir)
    run([sluice, "twin", "-f", str(intent_file), "--compare", str(other), *mix], env)
