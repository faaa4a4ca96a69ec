"""Published results reproduced with netsim, one command each; tables on stdout, PNG plots.

- ``pias``: PIAS against DCTCP, small-flow (<= 100 KB) mean and 99th percentile FCT, web
  search and data mining, loads 0.5-0.8, on PIAS's simulated fabric (NSDI'15 §6.1: 144 hosts,
  9 leaves x 4 spines, 10 Gb/s host links; 240-packet port buffers, K = 65 packets; DCTCP
  with an initial window of 70 and a 2 ms RTO floor; the published demotion thresholds).
- ``pias-sets``: DCTCP and PIAS under each threshold set (published, sluice's byte-weighted
  derivation, the paper's M/M/1 chain, the M/G/1 model's optimum): small, medium and large
  flows' FCT and the large flows' timeouts; ``--leaves 1`` runs one leaf of the fabric.
- ``mqecn``: MQ-ECN against per-queue standard and per-queue minimum thresholds (NSDI'16
  §2.2, §5): one bottleneck port with 8 DWRR queues; 1, 2, 4 or 8 of them active; throughput
  and the port's queue, and a 4:3:2:1 weighted case.
- ``qjump``: QJUMP's level 7 under incast: one-packet messages from every host to one, in a
  strict top queue, against the same messages sharing the incast's queue; their delay
  against the fan-in bound 2nP/R (NSDI'15 §3).
- ``dynaq``: DynaQ against a shared buffer with a dynamic threshold, a transport without
  ECN: 4 DWRR queues weighted 4:3:2:1, 8 flows in some, 32 in others.
- ``hdcq``: HDCQ against PIAS and DCTCP (RED marking) under incast micro-bursts (HDCQ 2021
  §5.1, Table 1): long flows into one receiver, then S short flows (uniform up to 100 KB)
  from S more senders at once; the short flows' average FCT as S grows, at 1 Gb/s (Fig. 8a)
  and at 10 Gb/s with more senders (Fig. 9); HDCQ's promotion in flow order, always, and
  not at all.
- ``lossless``: an incast into a lossless class with sluice's computed PFC (XOFF point,
  headroom, xon) and DCQCN's ECN against the same run with Kmax above the XOFF point
  (``bench/netsim_lossless.py``): lossless drops, pause time and frames, FCT of the incast and
  of a victim flow from one of its senders.

Reproduce: ``uv run python -m bench.netsim_repro pias`` (``--flows N`` per run, default
3000), ``... pias-sets`` (``--sets``, ``--leaves``, ``--seeds``), ``... mqecn``, ``... dynaq``,
``... qjump``, ``... lossless`` (``--incast`` the senders), ``... hdcq`` (``--senders`` and
``--senders-10g`` choose S, ``--seeds`` the seeds, ``--no-sack`` TCP without SACK,
``--spread-us`` the short flows' starts spread over that many us, ``--linux-rto`` Linux's RTO
rule, ``--rto-jitter`` each RTO timer stretched by up to that fraction). Results are recorded
in docs/reproductions.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import netsim_lossless
from bench.netsim_run import run_with_rows
from bench.pias_mlfq import mlfq_optimum
from controller.qos.buffers import dynaq_bounds
from controller.qos.pias import demotion_thresholds, load_workload
from controller.qos.pias_chain import chain_thresholds
from controller.qos.qjump import QjumpWindow, epoch_seconds, host_limiter, plan_levels
from controller.twin.translate import qjump_level

ROOT = Path(__file__).resolve().parents[1]
NETSIM = ROOT / "target" / "release" / "netsim"
IMAGES = ROOT / "docs" / "img"
PACKET = 1500
MSS = 1460
TEN_G = 10e9

# PIAS's demotion thresholds in packets of 1460 B (PIAS-NS2 scripts/run_pias_dctcp.py and
# run_pias_vl2.py, HKUST-SING/PIAS-NS2), by workload and load.
PIAS_THRESHOLDS = {
    "websearch": {
        0.5: [1059, 1412, 1643, 1869, 2008, 2115, 2184],
        0.6: [956, 1381, 1718, 2028, 2297, 2551, 2660],
        0.7: [999, 1305, 1564, 1763, 1956, 2149, 2309],
        0.8: [909, 1329, 1648, 1960, 2143, 2337, 2484],
        0.9: [759, 1132, 1456, 1737, 2010, 2199, 2325],
    },
    "datamining": {
        0.5: [805, 1106, 1401, 10693, 11970, 21162, 22272],
        0.6: [840, 1232, 1617, 11950, 12238, 21494, 25720],
        0.7: [907, 1301, 1619, 12166, 12915, 21313, 26374],
        0.8: [745, 1083, 1391, 13689, 14936, 21149, 27245],
        0.9: [750, 1083, 1416, 13705, 14952, 21125, 28253],
    },
}

# The thresholds of the scripts' first version (PIAS-NS2 @907b41c scripts/run_pias_dctcp.py,
# @3e0d2c1 run_pias_vl2.py, October 2015, one set for every load), which the authors replaced
# with the load-dependent ones above in December 2015 and March 2016 when, in the README's
# words, they updated the threshold derivation for the ToN version.
PIAS_THRESHOLDS_2015 = {
    "websearch": [46, 1084, 1717, 1943, 1989, 1999, 2001],
    "datamining": [257, 2107, 24703, 28915, 28984, 29000, 29016],
}

# PIAS's ns-2 ports (PIAS-NS2 scripts/run_pias_dctcp.py): queueSize 240 packets, DCTCP_K 65.
PIAS_BUFFER_PACKETS = 240
PIAS_K_PACKETS = 65

# What the PIAS paper reports for small flows against DCTCP (NSDI'15 §6.2): reductions of
# the mean of 37-47 % (web search) and 30-45 % (data mining), of the 99th percentile 40-51 %
# and 33-48 %, over loads 0.5-0.8.
PIAS_PAPER = {
    "websearch": {"mean": (37, 47), "p99": (40, 51)},
    "datamining": {"mean": (30, 45), "p99": (33, 48)},
}


def pyplot() -> ModuleType:
    """matplotlib's pyplot, headless; imported on first plot so that what only reads runs
    (pias-sets, the tests of the report) does not load it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def build() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "netsim"], cwd=ROOT, check=True)


