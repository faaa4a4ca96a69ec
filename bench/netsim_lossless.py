"""An incast into a lossless class in netsim, with sluice's computed PFC and DCQCN ECN,
against the same run with Kmax above the XOFF point (issue 27, item 5; docs/reproductions.md).

The lossless class is what ``docs/lossless.md``'s example intent compiles: 100 Gb/s ports, 5 m
cables, MTU 1500, Spectrum-2 figures, a 2 000 000 B port buffer, one lossless priority (3,
queue 3) at ``dynamic_th`` 0. From ``controller.qos.lossless``:

- PAUSE at the XOFF point sluice checks Kmax against (``port_lossless``: alpha / (1 + N
  alpha) of the shared pool, 958 528 B), per ingress port and priority as a switch's
  priority group does (IEEE 802.1Qbb);
- headroom above it: the profile's xoff (64 512 B), what still arrives after PAUSE
  (Guo et al., SIGCOMM 2016, §3);
- RESUME once the group has drained the profile's xon (18 432 B) below the XOFF point;
- the lossless queue's ECN ramp: DCQCN's Kmin 5 KB, Kmax 200 KB, Pmax 1 % (``DCQCN_PAPER``),
  and senders running DCQCN's RP with the paper's parameters.

The control is the same run with Kmax at the whole shared pool (1 917 056 B), above the XOFF
point: the intent sluice refuses with ``KmaxAboveXoff``. Links are as long as the cables the
headroom was computed for (5 m, 25 ns), the egress buffer of the ports is not the limit (a
lossless queue's egress profile never drops in SONiC's stock config), so every lossless loss
is a priority group overflowing its headroom.

Beside the N senders, the first sender also sends one flow to another, idle receiver (the
victim): a PAUSE stops the sender's whole lossless queue, so the victim's FCT shows what the
pauses cost traffic that does not cross the congested port (head-of-line blocking, the
paper's §4 concern).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.netsim_run import run_with_rows
from controller.qos.lossless import (
    DCQCN_PAPER,
    SPEED_OF_LIGHT_IN_MEDIA_M_PER_S,
    DcqcnEcn,
    HeadroomPlatform,
    LosslessQueue,
    PortLossless,
    headroom,
    port_lossless,
)
from controller.twin.translate import pfc_thresholds

# docs/lossless.md's example: Spectrum-2 (sonic-buildimage asic_table.j2), no peer figure.
SPECTRUM_2 = HeadroomPlatform(
    cell_bytes=144, pipeline_latency_bytes=18_432, mac_phy_delay_bytes=819.2
)
LINK_GBPS = 100
# Across the spine the fabric links are faster than the hosts', so the congested port is the
# receiver's and its only ingress is the leaf's uplink.
FABRIC_GBPS = 400
CABLE_M = 5.0
MTU_BYTES = 1_500
PORT_BUFFER_BYTES = 2_000_000
PRIORITY = 3
CNP_QUEUE = 6
# The ports' egress buffer: large, so that only the ingress groups limit the lossless queue.
EGRESS_BUFFER_BYTES = 64_000_000
INCAST_BYTES = 2_000_000
# The budget the computed configuration must keep: pauses summed over the ingress ports at
# most 1 % of the time the senders' ports take to send the incast at line rate.
PAUSE_BUDGET_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class Case:
    """One run: its name and the lossless queue's ECN ramp."""

    name: str
    ecn: DcqcnEcn


def computed_port(speed_gbps: int = LINK_GBPS) -> PortLossless:
    """sluice's lossless figures for the example's port at this speed, checked (Kmax 200 KB
    passes)."""
    group = headroom(speed_gbps, CABLE_M, MTU_BYTES, SPECTRUM_2)
    queues = [LosslessQueue(PRIORITY, DCQCN_PAPER)]
    return port_lossless("Ethernet0", PORT_BUFFER_BYTES, queues, group)


def cases(port: PortLossless) -> list[Case]:
    """The computed ECN, and the control with Kmax at the whole shared pool."""
    control = DcqcnEcn(DCQCN_PAPER.kmin_bytes, port.shared_pool_bytes, DCQCN_PAPER.pmax_pct)
    return [Case("computed (Kmax < XOFF)", DCQCN_PAPER), Case("control (Kmax > XOFF)", control)]


