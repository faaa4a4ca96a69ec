"""The tuner's DCQCN ramp rule judged in the twin (issue 27, item 5; docs/lossless.md).

The scenario is ``bench/netsim_lossless.py``'s incast across the spine, the one where sluice's
computed figures still pause: N DCQCN senders under one leaf send 2 MB each at once to one
receiver under the other (100 Gb/s host links, 400 Gb/s fabric links, 5 m cables, Spectrum-2
headroom, a 2 000 000 B port buffer, storage lossless on priority 3), with a victim flow from
the first sender to an idle receiver. Each seed shifts the senders' starts by up to
``JITTER_NS`` and draws netsim's marks.

The loop: the intent (``scenario_intent``: the same ports and figures, ``base_rtt_us``
``BASE_RTT_US``) starts on DCQCN's ramp (Kmin 5 KB, Kmax 200 KB, Pmax 1 %). Each round runs
the incast on the training seed, turns the run into the telemetry a switch would give
(``summary_from_run``: per port kind the class's mark fraction, queueing and the PFC pause
frames its ports sent), and runs the product's tuning pass on it (``propose``, then
``apply_changes``, one minimum interval later each round, each applied change kept as the
history the next pass judges its last step from), until the rule holds. Judged: the
starting ramp and the tuned one on fresh seeds, in the same run, side by side.

    uv run python -m bench.dcqcn_tuning                   # 8 senders, seeds 1-3
    uv run python -m bench.dcqcn_tuning --senders 16 --seeds 1 2 3 4
    uv run python -m bench.dcqcn_tuning --one-leaf --senders 4   # no pause: the rule's "later"
    uv run python -m bench.dcqcn_tuning --no-feedback    # the rule blind to its last step
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import netsim_lossless as lossless
from bench.netsim_run import run_with_rows
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.qos.lossless import DcqcnEcn
from controller.settings import TwinSettings
from controller.tuning.apply import apply_changes
from controller.tuning.dcqcn import parameter_key
from controller.tuning.evidence import Change
from controller.tuning.summary import QueueSummary, TelemetrySummary
from controller.tuning.tune import propose

CLASS = "storage"
BASE_RTT_US = 10.0
JITTER_NS = 2_000.0
TRAINING_SEED = 101
MAX_ROUNDS = 12
# The incast repeats as a training job's step does: once every 10 ms (longer than any run here).
JOB_PERIOD_S = 0.01
# Where each port kind's queue is, and its speed: the hop names netsim reports.
PORT_KINDS = {
    "leaf_down": lossless.LINK_GBPS,
    "leaf_up": lossless.FABRIC_GBPS,
    "spine": lossless.FABRIC_GBPS,
}


def scenario_intent() -> Intent:
    """The intent whose compiled figures the scenario runs: a leaf with a 100 Gb/s host port
    and a 400 Gb/s uplink (5 m cables, MTU 1500, 2 000 000 B each), Spectrum-2 headroom,
    storage lossless on priority 3 with DCQCN's ramp; the tuner in ``propose`` mode with
    its default guards."""
    ports = [
        {"name": "Ethernet0", "speed_gbps": lossless.LINK_GBPS},
        {"name": "Ethernet8", "speed_gbps": lossless.FABRIC_GBPS},
    ]
    return parse_intent(
        {
            "api_version": "sluice/v1",
            "fabric": {
                "base_rtt_us": BASE_RTT_US,
                "ecn_lambda": 1.0,
                "mtu_bytes": lossless.MTU_BYTES,
                "port_buffer_bytes": lossless.PORT_BUFFER_BYTES,
                "lossless": {
                    "cell_bytes": lossless.SPECTRUM_2.cell_bytes,
                    "pipeline_latency_bytes": lossless.SPECTRUM_2.pipeline_latency_bytes,
                    "mac_phy_delay_bytes": lossless.SPECTRUM_2.mac_phy_delay_bytes,
                    "cable_length_m": lossless.CABLE_M,
                },
                "tuning": {"mode": "propose"},
            },
            "switches": [
                {
                    "name": "leaf1",
                    "role": "leaf",
                    "gnmi": {"address": "127.0.0.1", "port": 50051},
                    "credential_ref": "env:SLUICE_GNMI_PASSWORD",
                    "ports": ports,
                }
            ],
            "service_classes": [
                {
                    "name": CLASS,
                    "dscp": [26],
                    "queue": lossless.PRIORITY,
                    "scheduling": {"type": "DWRR", "weight": 50},
                    "lossless": {"pfc_priority": lossless.PRIORITY},
                },
                {
                    "name": "bulk",
                    "dscp": [0],
                    "queue": 1,
                    "scheduling": {"type": "DWRR", "weight": 50},
                },
            ],
        }
    )


def ramp_of(intent: Intent) -> DcqcnEcn:
    ramp = next(c.dcqcn for c in intent.service_classes if c.name == CLASS)
    if ramp is None:
        raise ValueError(f"{CLASS} has no DCQCN ramp")
    return ramp


def incast(ramp: DcqcnEcn, senders: int, seed: int, one_leaf: bool = False) -> dict[str, Any]:
    """The incast across the spine (``one_leaf``: under one leaf) on this ramp, each sender
    starting within ``JITTER_NS``."""
    config = lossless.incast_config(
        lossless.computed_port(),
        ramp,
        senders,
        fabric_port=None if one_leaf else lossless.computed_port(lossless.FABRIC_GBPS),
    )
    draw = random.Random(seed)
    for flow in config["traffic"][0]["flows"]:
        flow["start_ns"] = draw.uniform(0.0, JITTER_NS)
    config["seed"] = seed
    return config


def summary_from_run(summary: dict[str, Any]) -> TelemetrySummary:
    """What the switches' counters would show over the run, one QueueSummary per port kind
    (the class's queue on those ports, the PFC frames those ports sent as ingress): the
    mark fraction, the queueing delay at line rate as occupancy (mean for p50, p99 for p95),
    the busiest port's utilisation while the incast runs, and pause frames per second with the
    incast as a job that starts every ``JOB_PERIOD_S``: a window of the switch's telemetry
    holds as many of them whatever each one's length, so the rule's feedback compares a
    ramp's pauses per job, not a rate a shorter run would inflate."""
    seconds = float(summary["simulated_ns"]) / 1e9
    rows = {r["hop"]: r for r in summary["hops"]["by_class"]}
    busiest: dict[str, float] = {}
    for row in summary["hops"]["by_port"]:
        busiest[row["hop"]] = max(busiest.get(row["hop"], 0.0), float(row["packets"]))
    queues = []
    for kind, speed in PORT_KINDS.items():
        row = rows.get(kind)
        if row is None:
            continue
        line = speed * 1e9 / 8
        carried = busiest.get(kind, 0.0) * lossless.MTU_BYTES / seconds
        queues.append(
            QueueSummary(
                "twin",
                kind,
                CLASS,
                speed,
                utilisation=min(carried / line, 1.0),
                occupancy_p50_bytes=float(row["mean_us"]) * 1e-6 * line,
                occupancy_p95_bytes=float(row["p99_us"]) * 1e-6 * line,
                mark_fraction=int(row["marked_packets"]) / max(int(row["packets"]), 1),
                dropped_packets_per_s=int(row["dropped_packets"]) / seconds,
                pfc_tx_pause_per_s=int(summary["pfc"][kind]["pause_frames"]) / JOB_PERIOD_S,
            )
        )
    return TelemetrySummary(0.0, seconds, queues=tuple(queues))


@dataclass(frozen=True, slots=True)
class Round:
    ramp: DcqcnEcn
    outcome: lossless.Outcome
    change: Change | None


def tune(
    netsim: Path,
    senders: int,
    seed: int = TRAINING_SEED,
    max_rounds: int = MAX_ROUNDS,
    one_leaf: bool = False,
    feedback: bool = True,
) -> list[Round]:
    """The loop on the training seed, from DCQCN's ramp until the rule holds (or
    ``max_rounds`` runs). Each applied change goes into the history the next pass reads, as
    the tuning service keeps it (``feedback``; False: the rule sees no last step)."""
    intent = scenario_intent()
    interval = intent.fabric.tuning.min_interval_s
    key = parameter_key(CLASS)
    changed: dict[str, float] = {}
    applied: dict[str, dict[str, Any]] = {}
    rounds: list[Round] = []
    for n in range(max_rounds):
        summary, flows = run_with_rows(netsim, incast(ramp_of(intent), senders, seed, one_leaf))
        now_s = (n + 1) * interval
        changes = propose(
            intent,
            summary_from_run(summary),
            now_s=now_s,
            last_changed=changed,
            last_applied=applied if feedback else None,
        )
        change = next((c for c in changes if c.parameter == key), None)
        rounds.append(Round(ramp_of(intent), lossless.outcome(summary, flows), change))
        if change is None or not change.applies:
            break
        intent = apply_changes(intent, [change]).intent
        changed[key], applied[key] = now_s, change.as_dict()
    return rounds


def judge(
    netsim: Path,
    ramps: dict[str, DcqcnEcn],
    senders: int,
    seeds: list[int],
    one_leaf: bool = False,
) -> dict[str, list[lossless.Outcome]]:
    """Each ramp on each seed, in one run of this process."""
    return {
        name: [
            lossless.outcome(*run_with_rows(netsim, incast(ramp, senders, s, one_leaf)))
            for s in seeds
        ]
        for name, ramp in ramps.items()
    }


def _ramp_text(ramp: DcqcnEcn) -> str:
    return f"Kmin {ramp.kmin_bytes} B, Kmax {ramp.kmax_bytes} B, Pmax {ramp.pmax_pct} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=MAX_ROUNDS)
    parser.add_argument(
        "--one-leaf", action="store_true", help="senders and receiver under one leaf"
    )
    parser.add_argument(
        "--no-feedback", action="store_true", help="the rule does not judge its last step"
    )
    args = parser.parse_args()
    netsim = TwinSettings().netsim
    rounds = tune(
        netsim,
        args.senders,
        max_rounds=args.rounds,
        one_leaf=args.one_leaf,
        feedback=not args.no_feedback,
    )
    print(f"training (seed {TRAINING_SEED}, {args.senders} senders):")
    for n, r in enumerate(rounds):
        said = "none" if r.change is None else (r.change.held or f"-> {r.change.proposed}")
        print(
            f"  round {n}: {_ramp_text(r.ramp)}: pause {r.outcome.pause_us:.1f} us, "
            f"{r.outcome.pause_frames} frames, incast mean FCT "
            f"{r.outcome.incast_mean_fct_us:.0f} us; rule: {said}",
            flush=True,
        )
    ramps = {"start": rounds[0].ramp, "tuned": rounds[-1].ramp}
    if rounds[-1].change is not None and rounds[-1].change.applies:
        print("  (stopped at the round limit while the rule still moved)")
    measured = judge(netsim, ramps, args.senders, args.seeds, args.one_leaf)
    print(f"judged on seeds {args.seeds}:")
    print("| ramp | seed | pause us | frames | incast mean FCT us | victim FCT us | drops |")
    for name, outcomes in measured.items():
        for seed, o in zip(args.seeds, outcomes, strict=True):
            print(
                f"| {name} ({_ramp_text(ramps[name])}) | {seed} | {o.pause_us:.1f} | "
                f"{o.pause_frames} | {o.incast_mean_fct_us:.0f} | {o.victim_fct_us:.0f} | "
                f"{o.lossless_drops} |"
            )
    start, tuned = measured["start"], measured["tuned"]
    for field in ("pause_us", "incast_mean_fct_us", "victim_fct_us"):
        pairs = [(getattr(s, field), getattr(t, field)) for s, t in zip(start, tuned, strict=True)]
        if any(before == 0 for before, _ in pairs):
            print(f"{field}: start {[b for b, _ in pairs]}, tuned {[a for _, a in pairs]}")
            continue
        ratios = [after / before for before, after in pairs]
        print(
            f"{field}: tuned / start mean {sum(ratios) / len(ratios):.3f} "
            f"[{min(ratios):.3f}, {max(ratios):.3f}]"
        )


if __name__ == "__main__":
    main()