def run(config: dict[str, Any]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(config, f)
        f.flush()
        out = subprocess.run(
            [str(NETSIM), "run", "--quiet", "--config", f.name],
            check=True,
            capture_output=True,
            text=True,
        )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def run_flows(config: dict[str, Any]) -> list[dict[str, str]]:
    """A run's per-flow rows (netsim's --csv: bytes, fct_ns, timeouts, ...)."""
    return run_with_rows(NETSIM, config)[1]


def pias_fabric(leaves: int = 9) -> dict[str, Any]:
    """PIAS's simulated fabric (9 leaves x 16 hosts, 4 spines); fewer leaves keep its links,
    delays and hosts per leaf (one leaf: the 16 servers of the paper's testbed, §6.1, at 10 G)."""
    return {
        "leaves": leaves,
        "spines": 4,
        "hosts_per_leaf": 16,
        "host_link_bps": TEN_G,
        "fabric_link_bps": 40e9,
        "host_link_delay_ns": 20_000.0,
        "fabric_link_delay_ns": 200.0,
        "ecmp": "flow",
    }


def pias_config(
    workload: str,
    load: float,
    scheme: str,
    flows: int,
    thresholds: list[int] | None = None,
    seed: int = 1,
    leaves: int = 9,
) -> dict[str, Any]:
    """One PIAS-fabric run; ``thresholds`` (bytes) replaces the published set for PIAS."""
    k, buffer = PIAS_K_PACKETS * PACKET, PIAS_BUFFER_PACKETS * PACKET
    qos: dict[str, Any]
    if scheme == "pias":
        if thresholds is None:
            thresholds = [t * MSS for t in PIAS_THRESHOLDS[workload][load]]
        qos = {
            "scheme": "pias",
            "thresholds_bytes": thresholds,
            "k_bytes": k,
            "port_buffer_bytes": buffer,
        }
    else:
        qos = {"scheme": "dctcp", "k_bytes": k, "port_buffer_bytes": buffer}
    # ns-2's host links carry the same queue as the switch links (PIAS-NS2
    # scripts/spine_empirical.tcl: every duplex-link is $switchAlg, Queue/Priority): the same
    # 240-packet limit, the same strict priority queues and the same per-port marking at K.
    # Without the marking, a large flow alone on its NIC sees no congestion signal, fills the
    # NIC queue and delays its host's small flows (by up to an RTO under DCTCP's one queue).
    qos["host_buffer_bytes"] = buffer
    qos["host_ecn"] = True
    return {
        "seed": seed,
        "topology": pias_fabric(leaves),
        # maxcwnd_ = queueSize - 1 packets in the same script.
        "tcp": {
            "cc": "dctcp",
            "init_cwnd": 70.0,
            "min_rto_ns": 2e6,
            "initial_rto_ns": 2e6,
            "max_cwnd": float(PIAS_BUFFER_PACKETS - 1),
        },
        "qos": qos,
        "traffic": [{"kind": "poisson", "workload": workload, "load": load, "flows": flows}],
    }


def small(summary: dict[str, Any]) -> dict[str, Any]:
    return next(b for b in summary["buckets"] if b["name"] == "small")


def pias(flows: int, loads: list[float], workloads: list[str]) -> None:
    rows = [
        f"PIAS vs DCTCP, small flows (<= 100 KB), {flows} flows per run, 144 hosts",
        f"{'workload':<11}{'load':>5}{'DCTCP mean':>12}{'PIAS mean':>11}{'cut':>7}"
        f"{'DCTCP p99':>11}{'PIAS p99':>10}{'cut':>7}   paper cut (mean, p99)",
    ]
    fig, axes = pyplot().subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=True):
        series: dict[str, list[float]] = {
            "DCTCP mean": [],
            "PIAS mean": [],
            "DCTCP p99": [],
            "PIAS p99": [],
        }
        for load in loads:
            d = small(run(pias_config(workload, load, "dctcp", flows)))
            p = small(run(pias_config(workload, load, "pias", flows)))
            cut_mean = (1 - p["mean_us"] / d["mean_us"]) * 100
            cut_p99 = (1 - p["p99_us"] / d["p99_us"]) * 100
            paper = PIAS_PAPER[workload]
            rows.append(
                f"{workload:<11}{load:>5.1f}{d['mean_us']:>12.0f}{p['mean_us']:>11.0f}{cut_mean:>6.0f}%"
                f"{d['p99_us']:>11.0f}{p['p99_us']:>10.0f}{cut_p99:>6.0f}%"
                f"   {paper['mean'][0]}-{paper['mean'][1]}%, {paper['p99'][0]}-{paper['p99'][1]}%"
            )
            print(rows[-1], flush=True)
            series["DCTCP mean"].append(d["mean_us"])
            series["PIAS mean"].append(p["mean_us"])
            series["DCTCP p99"].append(d["p99_us"])
            series["PIAS p99"].append(p["p99_us"])
        for label, values in series.items():
            style = "-" if "mean" in label else "--"
            ax.plot(loads, values, style, marker="o", label=label)
        ax.set_title(f"{workload}: small-flow FCT")
        ax.set_xlabel("load")
        ax.set_ylabel("FCT (us)")
        ax.set_yscale("log")
        ax.legend()
    save(fig, f"netsim_pias_{'_'.join(workloads)}.png")
    print("\n".join(rows))


# netsim's size buckets (sim/netsim/src/report.rs, PIAS NSDI'15 §6.1), bytes: upper bounds.
FCT_BUCKETS = (("small", 100_000), ("medium", 10_000_000), ("large", None))


def pias_threshold_sets(workload: str, load: float) -> dict[str, list[int]]:
    """PIAS's threshold sets compared (bytes): the published one; sluice's derivation (the
    byte-weighted model, the product's default); the paper's M/M/1 chain solved exactly; the
    optimum of the M/G/1 model of the MLFQ (bench/pias_mlfq.py); and a hybrid of the last and
    the published one."""
    cdf = load_workload(workload)
    published = [t * MSS for t in PIAS_THRESHOLDS[workload][load]]
    optimum = mlfq_optimum(cdf, load, 8)
    return {
        "published": published,
        "sluice (byte-weighted)": demotion_thresholds(cdf, load, 8),
        "M/M/1 chain": chain_thresholds(cdf, load, 8),
        "M/G/1 model optimum": optimum,
        # Which end of a set does what: the optimum's fine top thresholds with the published
        # set's shallow last two (both rise: the optimum's fifth lies below them here).
        "M/G/1 top, published tail": [*optimum[:5], *published[5:]],
    }