def incast_config(
    port: PortLossless,
    ecn: DcqcnEcn,
    senders: int,
    bytes_each: int = INCAST_BYTES,
    fabric_port: PortLossless | None = None,
) -> dict[str, Any]:
    """netsim's run, every flow in the lossless class (queue 3). On one leaf (no
    ``fabric_port``): host 0 the receiver, hosts 1..N the senders, host N+1 the victim's
    receiver. Across the spine (``fabric_port``: the 400 Gb/s fabric ports' figures): the
    receiver under leaf 0, the senders and the victim's receiver under leaf 1."""
    delay_ns = CABLE_M / SPEED_OF_LIGHT_IN_MEDIA_M_PER_S * 1e9
    queues: list[dict[str, Any]] = [{"sched": {"dwrr": 1}} for _ in range(8)]
    queues[CNP_QUEUE] = {"sched": "strict"}
    hosts = senders + 2
    # Where the senders and the victim's receiver sit: leaf 0, or leaf 1 across the spine.
    base = 0 if fabric_port is None else hosts
    victim_dst = senders + 1 if fabric_port is None else hosts
    pairs = [(base + s, 0) for s in range(1, senders + 1)] + [(base + 1, victim_dst)]
    flows = [
        {"src": src, "dst": dst, "bytes": bytes_each, "start_ns": 0.0, "class": PRIORITY}
        for src, dst in pairs
    ]
    return {
        "seed": 1,
        "topology": {
            "leaves": 1 if fabric_port is None else 2,
            "spines": 1,
            "hosts_per_leaf": hosts,
            "host_link_bps": LINK_GBPS * 1e9,
            "fabric_link_bps": (LINK_GBPS if fabric_port is None else FABRIC_GBPS) * 1e9,
            "host_link_delay_ns": delay_ns,
            "fabric_link_delay_ns": delay_ns,
        },
        "qos": {
            "scheme": "custom",
            "queues": queues,
            "aqm": "per_queue",
            "port_buffer_bytes": EGRESS_BUFFER_BYTES,
            "tagging": "by_class",
            "ack_queue": CNP_QUEUE,
            "lossless": {
                "queues": [PRIORITY],
                "pfc": pfc_thresholds(port),
                "pfc_ports": {}
                if fabric_port is None
                else {"leaf_up": pfc_thresholds(fabric_port), "spine": pfc_thresholds(fabric_port)},
                "ecn": {
                    "kmin_bytes": ecn.kmin_bytes,
                    "kmax_bytes": ecn.kmax_bytes,
                    "pmax_pct": ecn.pmax_pct,
                },
                "dcqcn": {},
            },
        },
        "traffic": [{"kind": "flows", "flows": flows}],
        "end_ns": 1e9,
    }


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run measured."""

    lossless_drops: int
    pause_us: float
    host_pause_us: float
    fabric_pause_us: float
    pause_frames: int
    peak_group_bytes: int
    cnps: int
    incast_mean_fct_us: float
    victim_fct_us: float
    unfinished: int


def fct_us(row: dict[str, str]) -> float:
    return float(row["fct_ns"]) / 1e3 if row["fct_ns"] else float("inf")


def outcome(summary: dict[str, Any], flows: list[dict[str, str]]) -> Outcome:
    """The run's PFC counts over every ingress group, and the incast's and victim's FCT (the
    victim is the last flow)."""
    pfc = summary["pfc"]
    incast = flows[:-1]
    return Outcome(
        lossless_drops=int(pfc["lossless_dropped_packets"]),
        pause_us=float(pfc["all"]["paused_ns"]) / 1e3,
        host_pause_us=float(pfc["leaf_down"]["paused_ns"]) / 1e3,
        fabric_pause_us=(float(pfc["leaf_up"]["paused_ns"]) + float(pfc["spine"]["paused_ns"]))
        / 1e3,
        pause_frames=int(pfc["all"]["pause_frames"]),
        peak_group_bytes=int(pfc["all"]["peak_bytes"]),
        cnps=int(pfc["cnps"]),
        incast_mean_fct_us=sum(fct_us(r) for r in incast) / len(incast),
        victim_fct_us=fct_us(flows[-1]),
        unfinished=int(summary["unfinished"]),
    )


def pause_budget_us(senders: int, bytes_each: int = INCAST_BYTES) -> float:
    """The computed configuration's budget: 1 % of N senders' port time for the incast."""
    return PAUSE_BUDGET_SHARE * senders * bytes_each * 8 / (LINK_GBPS * 1e9) * 1e6


def measure(
    netsim: Path, senders: int, bytes_each: int = INCAST_BYTES, across_spine: bool = False
) -> dict[str, Outcome]:
    """Both cases for one incast degree, on one leaf or across the spine."""
    port = computed_port()
    fabric_port = computed_port(FABRIC_GBPS) if across_spine else None
    return {
        c.name: outcome(
            *run_with_rows(netsim, incast_config(port, c.ecn, senders, bytes_each, fabric_port))
        )
        for c in cases(port)
    }
