"""The deployed agent at a SONiC switch's counter intervals, against its per-packet ideal and
against static thresholds, in the twin (netsim), for MQ-ECN, DynaQ and HDCQ.

One command: ``uv run --frozen python -m bench.agent_intervals`` (``--algorithms``,
``--intervals-ms``, ``--seconds``, ``--phase-s``, ``--seeds``, ``--json``). Needs
``target/release/netsim`` (``cargo build --release -p netsim``).

What runs. For each algorithm a small intent (two leaves and a spine, hosts at 1 Gb/s, the
bottleneck the leaf port down to one receiving host, fabric base RTT 200 us) goes through
the twin's translation (``controller.twin.translate``), so the switches get exactly the
queues, bounds, static fallbacks and agent orders sluice compiles; only the traffic is the
bench's own. Each algorithm runs in five modes:

- ``per-packet``: the algorithm as the papers run it, per packet (vasic's ideal modes);
- ``static``: the agent ordered ``static``: every managed queue at its compiled fallback
  (what the switch runs without the agent, or when the agent falls back);
- ``agent <T>``: the deployed qos-core loop stepped every T of simulated time, reading the
  counters SONiC publishes, at T = 100 ms, 1 s, 10 s (SONiC's floors: queue counters 100 ms,
  watermarks 1 s; 10 s is the QUEUE group's default).

Traffic, long enough for a 10 s interval to matter (``--seconds``, default 60): the mix
changes every ``--phase-s`` (default 2 s; a fresh random set of classes is busy in each
phase), so an agent at 100 ms can follow it, one at 1 s only partly and one at 10 s not at
all; ``--phase-s 0.05`` makes the mix change faster than any SONiC interval.

- MQ-ECN (DCTCP): 4 DWRR classes 40:30:20:10; each busy class moves a bulk of bytes sized
  to finish in 70 % of the phase at its weighted share; small probe flows (2 packets) in
  every class measure the queueing. Figures: bulk slowdown (FCT over the 70 %: throughput),
  probe mean and p99 FCT (latency).
- DynaQ (NewReno without ECN): the same classes and phases, 1 flow in classes 0 and 2 and
  8 in classes 1 and 3 (flow-count asymmetry). Figures: bulk slowdown, mean and of the
  worst class (weighted fairness: a starved class finishes last).
- HDCQ (DCTCP, HDCQ's three priorities): 4 long flows all the time and, at the start of
  every phase, an incast of 40 short flows (uniform up to 100 KB). Figures: short-flow mean
  and p99 FCT (HDCQ 2021 §5.1's metric).

Headline figure (lower is better): bulk slowdown for MQ-ECN (its point against the
per-queue minimum, the fallback, is throughput), worst-class bulk slowdown for DynaQ,
short-flow mean FCT for HDCQ. ``vs static``: its change against the static fallback, %.
``benefit`` at T = (static - agent T) / (static - per-packet): 1 is all of what the
per-packet algorithm gains over static, 0 nothing, below 0 worse than static; none where
per packet gains nothing.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.twin.translate import Request, translate

JsonObject = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
NETSIM = ROOT / "target" / "release" / "netsim"
GBPS = 1
LINE_BPS = GBPS * 1e9
RTT_US = 500.0
MSS = 1460
PACKET = 1500
WEIGHTS = (40, 30, 20, 10)
BULK_FRACTION = 0.7  # of a phase, at the class's weighted share of the line
PROBE_BYTES = 2 * MSS
PROBES_PER_S = 20.0  # per class
DYNAQ_FLOWS = (1, 8, 1, 8)
DYNAQ_BUFFER = 400_000  # the weight-10 class's share (40 KB) is under the BDP (62.5 KB)
MQECN_BUFFER = 400_000
HDCQ_BUFFER = 240 * PACKET  # HDCQ 2021 §4.1's 240-packet port
HDCQ_LONG = 4
HDCQ_SHORT = 40
HDCQ_SHORT_MAX = 100_000
HDCQ_THRESH = 100 * 1024
ALGORITHMS = ("mqecn", "dynaq", "hdcq")
INTERVALS_MS = (100, 1000, 10_000)


# ----------------------------------------------------------------------------------------
# the intents


def _ports(n: int, prefix: str = "Ethernet") -> list[JsonObject]:
    return [{"name": f"{prefix}{4 * i}", "speed_gbps": GBPS} for i in range(n)]


def intent(
    algorithm: str, interval_ms: int, hosts_per_leaf: int, buffer_bytes: int, ecn: str | None = None
) -> Intent:
    """Two leaves of ``hosts_per_leaf`` 1 Gb/s hosts and one spine (10 Gb/s uplinks), the
    algorithm's classes (marked ``ecn`` instead, if given), the agent at ``interval_ms``.
    The platform publishes WRED/ECN queue counters (HDCQ reads them); DynaQ below SONiC's
    1 s watermark floor runs on a platform declaring a lower floor (on SONiC the controller
    refuses it, docs/qos-agent.md)."""
    # The 10 Gb/s ports carry the 1 Gb/s hosts' traffic without queueing; their own buffer
    # keeps K = 10 Gb/s x RTT below it (controller/intent/capacity.py).
    fast = {"speed_gbps": 10, "buffer_bytes": 1_000_000}
    uplink = {"name": "Ethernet1000", **fast}
    switches = [
        {
            "name": f"leaf{leaf}",
            "role": "leaf",
            "gnmi": {"address": "127.0.0.1", "port": 50050 + leaf},
            "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "ports": [*_ports(hosts_per_leaf), uplink],
        }
        for leaf in (1, 2)
    ]
    switches.append(
        {
            "name": "spine1",
            "role": "spine",
            "gnmi": {"address": "127.0.0.1", "port": 50053},
            "credential_ref": "env:SLUICE_GNMI_PASSWORD",
            "ports": [{"name": f"Ethernet{4 * i}", **fast} for i in range(2)],
        }
    )
    hosts = [
        {"name": f"h{i}", "address": f"10.0.{i // 200}.{i % 200 + 1}", "nic_gbps": GBPS}
        for i in range(2 * hosts_per_leaf)
    ]
    transport = {"congestion_control": "reno" if algorithm == "dynaq" else "dctcp"}
    data: JsonObject = {
        "api_version": "sluice/v1",
        "fabric": {
            "base_rtt_us": RTT_US,
            "mtu_bytes": PACKET,
            "port_buffer_bytes": buffer_bytes,
            "host_transport": transport,
            "agent": {
                "interval_ms": interval_ms,
                "hysteresis_pct": 5.0,
                "stale_after_ms": 3 * interval_ms,
            },
            "counters": {
                "wred_ecn_queue": True,
                "watermark_floor_ms": min(interval_ms, 1000),
            },
        },
        "switches": switches,
        "hosts": hosts,
        "service_classes": _classes(algorithm, ecn or algorithm),
    }
    return parse_intent(data)


def _classes(algorithm: str, ecn: str) -> list[JsonObject]:
    if algorithm == "hdcq":
        return [
            {
                "name": "app",
                "dscp": [10],
                "queue": 1,
                "scheduling": {"type": "STRICT"},
                "ecn": "hdcq",
                "hdcq": {
                    "flow_type_thresh_bytes": HDCQ_THRESH,
                    "ack": {"dscp": 12, "queue": 2},
                    "long": {"dscp": 14, "queue": 0},
                    "wrr_weight": 5,
                },
                "hosts_match": {"protocol": "tcp"},
            }
        ]
    return [
        {
            "name": f"c{i}",
            "dscp": [8 * (i + 1)],
            "queue": i,
            "scheduling": {"type": "DWRR", "weight": w},
            "ecn": ecn,
        }
        for i, w in enumerate(WEIGHTS)
    ]


# ----------------------------------------------------------------------------------------
# the traffic


@dataclass(frozen=True, slots=True)
class Scenario:
    seconds: float
    phase_s: float
    seed: int

    @property
    def phases(self) -> int:
        return max(1, round(self.seconds / self.phase_s))


def _flow(src: int, dst: int, payload: int, start_s: float, cls: int) -> JsonObject:
    return {
        "src": src,
        "dst": dst,
        "bytes": max(1, payload),
        "start_ns": start_s * 1e9,
        "class": cls,
    }


def active_sets(sc: Scenario, classes: int) -> list[list[int]]:
    """Each phase's busy classes: a random non-empty subset, from the seed."""
    rng = random.Random(sc.seed)
    out = []
    for _ in range(sc.phases):
        busy = [c for c in range(classes) if rng.random() < 0.5]
        out.append(busy or [rng.randrange(classes)])
    return out


