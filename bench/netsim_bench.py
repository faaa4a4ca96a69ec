"""netsim benchmark: speed and flow completion times against ns-3.37 on the same flows.

Two runs in one invocation:

1. The ns-3 comparison: a 2-leaf x 2-spine fabric, 16 hosts per leaf on 10 Gb/s links (the
   leaf-spine links 40 Gb/s, so the fabric is not 8:1 oversubscribed), DCTCP with K = 65
   packets and 200-packet port buffers, RTO floor 5 ms, web search flows at load 0.6. netsim
   draws the flows and writes them out; ``bench/netsim_ns3.cc`` (built here with g++ against
   Debian's libns3-dev, installed here with apt-get if missing) runs the very same flows in
   ns-3. Reported side by side: wall and CPU time, events/s, peak memory, and FCT (mean,
   median, p99) per size bucket.
2. netsim alone on the 144-host fabric of the PIAS simulations (9 leaves x 4 spines x 16
   hosts, 10/40 Gb/s), web search at load 0.6.

Reproduce: ``uv run python -m bench.netsim_bench`` (``--flows N`` for the comparison, default
600; ``--big-flows N`` for the 144-host run, default 5000; ``--json PATH`` for the numbers).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsonic.tether import start_tethered

ROOT = Path(__file__).resolve().parents[1]
NETSIM = ROOT / "target" / "release" / "netsim"
NS3_SOURCE = ROOT / "bench" / "netsim_ns3.cc"
NS3_BINARY = ROOT / "target" / "netsim_ns3"
NS3_LIBS = ["core", "network", "internet", "point-to-point", "applications", "traffic-control"]
REPRODUCE = "uv run python -m bench.netsim_bench"
BUCKETS = (("small", 0, 100_000), ("medium", 100_000, 10_000_000), ("large", 10_000_000, 1 << 62))

# DCTCP's marking step at 10 Gb/s: 65 packets (the DCTCP guidance in the Linux kernel's
# Documentation/networking/dctcp.rst), and the PIAS simulations' 200-240 packet port buffers.
K_PACKETS = 65
BUFFER_PACKETS = 200
MIN_RTO_MS = 5
LINK_DELAY_US = 1.0


@dataclass(frozen=True)
class Measured:
    """One process's cost."""

    wall_s: float
    cpu_s: float
    max_rss_mb: float


def run_measured(cmd: list[str]) -> tuple[Measured, str]:
    """Runs ``cmd`` to completion; its wall time, CPU time and peak memory (wait4's rusage)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = start_tethered(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024), text


def build_netsim() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "netsim"], cwd=ROOT, check=True)


def ensure_ns3() -> None:
    """Installs Debian's ns-3 3.37 if its headers are missing, then builds the driver."""
    if not Path("/usr/include/ns3/core-module.h").exists():
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", "libns3-dev", "g++"],
            check=True,
            env=env,
        )
    if NS3_BINARY.exists() and NS3_BINARY.stat().st_mtime >= NS3_SOURCE.stat().st_mtime:
        return
    NS3_BINARY.parent.mkdir(parents=True, exist_ok=True)
    libs = [f"-lns3-{lib}" for lib in NS3_LIBS]
    compiler = shutil.which("g++") or "g++"
    subprocess.run(
        [compiler, "-O2", "-std=c++17", str(NS3_SOURCE), "-o", str(NS3_BINARY), *libs], check=True
    )


def comparison_config(flows: int) -> dict[str, Any]:
    return {
        "seed": 1,
        "topology": {
            "leaves": 2,
            "spines": 2,
            "hosts_per_leaf": 16,
            "host_link_bps": 10e9,
            "fabric_link_bps": 40e9,
            "host_link_delay_ns": LINK_DELAY_US * 1e3,
            "fabric_link_delay_ns": LINK_DELAY_US * 1e3,
            "ecmp": "destination",
        },
        # Without SACK, as the ns-3 side runs (netsim_ns3.cc: Sack false, classic recovery).
        "tcp": {"cc": "dctcp", "min_rto_ns": MIN_RTO_MS * 1e6, "init_cwnd": 10.0, "sack": False},
        "qos": {
            "scheme": "dctcp",
            "k_bytes": K_PACKETS * 1500,
            "port_buffer_bytes": BUFFER_PACKETS * 1500,
        },
        "traffic": [{"kind": "poisson", "workload": "websearch", "load": 0.6, "flows": flows}],
    }


