"""Virtual ASIC benchmark: packets per second on a 64-port x 8-queue switch under load.

Builds and runs the ``vasic-bench`` binary (``sim/dataplane/src/bin/vasic_bench.rs``): every
port is offered 120 % of its 100 Gb/s line rate in 1500 B ECT packets over eight DWRR queues
with WRED/ECN and a dynamic buffer limit, so each packet takes the full path (admission,
marking, scheduling, counters). The baseline, measured in the same run, pushes the same
packets through plain ``VecDeque`` FIFOs: the least any queue model could cost.

Reproduce: ``uv run python -m bench.vasic_bench`` (``--packets N``, default 2,000,000).
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "target" / "release" / "vasic-bench"
BUILD = ["cargo", "build", "--release", "--quiet", "-p", "vswitch-dataplane", "--bin"]
REPRODUCE = "uv run python -m bench.vasic_bench"
# A 100 Gb/s port sends one 1500 B packet every 120 ns: 8.33 million packets per second.
LINE_RATE_PPS_100G = 100e9 / (1500 * 8)


def measure(packets: int) -> dict[str, Any]:
    subprocess.run([*BUILD, "vasic-bench"], cwd=ROOT, check=True)
    out = subprocess.run(
        [str(BINARY), "--packets", str(packets)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def render(r: dict[str, Any]) -> str:
    vasic_pps = r["packets"] / r["vasic_s"]
    base_pps = r["packets"] / r["baseline_s"]
    rows = [
        f"vasic benchmark: {r['ports']} ports x {r['queues']} queues, {r['packets']:,} packets "
        f"offered at 120 % of line rate ({r['departed']:,} sent in simulated time)",
        f"{'what':<38}{'seconds':>10}{'packets/s':>16}",
        f"{'vasic (admission, WRED/ECN, DWRR)':<38}{r['vasic_s']:>10.3f}{vasic_pps:>16,.0f}",
        f"{'baseline: bare VecDeque push/pop':<38}{r['baseline_s']:>10.3f}{base_pps:>16,.0f}",
        f"ratio vasic / baseline: {r['vasic_s'] / r['baseline_s']:.1f}x the time per packet",
        f"real time on this switch: {vasic_pps / LINE_RATE_PPS_100G:.2f} fully loaded 100G ports "
        f"(1500 B packets: {vasic_pps * 1500 * 8 / 1e9:,.0f} Gb/s of simulated traffic at most)",
        f"reproduce: {REPRODUCE} --packets {r['packets']}",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--packets", type=int, default=2_000_000)
    args = parser.parse_args(argv)
    if args.packets < 1:
        parser.error("--packets must be at least 1")
    print(render(measure(args.packets)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