def weighted_traffic(
    sc: Scenario, flows_per_class: Sequence[int], first_sender: int
) -> list[JsonObject]:
    """Bulk flows per busy class and phase (``BULK_FRACTION`` of the phase at the class's
    weighted share, split over its flows), probes in every class all along; host 0 receives."""
    flows: list[JsonObject] = []
    senders = iter(range(first_sender, first_sender + sum(flows_per_class) + len(WEIGHTS)))
    bulk_hosts = [[next(senders) for _ in range(n)] for n in flows_per_class]
    probe_hosts = [next(senders) for _ in WEIGHTS]
    for phase, busy in enumerate(active_sets(sc, len(WEIGHTS))):
        total = sum(WEIGHTS[c] for c in busy)
        for c in busy:
            wire = BULK_FRACTION * WEIGHTS[c] / total * LINE_BPS * sc.phase_s / 8
            payload = int(wire / len(bulk_hosts[c]) * MSS / PACKET)
            flows += [_flow(h, 0, payload, phase * sc.phase_s, c) for h in bulk_hosts[c]]
    rng = random.Random(sc.seed + 1)
    for c, host in enumerate(probe_hosts):
        t = rng.expovariate(PROBES_PER_S)
        while t < sc.seconds:
            flows.append(_flow(host, 0, PROBE_BYTES, t, c))
            t += rng.expovariate(PROBES_PER_S)
    return flows