def big_config(flows: int) -> dict[str, Any]:
    config = comparison_config(flows)
    config["topology"] = {
        "leaves": 9,
        "spines": 4,
        "hosts_per_leaf": 16,
        "host_link_bps": 10e9,
        "fabric_link_bps": 40e9,
        "host_link_delay_ns": LINK_DELAY_US * 1e3,
        "fabric_link_delay_ns": LINK_DELAY_US * 1e3,
        "ecmp": "flow",
    }
    return config


def run_netsim(
    config: dict[str, Any], work: Path, name: str
) -> tuple[Measured, dict[str, Any], Path]:
    config_path, summary_path, flows_path = (
        work / f"{name}{s}" for s in (".json", ".summary.json", ".csv")
    )
    config_path.write_text(json.dumps(config))
    cmd = [
        str(NETSIM),
        "run",
        "--quiet",
        "--config",
        str(config_path),
        "--json",
        str(summary_path),
        "--csv",
        str(flows_path),
    ]
    measured, _ = run_measured(cmd)
    summary: dict[str, Any] = json.loads(summary_path.read_text())
    return measured, summary, flows_path


def run_ns3(flows_path: Path, work: Path) -> tuple[Measured, int, Path]:
    out = work / "ns3_fct.csv"
    args = [
        "2",
        "2",
        "16",
        "10",
        "40",
        str(LINK_DELAY_US),
        str(K_PACKETS),
        str(BUFFER_PACKETS),
        str(MIN_RTO_MS),
    ]
    measured, text = run_measured([str(NS3_BINARY), str(flows_path), str(out), *args])
    events = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("events "))
    return measured, events, out


def percentile(values: list[float], p: float) -> float:
    """Nearest rank, as netsim's report computes it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def bucket_stats(sizes: list[int], fcts_us: list[float]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, low, high in BUCKETS:
        chosen = [f for s, f in zip(sizes, fcts_us, strict=True) if low < s <= high and f >= 0]
        if chosen:
            out[name] = {
                "flows": len(chosen),
                "mean_us": sum(chosen) / len(chosen),
                "median_us": percentile(chosen, 50),
                "p99_us": percentile(chosen, 99),
            }
    return out


def compare(flows: int, work: Path) -> dict[str, Any]:
    netsim_cost, summary, flows_path = run_netsim(comparison_config(flows), work, "compare")
    ns3_cost, ns3_events, ns3_out = run_ns3(flows_path, work)
    # The same run with pure ACKs not ECN-capable: ns-3's RED then drops them where it would
    # mark them, which is what the FCT tails suggest ns-3's TcpDctcp does (docs/benchmarks.md).
    plain_acks = comparison_config(flows)
    plain_acks["tcp"]["ect_acks"] = False
    _, _, plain_path = run_netsim(plain_acks, work, "compare_plain_acks")
    sizes = [int(r["bytes"]) for r in read_csv(flows_path)]
    theirs = [float(r["fct_ns"]) / 1e3 for r in read_csv(ns3_out)]
    return {
        "flows": flows,
        "netsim": {
            **vars(netsim_cost),
            "events": summary["tally"]["events"],
            "buckets": bucket_stats(sizes, fcts_us(flows_path)),
            "buckets_plain_acks": bucket_stats(sizes, fcts_us(plain_path)),
        },
        "ns3": {**vars(ns3_cost), "events": ns3_events, "buckets": bucket_stats(sizes, theirs)},
        "ns3_unfinished": sum(1 for t in theirs if t < 0),
    }


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def fcts_us(flows_path: Path) -> list[float]:
    """netsim's per-flow FCTs, us (-1 for an unfinished flow)."""
    return [float(r["fct_ns"]) / 1e3 if r["fct_ns"] else -1.0 for r in read_csv(flows_path)]