def bucket_report(rows: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    """Per size bucket: flows, finished, mean and p99 FCT (us), timeouts, flows timed out."""
    report: dict[str, dict[str, float]] = {}
    lower = 0
    for name, upper in FCT_BUCKETS:
        inside = [r for r in rows if lower < int(r["bytes"]) <= (upper or float("inf"))]
        fct = sorted(float(r["fct_ns"]) / 1e3 for r in inside if r["fct_ns"])
        report[name] = {
            "flows": len(inside),
            "unfinished": len(inside) - len(fct),
            "mean_us": statistics.fmean(fct) if fct else float("nan"),
            "p99_us": fct[max(0, -(-99 * len(fct) // 100) - 1)] if fct else float("nan"),
            "timeouts": sum(int(r["timeouts"]) for r in inside),
            "timed_out": sum(1 for r in inside if int(r["timeouts"]) > 0),
        }
        lower = upper or lower
    return report


def over_seeds(runs: list[dict[str, dict[str, float]]], bucket: str, key: str) -> float:
    return statistics.fmean(r[bucket][key] for r in runs)


def total(runs: list[dict[str, dict[str, float]]], bucket: str, key: str) -> int:
    return int(sum(r[bucket][key] for r in runs))


def pias_sets(
    flows: int,
    loads: list[float],
    workloads: list[str],
    seeds: list[int],
    only: list[str],
    leaves: int,
) -> None:
    """DCTCP and PIAS under each threshold set: what the thresholds change for small and
    large flows, and whether large flows' losses to DCTCP come with timeouts."""
    print(
        f"PIAS threshold sets vs DCTCP, {flows} flows per run, seeds {seeds}, {16 * leaves} hosts;"
        " FCT in us"
        " (means over seeds); TO: timeouts / flows timed out",
        flush=True,
    )
    print(
        f"{'workload':<11}{'load':>5} {'scheme':<24}{'small':>8}{'small p99':>10}{'medium':>9}"
        f"{'large':>9}{'large vs DCTCP':>15}{'large TO':>10}{'unfinished':>11}",
        flush=True,
    )
    for workload in workloads:
        for load in loads:
            schemes: dict[str, list[int] | None] = {"DCTCP": None}
            schemes.update(pias_threshold_sets(workload, load))
            schemes = {k: v for k, v in schemes.items() if k == "DCTCP" or not only or k in only}
            dctcp_large = float("nan")
            for scheme, thresholds in schemes.items():
                kind = "dctcp" if thresholds is None else "pias"
                per_seed = [
                    bucket_report(
                        run_flows(
                            pias_config(workload, load, kind, flows, thresholds, seed, leaves)
                        )
                    )
                    for seed in seeds
                ]

                large = over_seeds(per_seed, "large", "mean_us")
                if thresholds is None:
                    dctcp_large = large
                small, small_p99, medium = (
                    over_seeds(per_seed, bucket, key)
                    for bucket, key in (
                        ("small", "mean_us"),
                        ("small", "p99_us"),
                        ("medium", "mean_us"),
                    )
                )
                timeouts = total(per_seed, "large", "timeouts")
                timed_out = total(per_seed, "large", "timed_out")
                unfinished = sum(total(per_seed, b, "unfinished") for b, _ in FCT_BUCKETS)
                print(
                    f"{workload:<11}{load:>5.1f} {scheme:<24}{small:>8.0f}{small_p99:>10.0f}"
                    f"{medium:>9.0f}{large:>9.0f}{(large / dctcp_large - 1) * 100:>14.1f}%"
                    f"{timeouts:>5}/{timed_out:<4}{unfinished:>11}",
                    flush=True,
                )


def mqecn_config(aqm: Any, k_each: int | None, active: int, weights: list[int]) -> dict[str, Any]:
    # Two long-lived DCTCP senders per active queue, all to one receiver (host 16): its leaf
    # port is the bottleneck. MQ-ECN's simulations (NSDI'16 §5; MQ-ECN-NS2 scripts): 10 Gb/s,
    # 0.2 us links, 20 us at the hosts, K_std = 65 packets, DCTCP with g = 1/16.
    queues = [{"sched": {"dwrr": weights[i]}, "ecn_k_bytes": k_each} for i in range(8)]
    flows = [
        {"src": 2 * q + s, "dst": 16, "bytes": 1 << 40, "start_ns": 0.0, "class": q}
        for q in range(active)
        for s in range(2)
    ]
    return {
        "seed": 1,
        "topology": {
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": 17,
            "host_link_bps": TEN_G,
            "fabric_link_bps": TEN_G,
            "host_link_delay_ns": 20_000.0,
            "fabric_link_delay_ns": 200.0,
        },
        "tcp": {"cc": "dctcp", "init_cwnd": 16.0, "min_rto_ns": 5e6},
        "qos": {
            "scheme": "custom",
            "queues": queues,
            "aqm": aqm,
            "port_buffer_bytes": 2_000_000,
            "quantum_unit_bytes": PACKET,
            "tagging": "by_class",
        },
        "traffic": [{"kind": "flows", "flows": flows}],
        "end_ns": 60e6,
        "watch": {"switch": 0, "port": 16, "every_ns": 10_000.0, "from_ns": 20e6},
    }


MQECN_SCHEMES: dict[str, tuple[Any, int | None]] = {
    "per-queue standard (K)": ("per_queue", 65 * PACKET),
    "per-queue minimum (K/8)": ("per_queue", 65 * PACKET // 8),
    "MQ-ECN": ({"mqecn": {"k_std_bytes": 65.0 * PACKET}}, None),
}


def mqecn() -> None:
    actives = [1, 2, 4, 8]
    rows = [
        "MQ-ECN vs per-queue thresholds: 8 DWRR queues (equal quanta), "
        "2 DCTCP flows per active queue",
        f"{'scheme':<26}{'active':>7}{'Gb/s':>7}{'mean queue KB':>15}{'p99 queue KB':>14}",
    ]
    fig, (ax_tput, ax_queue) = pyplot().subplots(1, 2, figsize=(10, 4))
    for name, (aqm, k_each) in MQECN_SCHEMES.items():
        tput, queue = [], []
        for active in actives:
            w = run(mqecn_config(aqm, k_each, active, [1] * 8))["watched"]
            total = sum(q["throughput_bps"] for q in w["queues"]) / 1e9
            tput.append(total)
            queue.append(w["mean_port_bytes"] / 1e3)
            rows.append(
                f"{name:<26}{active:>7}{total:>7.2f}{w['mean_port_bytes'] / 1e3:>15.1f}"
                f"{w['p99_port_bytes'] / 1e3:>14.1f}"
            )
        ax_tput.plot(actives, tput, marker="o", label=name)
        ax_queue.plot(actives, queue, marker="o", label=name)
    weights = [4, 3, 2, 1, 1, 1, 1, 1]
    rows.append("weighted 4:3:2:1 (4 active queues): share of the port, Gb/s per queue")
    for name, (aqm, k_each) in MQECN_SCHEMES.items():
        w = run(mqecn_config(aqm, k_each, 4, weights))["watched"]
        shares = " ".join(f"{q['throughput_bps'] / 1e9:5.2f}" for q in w["queues"][:4])
        mean_kb = w["mean_port_bytes"] / 1e3
        rows.append(
            f"{name:<26} {shares}  (fair: 4.00 3.00 2.00 1.00), mean queue {mean_kb:.1f} KB"
        )
    rows.extend(mqecn_testbed())
    ax_tput.set_title("bottleneck throughput")
    ax_tput.set_xlabel("active queues")
    ax_tput.set_ylabel("Gb/s")
    ax_tput.set_ylim(0, 11)
    ax_queue.set_title("mean bottleneck queue")
    ax_queue.set_xlabel("active queues")
    ax_queue.set_ylabel("KB")
    ax_tput.legend()
    save(fig, "netsim_mqecn.png")
    print("\n".join(rows))


def mqecn_testbed_config(aqm: Any, k_each: int | None) -> dict[str, Any]:
    # MQ-ECN's static-flow testbed experiment (NSDI'16 §5.1.1): 1 Gb/s, base RTT ~250 us
    # (62.5 us on each of the 4 host-link crossings of a round trip), 96 KB of buffer shared
    # by the port's queues, standard threshold 32 KB; service 1 (queue 0) has 1 flow from one
    # sender, service 2 (queue 1) 4 flows from another, equal quanta.
    queues = [{"sched": {"dwrr": 1}, "ecn_k_bytes": k_each} for _ in range(2)]
    flows = [{"src": 0, "dst": 2, "bytes": 1 << 40, "start_ns": 0.0, "class": 0}]
    flows += [{"src": 1, "dst": 2, "bytes": 1 << 40, "start_ns": 0.0, "class": 1} for _ in range(4)]
    return {
        "seed": 1,
        "topology": {
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": 3,
            "host_link_bps": 1e9,
            "fabric_link_bps": 1e9,
            "host_link_delay_ns": 62_500.0,
            "fabric_link_delay_ns": 1_000.0,
        },
        "tcp": {"cc": "dctcp", "init_cwnd": 10.0, "min_rto_ns": 10e6},
        "qos": {
            "scheme": "custom",
            "queues": queues,
            "aqm": aqm,
            "port_buffer_bytes": 96_000,
            "quantum_unit_bytes": PACKET,
            "tagging": "by_class",
        },
        "traffic": [{"kind": "flows", "flows": flows}],
        "end_ns": 1e9,
        "watch": {"switch": 0, "port": 2, "every_ns": 50_000.0, "from_ns": 200e6},
    }


def mqecn_testbed() -> list[str]:
    rows = [
        "MQ-ECN static flows (NSDI'16 §5.1.1): 1 Gb/s, services of 1 and 4 flows, K = 32 KB;",
        "paper: goodputs about equal, sum ~936 Mb/s; RTT 651 -> 441 us mean (standard -> MQ-ECN)",
        f"{'scheme':<26}{'service 1 Mb/s':>15}{'service 2 Mb/s':>15}{'mean RTT us':>13}",
    ]
    for name, (aqm, k_each) in {
        "per-queue standard (K)": ("per_queue", 32_000),
        "MQ-ECN": ({"mqecn": {"k_std_bytes": 32_000.0}}, None),
    }.items():
        w = run(mqecn_testbed_config(aqm, k_each))["watched"]
        s1, s2 = (q["throughput_bps"] / 1e6 for q in w["queues"])
        # RTT as ping would see it through service 2's queue: the base RTT plus the port's
        # backlog drained at 1 Gb/s (DWRR serves the other queue in between).
        rtt = 250.0 + w["mean_port_bytes"] * 8 / 1e9 * 1e6
        rows.append(f"{name:<26}{s1:>15.0f}{s2:>15.0f}{rtt:>13.0f}")
    return rows


DYNAQ_WEIGHTS = [4, 3, 2, 1]
DYNAQ_BUFFER = 200 * PACKET


def dynaq_agent(interval_ms: int) -> dict[str, Any]:
    """The qos-agent running DynaQ on the leaf's host ports, with the orders the controller
    compiles for it: bounds from the port buffer (``controller.qos.buffers.dynaq_bounds``),
    drop steps (the transport has no ECN)."""
    total = sum(DYNAQ_WEIGHTS)
    entries = []
    for q, w in enumerate(DYNAQ_WEIGHTS):
        b = dynaq_bounds(DYNAQ_BUFFER, w, total, PACKET)
        fields = {
            "wred_profile": f"SLUICE_Q_Ethernet0_{q}",
            "weight": str(w),
            "floor_bytes": str(b.floor_bytes),
            "ceiling_bytes": str(b.ceiling_bytes),
            "static_bytes": str(b.static_bytes),
            "speed_gbps": "10",
            "buffer_bytes": str(DYNAQ_BUFFER),
        }
        entries.append({"queue": q, "fields": fields})
    orders = {
        "algorithm": "dynaq",
        "interval_ms": str(interval_ms),
        "rtt_us": "100",
        "lambda": "1",
        "hysteresis_pct": "0",
        "hdcq_k": "0.06",
        "stale_after_ms": "1000",
        "queues": "0,1,2,3",
        "version": "repro",
    }
    return {"global": orders, "leaf_down": entries, "write": "drop_step"}


def dynaq_config(
    aqm: Any, dynamic_th: int | None, agent: dict[str, Any] | None = None
) -> dict[str, Any]:
    # 4 DWRR queues weighted 4:3:2:1; queues 0 and 2 carry 8 flows, queues 1 and 3 carry 32;
    # NewReno without ECN, so only drops signal congestion. Senders: 80 hosts, one flow each.
    weights = DYNAQ_WEIGHTS
    counts = [8, 32, 8, 32]
    queues = [{"sched": {"dwrr": w}, "dynamic_th": dynamic_th} for w in weights]
    flows, host = [], 0
    for q, n in enumerate(counts):
        for _ in range(n):
            flows.append({"src": host, "dst": 80, "bytes": 1 << 40, "start_ns": 0.0, "class": q})
            host += 1
    return {
        "seed": 1,
        "topology": {
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": 81,
            "host_link_bps": TEN_G,
            "fabric_link_bps": TEN_G,
            "host_link_delay_ns": 20_000.0,
            "fabric_link_delay_ns": 200.0,
        },
        "tcp": {"cc": "newreno", "ecn": False, "init_cwnd": 10.0, "min_rto_ns": 5e6},
        "qos": {
            "scheme": "custom",
            "queues": queues,
            "aqm": aqm,
            "port_buffer_bytes": DYNAQ_BUFFER,
            # The port's 300 KB are shared by its queues (netsim's default per-port buffer),
            # as in DynaQ's setting.
            "quantum_unit_bytes": PACKET,
            "tagging": "by_class",
            "agent": agent,
        },
        "traffic": [{"kind": "flows", "flows": flows}],
        "end_ns": 200e6,
        "watch": {"switch": 0, "port": 80, "every_ns": 10_000.0, "from_ns": 50e6},
    }


def dynaq() -> None:
    schemes: dict[str, tuple[Any, int | None, dict[str, Any] | None]] = {
        "shared buffer, dynamic_th 0": ("per_queue", 0, None),
        "DynaQ per packet": ("dynaq", None, None),
        "DynaQ agent, 1 ms": ("per_queue", None, dynaq_agent(1)),
        "DynaQ agent, 10 ms": ("per_queue", None, dynaq_agent(10)),
    }
    rows = [
        "DynaQ vs a dynamic-threshold shared buffer: 4 DWRR queues 4:3:2:1, "
        "flows 8/32/8/32, NewReno without ECN",
        f"{'scheme':<30}{'Gb/s per queue (fair: 4 3 2 1)':>34}{'Jain (weighted)':>17}",
    ]
    fig, ax = pyplot().subplots(figsize=(6, 4))
    width = 0.8 / len(schemes)
    for i, (name, (aqm, th, agent)) in enumerate(schemes.items()):
        w = run(dynaq_config(aqm, th, agent))["watched"]
        gbps = [q["throughput_bps"] / 1e9 for q in w["queues"]]
        normalised = [g / wt for g, wt in zip(gbps, [4, 3, 2, 1], strict=True)]
        jain = sum(normalised) ** 2 / (len(normalised) * sum(x * x for x in normalised))
        rows.append(f"{name:<30}{' '.join(f'{g:6.2f}' for g in gbps):>34}{jain:>17.3f}")
        ax.bar([q + i * width for q in range(4)], gbps, width, label=name)
    ax.plot(
        [q + width * (len(schemes) - 1) / 2 for q in range(4)],
        [4, 3, 2, 1],
        "k_",
        markersize=30,
        label="weighted fair share",
    )
    ax.set_xticks(
        [q + width * (len(schemes) - 1) / 2 for q in range(4)],
        ["q0 (8)", "q1 (32)", "q2 (8)", "q3 (32)"],
    )
    ax.set_ylabel("Gb/s")
    ax.legend()
    save(fig, "netsim_dynaq.png")
    print("\n".join(rows))


QJUMP_P_BYTES = 256
QJUMP_HOSTS = 16


def qjump_levels() -> dict[str, Any]:
    # Hosts' token buckets as sluice compiles them (controller/qos/qjump.py, plan_levels and
    # host_limiter, window aligned) and the twin hands them to netsim (qjump_level: tbf mtu P
    # and limit max(burst, P) on a level below the line rate): epoch 2nP/R (eps = 0), level 7
    # with f = 1 (P per epoch, burst P), level 0 with f = n (the throughput level, R/2 with
    # the mesochronous epoch).
    epoch_s = epoch_seconds(QJUMP_HOSTS, QJUMP_P_BYTES, TEN_G, 0.0)
    planned = plan_levels(QJUMP_HOSTS, QJUMP_P_BYTES, TEN_G, 0.0, {0: QJUMP_HOSTS, 7: 1.0})
    levels = []
    for p in planned:
        limiter = host_limiter(p, QJUMP_P_BYTES, epoch_s, QjumpWindow.ALIGNED)
        compiled = {
            "level": p.level,
            "rate_bps": limiter.rate_bps,
            "burst_bytes": limiter.bucket_bytes,
        }
        levels.append(qjump_level(compiled, int(TEN_G), QJUMP_P_BYTES))
    return {"levels": levels, "class_levels": [0, None, None, None, None, None, None, 7]}


def qjump_config(
    isolated: bool, buffer: str, shaped: bool = False, greed: int = 1
) -> dict[str, Any]:
    # 16 hosts (2 leaves x 8, one spine, 10 Gb/s, 1 us links). Every epoch each of the 15
    # other hosts sends host 0 one 256 B message at once: QJUMP's worst-case fan-in
    # (NSDI'15 §3). Every 500 us the same 15 hosts send host 0 200 KB each over DCTCP: the
    # incast that interferes. Isolated: the messages ride strict queue 7 (QJUMP level 7),
    # the incast queue 0; otherwise everything shares queue 0, as without QJUMP. ``greed``:
    # messages each host sends at once (a level-7 bucket holds one: f·P with f = 1).
    epoch_ns = 100_000.0
    flows: list[dict[str, Any]] = []
    level7 = 7 if isolated else 0
    for k in range(100):
        for h in range(1, QJUMP_HOSTS):
            payload = QJUMP_P_BYTES - 40
            message = {"src": h, "dst": 0, "bytes": payload, "start_ns": k * epoch_ns}
            flows.extend({**message, "class": level7} for _ in range(greed))
    for k in range(20):
        for h in range(1, QJUMP_HOSTS):
            flows.append(
                {"src": h, "dst": 0, "bytes": 200_000, "start_ns": k * 500e3 + 30e3, "class": 0}
            )
    queues = [{"sched": "strict", "ecn_k_bytes": 65 * PACKET} for _ in range(8)]
    return {
        "seed": 1,
        "topology": {
            "leaves": 2,
            "spines": 1,
            "hosts_per_leaf": QJUMP_HOSTS // 2,
            "host_link_bps": TEN_G,
            "fabric_link_bps": TEN_G,
            "host_link_delay_ns": 1_000.0,
            "fabric_link_delay_ns": 1_000.0,
        },
        "tcp": {"cc": "dctcp", "init_cwnd": 10.0, "min_rto_ns": 5e6},
        "qos": {
            "scheme": "custom",
            "queues": queues,
            "aqm": "per_queue",
            "port_buffer_bytes": 200 * PACKET,
            "buffer": buffer,
            "tagging": "by_class",
            "qjump": qjump_levels() if shaped else None,
        },
        "traffic": [{"kind": "flows", "flows": flows}],
    }


def qjump() -> None:
    # The bound on a level-7 message's queueing with n hosts fanning in over a multi-hop
    # network: 2 n P / R (QJUMP NSDI'15 §3), here 6.6 us, plus one low-priority packet in
    # transmission at each of the 3 switch hops it crosses (strict priority does not preempt).
    n, bound_us = QJUMP_HOSTS, 2 * QJUMP_HOSTS * QJUMP_P_BYTES * 8 / TEN_G * 1e6
    hol_us = 3 * PACKET * 8 / TEN_G * 1e6
    rows = [
        f"QJUMP level 7 under incast: {n} hosts, P = {QJUMP_P_BYTES} B, 10 Gb/s; "
        f"bound 2nP/R = {bound_us:.1f} us (+ {hol_us:.1f} us of non-preemption)",
        "message delay: its FCT minus its FCT in an idle fabric",
        "level-7 queueing: the worst wait at each switch position, added up",
        f"{'':<42}{'median us':>10}{'p99 us':>10}{'max us':>10}{'queueing us':>12}",
    ]
    fig, ax = pyplot().subplots(figsize=(6, 4))
    cases = (
        (False, "per_port", "one queue (no QJUMP)"),
        (True, "per_port", "level 7, port buffer shared"),
        (True, "switch_pool", "level 7, per-queue limits"),
        (True, "per_port", "level 7, port buffer shared, hosts shaped"),
        (True, "switch_pool", "level 7, per-queue limits, hosts shaped"),
        (True, "switch_pool", "10 at once, per-queue limits"),
        (True, "switch_pool", "10 at once, hosts shaped"),
    )
    for isolated, buffer, name in cases:
        shaped = "shaped" in name
        greed = 10 if name.startswith("10 at once") else 1
        with tempfile.TemporaryDirectory() as tmp:
            config = qjump_config(isolated, buffer, shaped, greed)
            path = Path(tmp) / "run.json"
            csv_path = Path(tmp) / "flows.csv"
            summary_path = Path(tmp) / "summary.json"
            path.write_text(json.dumps(config))
            subprocess.run(
                [
                    str(NETSIM),
                    "run",
                    "--quiet",
                    "--config",
                    str(path),
                    "--json",
                    str(summary_path),
                    "--csv",
                    str(csv_path),
                ],
                check=True,
            )
            lines = csv_path.read_text().splitlines()[1:]
            hops = json.loads(summary_path.read_text())["hops"]
        message_class = 7 if isolated else 0
        queueing = sum(
            row["max_us"]
            for row in hops["by_class"]
            if row["class"] == message_class and row["hop"] != "host_nic"
        )
        extra = sorted(
            (float(c[5]) - float(c[6])) / 1e3
            for c in (line.split(",") for line in lines)
            if int(c[2]) < 1_000 and c[5]
        )
        med, p99, top = extra[len(extra) // 2], extra[int(0.99 * (len(extra) - 1))], extra[-1]
        rows.append(f"{name:<42}{med:>10.1f}{p99:>10.1f}{top:>10.1f}{queueing:>12.1f}")
        ax.plot(extra, [i / len(extra) for i in range(len(extra))], label=name)
    ax.axvline(bound_us + hol_us, color="k", linestyle="--", label="2nP/R + non-preemption")
    ax.set_xscale("log")
    ax.set_xlabel("level-7 message delay over unloaded (us)")
    ax.set_ylabel("CDF")
    ax.legend()
    save(fig, "netsim_qjump.png")
    print("\n".join(rows))


# HDCQ's incast (HDCQ 2021 §4.1, Table 1, §5.1): 240-packet port buffer; L = 5 long flows;
# short flows start after the long ones have filled the queue; per-port ECN 60 % of the
# buffer, beta 0.5, k = 0.06 (netsim's HDCQ preset). The paper's 24 % is its largest cut
# against PIAS (Fig. 9, 10 Gb/s, S = 3000); Fig. 8a (1 Gb/s, S = 100-500) has no numbers in
# the text, only "HDCQ is better". The same incast, HDCQ and PIAS, seeds 1 and 2, is
# sim/netsim/tests/hdcq.rs (`incast_afct_ms`): the same draws, the same figures.
HDCQ_LONG = 5
HDCQ_BUFFER = 240 * PACKET
HDCQ_SHORT_START_NS = 50e6
HDCQ_SHORT_MAX_BYTES = 100_000
HDCQ_LINK_DELAY_NS = 25_000.0
HDCQ_RTT_NS = 4 * HDCQ_LINK_DELAY_NS
HDCQ_FLOW_TYPE_THRESH = 100 * 1024
# PIAS's and DCTCP's marking point: the same 60 % of the buffer (144 packets) HDCQ's per-port
# ECN uses, which the paper sets citing DCTCP (§4.2.1), so the schemes differ in queues and
# promotion, not in where the port starts marking.
HDCQ_K_BYTES = 144 * PACKET
# "HDCQ": netsim's preset, marked packets promoted to Q1 unless a packet of their flow waits
# in Q2 or Q3 (the paper's premise that promotion reorders nothing, §3.3.3; vasic's
# Promotion::FlowOrder). "HDCQ, promote always": every marked packet promoted, the reading
# before. "HDCQ, no promotion": HDCQ's queues, hosts and WRR with the 144-packet point as a
# plain per-port mark.
HDCQ_SCHEMES = ("DCTCP (RED)", "PIAS", "HDCQ", "HDCQ, promote always", "HDCQ, no promotion")


@dataclass(frozen=True)
class IncastTcp:
    """What the senders' TCP and the short flows' starts are, beside the defaults: SACK or
    not; the short flows' starts spread over ``spread_ns`` (netsim's ``uniform_incast``);
    Linux's RTO rule (``linux_rto``); each RTO timer stretched by up to ``rto_jitter`` (an
    instrument that desynchronizes the timeouts, docs/reproductions.md)."""

    sack: bool = True
    spread_ns: float = 0.0
    linux_rto: bool = False
    rto_jitter: float = 0.0

    def label(self) -> str:
        parts = [f"TCP {'with' if self.sack else 'without'} SACK"]
        if self.spread_ns:
            parts.append(f"starts spread over {self.spread_ns / 1e3:g} us")
        if self.linux_rto:
            parts.append("Linux's RTO")
        if self.rto_jitter:
            parts.append(f"RTO timers stretched by up to {self.rto_jitter:.0%}")
        return ", ".join(parts)

    def image(self) -> str:
        suffix = "" if self.sack else "_no_sack"
        suffix += "_spread" if self.spread_ns else ""
        suffix += "_linux_rto" if self.linux_rto else ""
        suffix += "_rto_jitter" if self.rto_jitter else ""
        return f"netsim_hdcq{suffix}.png"


def hdcq_config(
    scheme: str, speed_bps: float, senders: int, seed: int, tcp: IncastTcp = IncastTcp()
) -> dict[str, Any]:
    # Hosts 0..S-1 send one short flow each, the next L hosts long flows, the last host
    # receives everything: its leaf port is the bottleneck (the paper's Router1 -> R).
    receiver = senders + HDCQ_LONG
    longs: list[dict[str, Any]] = [
        {"src": h, "dst": receiver, "bytes": 1 << 40, "start_ns": 0.0, "class": 0}
        for h in range(senders, receiver)
    ]
    k = HDCQ_K_BYTES
    qos: dict[str, Any]
    if scheme == "HDCQ, no promotion":
        # HDCQ's queues and hosts with the per-port point as a plain per-port mark: what
        # Algorithm 2's promotion adds, measured by leaving it out.
        qos = {
            "scheme": "custom",
            "queues": [{"sched": {"wrr": 1}}, {"sched": {"wrr": 5}}, {"sched": "strict"}],
            "aqm": {"port_ecn": {"k_bytes": k}},
            "port_buffer_bytes": HDCQ_BUFFER,
            "quantum_unit_bytes": PACKET,
            "tagging": {
                "dscp": {
                    "classes": [
                        {
                            "dscp": 2,
                            "pias": {"thresholds_bytes": [HDCQ_FLOW_TYPE_THRESH], "dscp": [1]},
                        }
                    ],
                    "dscp_to_queue": [[2, 1], [1, 0]],
                }
            },
            "ack_queue": 2,
        }
    elif scheme.startswith("HDCQ"):
        qos = {
            "scheme": "hdcq",
            "flow_type_thresh_bytes": HDCQ_FLOW_TYPE_THRESH,
            "port_buffer_bytes": HDCQ_BUFFER,
            "wrr_weight": 5,
            "period_ns": HDCQ_RTT_NS,
            "promotion": "always" if scheme.endswith("always") else "flow_order",
        }
    elif scheme == "PIAS":
        # PIAS-Software's shipped setting: two priorities split at 100 KiB (README, params.c),
        # the same split as HDCQ's flow_type_thresh, so the switches are what differs.
        qos = {
            "scheme": "pias",
            "thresholds_bytes": [HDCQ_FLOW_TYPE_THRESH],
            "k_bytes": k,
            "port_buffer_bytes": HDCQ_BUFFER,
        }
    else:
        qos = {"scheme": "dctcp", "k_bytes": k, "port_buffer_bytes": HDCQ_BUFFER}
    qos["host_buffer_bytes"] = HDCQ_BUFFER
    return {
        "seed": seed,
        "topology": {
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": receiver + 1,
            "host_link_bps": speed_bps,
            "fabric_link_bps": speed_bps,
            "host_link_delay_ns": HDCQ_LINK_DELAY_NS,
            "fabric_link_delay_ns": 1_000.0,
        },
        "tcp": {
            "cc": "dctcp",
            "init_cwnd": 10.0,
            "min_rto_ns": 10e6,
            "initial_rto_ns": 10e6,
            "sack": tcp.sack,
            "linux_rto": tcp.linux_rto,
            "rto_jitter": tcp.rto_jitter,
        },
        "qos": qos,
        # The short flows first: their sizes are the seed's first draws (netsim's
        # `uniform_incast`, as the Rust test draws them).
        "traffic": [
            {
                "kind": "uniform_incast",
                "receiver": receiver,
                "senders": senders,
                "max_bytes": HDCQ_SHORT_MAX_BYTES,
                "at_ns": HDCQ_SHORT_START_NS,
                "spread_ns": tcp.spread_ns,
            },
            {"kind": "flows", "flows": longs},
        ],
        # Long enough for every short flow to finish through repeated timeouts (RTO backoff
        # doubles from 10 ms: thousands of senders into 240 packets at 10 Gb/s back off far).
        "end_ns": 3e9 if speed_bps < TEN_G else 30e9,
    }


def run_with_flows(config: dict[str, Any]) -> tuple[dict[str, Any], list[list[str]]]:
    """A run's summary and its per-flow CSV rows (netsim's ``--csv`` columns)."""
    summary, rows = run_with_rows(NETSIM, config)
    return summary, [list(row.values()) for row in rows]


def hdcq_point(
    speed_bps: float, senders: int, seed: int, tcp: IncastTcp
) -> dict[str, tuple[float, int, int, int, int]]:
    """Per scheme: the short flows' AFCT (ms), how many did not finish, the long flows'
    retransmitted segments, the duplicate segments receivers got (spurious
    retransmissions) and the short flows' timeouts, over the run."""
    out = {}
    for scheme in HDCQ_SCHEMES:
        summary, rows = run_with_flows(hdcq_config(scheme, speed_bps, senders, seed, tcp))
        shorts = small(summary)
        long_rtx = sum(int(r[9]) for r in rows if int(r[2]) > HDCQ_SHORT_MAX_BYTES)
        short_timeouts = sum(int(r[8]) for r in rows if int(r[2]) <= HDCQ_SHORT_MAX_BYTES)
        duplicates = int(summary["tally"]["duplicate_segments"])
        out[scheme] = (
            shorts["mean_us"] / 1e3,
            senders - shorts["flows"],
            long_rtx,
            duplicates,
            short_timeouts,
        )
    return out


def hdcq(senders_1g: list[int], senders_10g: list[int], seeds: list[int], tcp: IncastTcp) -> None:
    rows = [
        f"HDCQ vs PIAS and DCTCP under incast: {HDCQ_LONG} long flows, then S short flows "
        f"(uniform 1 B-100 KB) at once; {tcp.label()}",
        "paper: 1 Gb/s (Fig. 8a) HDCQ below PIAS and RED; 10 Gb/s (Fig. 9) about equal at "
        "S = 1000, HDCQ up to 24 % below PIAS at S = 3000",
        "short-flow AFCT, ms; then per scheme the long flows' retransmitted segments / the "
        "duplicate segments receivers got / the short flows' timeouts",
        f"{'Gb/s':>5}{'S':>6}{'seed':>5}"
        + "".join(f"{s:>22}" for s in HDCQ_SCHEMES)
        + f"{'HDCQ vs PIAS':>14}{'unfinished':>14}",
    ]
    panels = [(1e9, senders_1g)] + ([(TEN_G, senders_10g)] if senders_10g else [])
    fig, axes = pyplot().subplots(1, len(panels), figsize=(5 * len(panels) + 1, 4), squeeze=False)
    for ax, (speed, points) in zip(axes[0], panels, strict=True):
        series: dict[str, list[float]] = {s: [] for s in HDCQ_SCHEMES}
        for senders in points:
            afct: dict[str, list[float]] = {s: [] for s in HDCQ_SCHEMES}
            cuts: list[float] = []
            for seed in seeds:
                point = hdcq_point(speed, senders, seed, tcp)
                cut = (point["HDCQ"][0] / point["PIAS"][0] - 1) * 100
                cuts.append(cut)
                unfinished = "/".join(str(point[s][1]) for s in HDCQ_SCHEMES)
                lead = f"{speed / 1e9:>5.0f}{senders:>6}{seed:>5}"
                rows.append(
                    lead
                    + "".join(f"{point[s][0]:>22.1f}" for s in HDCQ_SCHEMES)
                    + f"{cut:>+13.0f}%{unfinished:>14}"
                )
                rows.append(
                    f"{'':>16}"
                    + "".join(
                        f"{f'{point[s][2]} / {point[s][3]} / {point[s][4]}':>22}"
                        for s in HDCQ_SCHEMES
                    )
                )
                print("\n".join(rows[-2:]), flush=True)
                for s in HDCQ_SCHEMES:
                    afct[s].append(point[s][0])
            means = {s: sum(v) / len(v) for s, v in afct.items()}
            cut = (means["HDCQ"] / means["PIAS"] - 1) * 100
            below = sum(c < 0 for c in cuts)
            spread = f", per-seed sd {statistics.stdev(cuts):.1f} %" if len(cuts) > 1 else ""
            rows.append(
                f"{speed / 1e9:>5.0f}{senders:>6}{'mean':>5}"
                + "".join(f"{means[s]:>22.1f}" for s in HDCQ_SCHEMES)
                + f"{cut:>+13.0f}%   HDCQ below PIAS on {below} of {len(seeds)} seeds{spread}"
            )
            print(rows[-1], flush=True)
            for s in HDCQ_SCHEMES:
                series[s].append(means[s])
        for s, values in series.items():
            ax.plot(points, values, marker="o", label=s)
        ax.set_title(f"{speed / 1e9:.0f} Gb/s: short-flow AFCT, mean of {len(seeds)} seeds")
        ax.set_xlabel("number of parallel senders (short flows)")
        ax.set_ylabel("AFCT (ms)")
        ax.legend()
    if tcp != IncastTcp():
        # Say on the figure what differs from the reproduction's setup.
        fig.suptitle(tcp.label(), fontsize=9)
    save(fig, tcp.image())
    print("\n".join(rows))


def lossless_table(measured: dict[int, dict[str, netsim_lossless.Outcome]]) -> list[str]:
    """One markdown row per incast degree and case."""
    rows = [
        "| senders | case | lossless drops | pause time (us): all | hosts paused | fabric paused"
        " | budget (us) | PAUSE frames | peak group (B) | CNPs | incast mean FCT (us)"
        " | victim FCT (us) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, cases in measured.items():
        budget = netsim_lossless.pause_budget_us(n)
        for name, o in cases.items():
            rows.append(
                f"| {n} | {name} | {o.lossless_drops} | {o.pause_us:.1f} | {o.host_pause_us:.1f}"
                f" | {o.fabric_pause_us:.1f} | {budget:.1f} | {o.pause_frames}"
                f" | {o.peak_group_bytes} | {o.cnps} | {o.incast_mean_fct_us:.0f}"
                f" | {o.victim_fct_us:.0f} |"
            )
    return rows


def lossless(incast: list[int]) -> None:
    """PFC and DCQCN under incast: the computed configuration against Kmax above XOFF, on one
    leaf (the plot) and across the spine."""
    measured = {n: netsim_lossless.measure(NETSIM, n) for n in incast}
    spine = {n: netsim_lossless.measure(NETSIM, n, across_spine=True) for n in incast}
    rows = ["One leaf:", *lossless_table(measured), "", "Across the spine:", *lossless_table(spine)]
    plt = pyplot()
    fig, (pause_ax, fct_ax) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(next(iter(measured.values())))
    for color, name in zip(("C0", "C1"), names, strict=True):
        runs = [measured[n][name] for n in incast]
        pause_ax.plot(incast, [o.pause_us for o in runs], marker="o", color=color, label=name)
        victim = [o.victim_fct_us for o in runs]
        fct_ax.plot(incast, victim, marker="o", color=color, label=f"victim, {name}")
        mean = [o.incast_mean_fct_us for o in runs]
        fct_ax.plot(incast, mean, marker="s", ls="--", color=color, label=f"incast, {name}")
    budgets = [netsim_lossless.pause_budget_us(n) for n in incast]
    pause_ax.plot(incast, budgets, ls=":", color="grey", label="budget")
    pause_ax.set(
        xlabel="senders", ylabel="pause time, summed over ingress ports (us)", title="PFC pauses"
    )
    fct_ax.set(xlabel="senders", ylabel="FCT (us)", title="FCT")
    pause_ax.legend()
    fct_ax.legend(fontsize="small")
    save(fig, "netsim_lossless.png")
    print("\n".join(rows))


def save(fig: Any, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(IMAGES / name, dpi=100)
    pyplot().close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "which", choices=["pias", "pias-sets", "mqecn", "dynaq", "qjump", "hdcq", "lossless"]
    )
    parser.add_argument("--flows", type=int, default=3000)
    parser.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.8])
    parser.add_argument("--workloads", nargs="+", default=["websearch", "datamining"])
    parser.add_argument("--senders", type=int, nargs="+", default=[100, 300, 500])
    # Fig. 9's 10 Gb/s sweep (1000-4000) is opt-in: a run takes minutes (docs/reproductions.md).
    parser.add_argument("--senders-10g", type=int, nargs="*", default=[])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    # lossless: incast degrees (senders into one receiver).
    parser.add_argument("--incast", type=int, nargs="+", default=[4, 8, 16, 32])
    # pias-sets: which threshold sets beside DCTCP (default: all of pias_threshold_sets).
    parser.add_argument("--sets", nargs="*", default=[])
    # pias-sets: leaves of 16 hosts (PIAS's fabric has 9; with fewer, each host link carries
    # more of the run's flows, nearer the steady state the paper's 100,000 flows reach).
    parser.add_argument("--leaves", type=int, default=9)
    # TCP without SACK: netsim's NewReno loss recovery, as every run was before SACK.
    parser.add_argument("--no-sack", action="store_true")
    # hdcq: the short flows' starts drawn within this many us (0: all in one nanosecond).
    parser.add_argument("--spread-us", type=float, default=0.0)
    # hdcq: Linux's RTO rule, SRTT + max(4 RTTVAR, floor), for RFC 6298's max of the two.
    parser.add_argument("--linux-rto", action="store_true")
    # hdcq: each RTO timer stretched by up to this fraction, drawn from the seed (an
    # instrument that desynchronizes the incast's timeouts; 0: none).
    parser.add_argument("--rto-jitter", type=float, default=0.0)
    args = parser.parse_args(argv)
    build()
    if args.which == "pias":
        pias(args.flows, args.loads, args.workloads)
    elif args.which == "pias-sets":
        pias_sets(args.flows, args.loads, args.workloads, args.seeds, args.sets, args.leaves)
    elif args.which == "mqecn":
        mqecn()
    elif args.which == "dynaq":
        dynaq()
    elif args.which == "hdcq":
        tcp = IncastTcp(
            sack=not args.no_sack,
            spread_ns=args.spread_us * 1e3,
            linux_rto=args.linux_rto,
            rto_jitter=args.rto_jitter,
        )
        hdcq(args.senders, args.senders_10g, args.seeds, tcp)
    elif args.which == "lossless":
        lossless(args.incast)
    else:
        qjump()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