def hdcq_traffic(sc: Scenario, first_sender: int) -> list[JsonObject]:
    """``HDCQ_LONG`` long flows all along; an incast of ``HDCQ_SHORT`` short flows 1 ms into
    every phase."""
    flows = [_flow(first_sender + i, 0, 1 << 40, 0.0, 0) for i in range(HDCQ_LONG)]
    rng = random.Random(sc.seed)
    for phase in range(sc.phases):
        at = phase * sc.phase_s + 1e-3
        flows += [
            _flow(first_sender + HDCQ_LONG + i, 0, rng.randint(1, HDCQ_SHORT_MAX), at, 0)
            for i in range(HDCQ_SHORT)
        ]
    return flows


def senders(algorithm: str) -> int:
    if algorithm == "hdcq":
        return HDCQ_LONG + HDCQ_SHORT
    per_class = DYNAQ_FLOWS if algorithm == "dynaq" else (1,) * len(WEIGHTS)
    return sum(per_class) + len(WEIGHTS)


def buffer_of(algorithm: str) -> int:
    return {"dynaq": DYNAQ_BUFFER, "hdcq": HDCQ_BUFFER}.get(algorithm, MQECN_BUFFER)


# ----------------------------------------------------------------------------------------
# the modes


MODES = ("per-packet", "static")
# What an operator would run instead, for context (no benefit is computed against these):
# MQ-ECN's per-queue standard threshold K on every queue; for DynaQ the switch's default,
# a shared buffer with a dynamic threshold and no per-queue limit.
OTHER = {"mqecn": ("standard K", "standard"), "dynaq": ("shared buffer", "off")}