def big_run(flows: int, work: Path) -> dict[str, Any]:
    cost, summary, _ = run_netsim(big_config(flows), work, "big")
    return {
        "flows": flows,
        **vars(cost),
        "events": summary["tally"]["events"],
        "simulated_ns": summary["simulated_ns"],
        "buckets": summary["buckets"],
    }


def cost_row(name: str, m: dict[str, Any]) -> str:
    per_cpu_s = m["events"] / max(m["cpu_s"], 1e-9)
    return (
        f"{name:<10}{m['wall_s']:>9.2f}{m['cpu_s']:>9.2f}{m['events']:>12,}"
        f"{per_cpu_s:>14,.0f}{m['max_rss_mb']:>9.1f}"
    )


def fct_rows(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    rows = []
    for name, _, _ in BUCKETS:
        a, b = ours.get(name), theirs.get(name)
        if not a or not b:
            continue
        pair = [f"{a[k]:>9.0f}/{b[k]:<8.0f}" for k in ("mean_us", "median_us", "p99_us")]
        diff = (a["p99_us"] - b["p99_us"]) / b["p99_us"] * 100
        rows.append(f"{name:<8}{a['flows']:>6}{''.join(pair)}{diff:>+9.1f}%")
    return rows


def render(r: dict[str, Any]) -> str:
    c = r["compare"]
    ours, theirs = c["netsim"], c["ns3"]
    cpu_ratio = theirs["cpu_s"] / max(ours["cpu_s"], 1e-9)
    wall_ratio = theirs["wall_s"] / max(ours["wall_s"], 1e-9)
    rows = [
        "netsim vs ns-3.37: 2 leaves x 2 spines x 16 hosts (10/40 Gb/s), "
        f"DCTCP K={K_PACKETS} pkts, web search load 0.6, {c['flows']} flows "
        f"(ns-3 unfinished: {c['ns3_unfinished']})",
        f"{'':<10}{'wall s':>9}{'CPU s':>9}{'events':>12}{'events/CPU s':>14}{'peak MB':>9}",
        cost_row("netsim", ours),
        cost_row("ns-3", theirs),
        f"ns-3 / netsim: {cpu_ratio:.1f}x the CPU time, {wall_ratio:.1f}x the wall time",
        f"{'bucket':<8}{'flows':>6}{'mean us':>18}{'median us':>18}{'p99 us':>18}{'p99 diff':>10}",
    ]
    for label, key in (
        ("ECT pure ACKs (netsim's DCTCP)", "buckets"),
        ("pure ACKs not ECT", "buckets_plain_acks"),
    ):
        rows.append(f"netsim with {label}:")
        rows.extend(fct_rows(ours[key], theirs["buckets"]))
    rows.append("(pairs are netsim/ns-3)")
    big = r["big"]
    big_rate = big["events"] / max(big["cpu_s"], 1e-9)
    rows.append(
        "netsim, 144 hosts (9 leaves x 4 spines, 10/40 Gb/s), web search load 0.6, "
        f"{big['flows']} flows: {big['wall_s']:.1f} s wall, {big['cpu_s']:.1f} s CPU, "
        f"{big['events']:,} events ({big_rate:,.0f}/CPU s), "
        f"{big['simulated_ns'] / 1e6:.1f} ms simulated, peak {big['max_rss_mb']:.0f} MB"
    )
    rows.append(f"reproduce: {REPRODUCE} --flows {c['flows']} --big-flows {big['flows']}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flows", type=int, default=600)
    parser.add_argument("--big-flows", type=int, default=5000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    build_netsim()
    ensure_ns3()
    with tempfile.TemporaryDirectory(prefix="netsim-bench-") as tmp:
        work = Path(tmp)
        result = {"compare": compare(args.flows, work), "big": big_run(args.big_flows, work)}
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