def config(algorithm: str, mode: str | int, sc: Scenario) -> JsonObject:
    """netsim's run for ``algorithm`` in ``mode`` (a mode name or an agent interval in ms):
    the twin's translation of the bench's intent, with the bench's traffic."""
    hosts = senders(algorithm)
    interval_ms = mode if isinstance(mode, int) else 1000
    other = OTHER.get(algorithm)
    ecn = other[1] if other is not None and mode == other[0] else None
    twin = translate(
        intent(algorithm, interval_ms, hosts, buffer_of(algorithm), ecn),
        Request(per_packet=mode == "per-packet", seed=sc.seed),
    )
    cfg = copy.deepcopy(twin.config)
    if mode == "static":
        cfg["qos"]["agent"]["global"]["algorithm"] = "static"
    if mode == "per-packet" and algorithm == "hdcq":
        # HDCQ per packet (Algorithm 2, promotion included): vasic's ideal on the same queues.
        cfg["qos"]["aqm"] = {
            "hdcq": {"q1": 2, "q2": 1, "q3": 0, "period_ns": RTT_US * 1e3},
        }
    first = hosts  # the second leaf's hosts send; host 0 on the first leaf receives
    cfg["traffic"] = [
        {
            "kind": "flows",
            "flows": hdcq_traffic(sc, first)
            if algorithm == "hdcq"
            else weighted_traffic(
                sc, DYNAQ_FLOWS if algorithm == "dynaq" else (1,) * len(WEIGHTS), first
            ),
        }
    ]
    cfg["seed"] = sc.seed
    cfg["end_ns"] = (sc.seconds + 2 * sc.phase_s) * 1e9
    return cfg


def run(cfg: JsonObject, binary: Path) -> list[dict[str, str]]:
    """netsim's per-flow rows."""
    with tempfile.TemporaryDirectory(prefix="sluice-agent-intervals-") as work:
        path, rows = Path(work) / "run.json", Path(work) / "flows.csv"
        path.write_text(json.dumps(cfg))
        subprocess.run(
            [str(binary), "run", "--config", str(path), "--csv", str(rows), "--quiet"],
            check=True,
            capture_output=True,
        )
        with rows.open() as handle:
            return list(csv.DictReader(handle))


# ----------------------------------------------------------------------------------------
# the figures


def _fct_s(row: dict[str, str], end_s: float) -> tuple[float, bool]:
    """A flow's FCT, or its time so far when it did not finish (a lower bound)."""
    start = float(row["start_ns"]) / 1e9
    if row["fct_ns"]:
        return float(row["fct_ns"]) / 1e9, True
    return end_s - start, False


def p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def figures(algorithm: str, rows: list[dict[str, str]], sc: Scenario) -> JsonObject:
    end_s = sc.seconds + 2 * sc.phase_s
    if algorithm == "hdcq":
        shorts = [r for r in rows if int(r["bytes"]) <= HDCQ_SHORT_MAX]
        fcts = [_fct_s(r, end_s) for r in shorts]
        ms = [f * 1e3 for f, _ in fcts]
        return {
            "short_mean_ms": statistics.fmean(ms),
            "short_p99_ms": p99(ms),
            "unfinished": sum(not done for _, done in fcts),
        }
    probes = [r for r in rows if int(r["bytes"]) == PROBE_BYTES]
    bulk = [r for r in rows if int(r["bytes"]) != PROBE_BYTES]
    probe_us = [_fct_s(r, end_s)[0] * 1e6 for r in probes]
    target = BULK_FRACTION * sc.phase_s
    by_class: dict[int, list[float]] = {}
    unfinished = 0
    for r in bulk:
        fct, done = _fct_s(r, end_s)
        unfinished += not done
        by_class.setdefault(int(r["class"]), []).append(fct / target)
    means = {c: statistics.fmean(v) for c, v in sorted(by_class.items())}
    return {
        "bulk_slowdown": statistics.fmean([x for v in by_class.values() for x in v]),
        "worst_class_slowdown": max(means.values()),
        "class_slowdown": means,
        "probe_mean_us": statistics.fmean(probe_us),
        "probe_p99_us": p99(probe_us),
        "unfinished": unfinished,
    }


HEADLINE = {
    "mqecn": "bulk_slowdown",
    "dynaq": "worst_class_slowdown",
    "hdcq": "short_mean_ms",
}


def benefit(static: float, ideal: float, agent: float) -> float | None:
    """How much of the per-packet algorithm's gain over static the agent keeps (lower is
    better for every headline figure); None when per-packet gains nothing."""
    gain = static - ideal
    if gain <= 0:
        return None
    return (static - agent) / gain


def measure(
    algorithm: str, intervals_ms: Sequence[int], sc: Scenario, binary: Path
) -> dict[str, JsonObject]:
    out: dict[str, JsonObject] = {}
    other = OTHER.get(algorithm)
    for mode in (*MODES, *((other[0],) if other else ()), *intervals_ms):
        name = mode if isinstance(mode, str) else f"agent {mode} ms"
        print(f"  {algorithm}: {name} ...", file=sys.stderr, flush=True)
        out[name] = figures(algorithm, run(config(algorithm, mode, sc), binary), sc)
    key = HEADLINE[algorithm]
    static = out["static"][key]
    for figs in out.values():
        figs["benefit"] = benefit(static, out["per-packet"][key], figs[key])
        figs["vs_static_pct"] = (figs[key] - static) / static * 100 if static else None
    return out


def mean_over_seeds(per_seed: list[dict[str, JsonObject]]) -> dict[str, JsonObject]:
    out: dict[str, JsonObject] = {}
    for name in per_seed[0]:
        figs: JsonObject = {}
        for key, value in per_seed[0][name].items():
            values = [seed[name][key] for seed in per_seed]
            if isinstance(value, int | float) and not isinstance(value, bool):
                figs[key] = statistics.fmean(values)
            elif value is None or all(v is None for v in values):
                figs[key] = None
            elif isinstance(value, dict):
                figs[key] = {k: statistics.fmean(v[k] for v in values) for k in value}
            else:
                numbers = [v for v in values if v is not None]
                figs[key] = statistics.fmean(numbers) if numbers else None
        out[name] = figs
    return out


def _cell(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def print_table(algorithm: str, result: dict[str, JsonObject]) -> None:
    if algorithm == "hdcq":
        head = (
            f"{'mode':<18}{'short mean ms':>14}{'short p99 ms':>14}{'unfinished':>11}"
            f"{'vs static':>11}{'benefit':>9}"
        )
        print(head)
        for name, f in result.items():
            print(
                f"{name:<18}{f['short_mean_ms']:>14.2f}{f['short_p99_ms']:>14.2f}"
                f"{f['unfinished']:>11.0f}{_cell(f['vs_static_pct'], '+.1f'):>10}%"
                f"{_cell(f['benefit'], '.2f'):>9}"
            )
        return
    head = (
        f"{'mode':<18}{'bulk slowdown':>14}{'worst class':>12}{'probe mean us':>14}"
        f"{'probe p99 us':>13}{'unfinished':>11}{'vs static':>11}{'benefit':>9}  per class"
    )
    print(head)
    for name, f in result.items():
        classes = " ".join(f"{v:.2f}" for v in f["class_slowdown"].values())
        print(
            f"{name:<18}{f['bulk_slowdown']:>14.2f}{f['worst_class_slowdown']:>12.2f}"
            f"{f['probe_mean_us']:>14.0f}{f['probe_p99_us']:>13.0f}{f['unfinished']:>11.0f}"
            f"{_cell(f['vs_static_pct'], '+.1f'):>10}%{_cell(f['benefit'], '.2f'):>9}  {classes}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=list(ALGORITHMS))
    parser.add_argument("--intervals-ms", type=int, nargs="+", default=list(INTERVALS_MS))
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--phase-s", type=float, default=2.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--netsim", type=Path, default=NETSIM)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, JsonObject]] = {}
    for algorithm in args.algorithms:
        per_seed = [
            measure(
                algorithm, args.intervals_ms, Scenario(args.seconds, args.phase_s, s), args.netsim
            )
            for s in args.seeds
        ]
        results[algorithm] = mean_over_seeds(per_seed)
        if not args.json:
            print(
                f"{algorithm}: {args.seconds:g} s, the mix changing every {args.phase_s:g} s, "
                f"seeds {args.seeds}; benefit = share of per-packet's gain over static kept"
            )
            print_table(algorithm, results[algorithm])
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
