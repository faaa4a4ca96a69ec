"""netsim's summary read in the intent's terms: per class by name, per size bucket, and the
deltas between two runs (``--compare``). Pure."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]

# The figures reported for each class and bucket (netsim's ``FctStats`` fields).
FIGURES = ("flows", "mean_us", "p99_us", "mean_slowdown", "p99_slowdown")


def _row(name: str, stats: JsonObject) -> JsonObject:
    return {"name": name, **{key: stats.get(key, 0) for key in FIGURES}}


def per_class(
    summary: JsonObject, classes: tuple[str, ...], key: str = "classes"
) -> list[JsonObject]:
    """netsim's ``class N`` rows named after the intent's classes (N indexes ``classes``);
    ``key`` ``small_by_class``: each class's small flows (up to 100 kB) only."""
    rows: list[JsonObject] = []
    for stats in summary.get(key, []):
        index = int(str(stats["name"]).removeprefix("class "))
        name = classes[index] if index < len(classes) else f"class {index}"
        rows.append(_row(name, stats))
    return rows


def per_bucket(summary: JsonObject) -> list[JsonObject]:
    return [_row(str(stats["name"]), stats) for stats in summary.get("buckets", [])]


# The queueing-delay figures of netsim's per-hop rows (``hops.by_hop`` / ``hops.by_class``).
HOP_FIGURES = ("packets", "mean_us", "p99_us", "max_us")


def per_hop(summary: JsonObject, classes: tuple[str, ...]) -> JsonObject:
    """Queueing delay per hop position (host_nic, leaf_up, spine, leaf_down), overall and
    per class by name."""
    hops = summary.get("hops", {})

    def row(stats: JsonObject) -> JsonObject:
        return {"hop": stats["hop"], **{key: stats.get(key, 0) for key in HOP_FIGURES}}

    by_class: list[JsonObject] = []
    for stats in hops.get("by_class", []):
        index = int(stats["class"])
        name = classes[index] if index < len(classes) else f"class {index}"
        by_class.append({"name": name, **row(stats)})
    return {"positions": [row(s) for s in hops.get("by_hop", [])], "classes": by_class}


def _ports_of_kind(topology: JsonObject) -> dict[str, tuple[int, float]]:
    """netsim's port kinds: how many ports each has and their line rate, bit/s (every leaf
    linked to every spine once, ``sim/netsim/src/topology.rs``)."""
    leaves, spines = int(topology["leaves"]), int(topology["spines"])
    fabric_bps = float(topology["fabric_link_bps"])
    return {
        "leaf_down": (leaves * int(topology["hosts_per_leaf"]), float(topology["host_link_bps"])),
        "leaf_up": (leaves * spines, fabric_bps),
        "spine": (spines * leaves, fabric_bps),
    }


def queue_figures(
    summary: JsonObject, classes: tuple[str, ...], topology: JsonObject
) -> list[JsonObject]:
    """Per class and port kind, what a switch's counters of the class's queue would read on
    one port of that kind, averaged over the kind's ports, over the span the traffic arrived
    in (netsim's ``arrivals_ns``; the drain after it would dilute every rate): the port's
    utilisation (every class's bytes over the line rate), the class's own share of it, its
    transmitted bytes/s, the packets marked over those sent (data and ACKs, as a switch's
    queue counters count them), drops/s, and occupancy p50/p95: the queueing delay's
    percentile x the line rate (the backlog ahead of a packet drained at line rate; a DWRR
    queue drains at its share, so it leans high). Every class has a row on every kind, zeros
    where the twin carried none of it."""
    start, end = summary.get("arrivals_ns", (0.0, 0.0))
    seconds = (float(end) - float(start)) / 1e9 or float(summary.get("simulated_ns", 0.0)) / 1e9
    if seconds <= 0:
        return []
    kinds = {kind: shape for kind, shape in _ports_of_kind(topology).items() if shape[0] > 0}
    crossed = {
        (int(r["class"]), r["hop"]): r
        for r in summary.get("hops", {}).get("by_class", [])
        if r["hop"] in kinds
    }
    port_bytes: dict[str, float] = {}
    for (_, hop), row in crossed.items():
        port_bytes[hop] = port_bytes.get(hop, 0.0) + float(row.get("bytes", 0))
    out: list[JsonObject] = []
    for kind, (ports, line_bps) in kinds.items():
        for index, name in enumerate(classes):
            # A class the twin carried nothing of on a kind is a prediction too: zero.
            row = crossed.get((index, kind), {})
            per_port = float(row.get("bytes", 0)) / seconds / ports
            out.append(
                {
                    "name": name,
                    "kind": kind,
                    "utilisation": port_bytes.get(kind, 0.0) * 8 / seconds / ports / line_bps,
                    "class_utilisation": per_port * 8 / line_bps,
                    "tx_bytes_per_s": per_port,
                    "mark_fraction": int(row.get("marked_packets", 0))
                    / max(int(row.get("packets", 0)), 1),
                    "dropped_packets_per_s": int(row.get("dropped_packets", 0)) / seconds / ports,
                    "occupancy_p50_bytes": float(row.get("p50_us", 0.0)) * 1e-6 * line_bps / 8,
                    "occupancy_p95_bytes": float(row.get("p95_us", 0.0)) * 1e-6 * line_bps / 8,
                }
            )
    return out


# netsim's port kinds, by the frames their groups send: a leaf's host port pauses a host,
# the others pause a switch (PFC spreading into the fabric).
PORT_KINDS = ("leaf_down", "leaf_up", "spine")


def _lossless_row(name: str, queue: int, row: JsonObject) -> JsonObject:
    groups = row.get("groups", {})
    return {
        "name": name,
        "queue": queue,
        "drops": int(row.get("lossless_dropped_packets", 0)),
        # of which past a group's headroom; the rest at an egress queue (buffer or WRED)
        "headroom_overflows": int(groups.get("overflow_packets", 0)),
        "pause_frames": int(groups.get("pause_frames", 0)),
        "resume_frames": int(groups.get("resume_frames", 0)),
        "paused_us": float(groups.get("paused_ns", 0.0)) / 1e3,
        "peak_group_bytes": int(groups.get("peak_bytes", 0)),
        "cnps": int(row.get("cnps", 0)),
    }


def lossless_figures(
    summary: JsonObject, lossless: tuple[tuple[str, int], ...]
) -> JsonObject | None:
    """The lossless classes' PFC and DCQCN counts from netsim's ``pfc``: per class (by its
    queue, netsim's ``by_queue``) its drops, pauses and CNPs, and every lossless group
    together with where the pauses were sent from. None when the run had no lossless
    class."""
    pfc = summary.get("pfc")
    if not lossless or not pfc:
        return None
    by_queue = {int(row["queue"]): row for row in pfc.get("by_queue", [])}
    every = pfc.get("all", {})
    totals = {"groups": every, **pfc}
    return {
        "classes": [_lossless_row(name, q, by_queue.get(q, {})) for name, q in lossless],
        **{k: v for k, v in _lossless_row("all", -1, totals).items() if k not in ("name", "queue")},
        "paused_us_by_port": {
            kind: float(pfc.get(kind, {}).get("paused_ns", 0.0)) / 1e3 for kind in PORT_KINDS
        },
    }


def findings(lossless: JsonObject | None) -> list[str]:
    """What a run shows that must not happen: a lossless class that lost packets (its
    priority groups' headroom overflowed, or an egress queue refused them; the flow that
    lost one stays unfinished, RoCE's retransmission not being modelled)."""
    if lossless is None:
        return []
    return [
        f"lossless class {row['name']} lost {row['drops']} packets in the switches "
        f"({row['headroom_overflows']} past a priority group's headroom, "
        f"{row['drops'] - row['headroom_overflows']} at an egress queue: its buffer, or its "
        "DCQCN ramp dropping what is not ECN-capable, as CNPs are); a lossless class must "
        "lose none"
        for row in lossless["classes"]
        if row["drops"]
    ]


def result(
    summary: JsonObject,
    classes: tuple[str, ...],
    not_modelled: tuple[str, ...],
    lossless: tuple[tuple[str, int], ...] = (),
    topology: JsonObject | None = None,
) -> JsonObject:
    """What a simulation reports: FCT per class (all flows, and small flows alone) and per
    size bucket, totals, the lossless classes' drops, pauses and CNPs with what they show
    (``findings``), with the run's ``topology`` each class's queue figures per port kind
    (``queue_figures``), what is not modelled."""
    tally = summary.get("tally", {})
    pfc = lossless_figures(summary, lossless)
    return {
        "classes": per_class(summary, classes),
        "small_classes": per_class(summary, classes, "small_by_class"),
        "queues": [] if topology is None else queue_figures(summary, classes, topology),
        "buckets": per_bucket(summary),
        "all": _row("all", summary.get("all", {})),
        "unfinished": summary.get("unfinished", 0),
        "drops": tally.get("dropped_packets", 0),
        "marks": tally.get("marked_packets", 0),
        "queueing": per_hop(summary, classes),
        "simulated_ms": summary.get("simulated_ns", 0.0) / 1e6,
        "lossless": pfc,
        "findings": findings(pfc),
        "not_modelled": list(not_modelled),
    }


def _delta(before: JsonObject, after: JsonObject) -> JsonObject:
    out: JsonObject = {"name": after["name"]}
    for key in FIGURES[1:]:
        old, new = float(before.get(key, 0.0)), float(after.get(key, 0.0))
        out[key] = new - old
        out[f"{key}_pct"] = (new - old) / old * 100.0 if old else None
    return out


def compare(before: JsonObject, after: JsonObject) -> JsonObject:
    """``after`` minus ``before``, per class (by name) and per bucket; a negative FCT delta
    means ``after`` finishes flows sooner."""

    def paired(key: str) -> list[JsonObject]:
        old = {row["name"]: row for row in before[key]}
        return [_delta(old[row["name"]], row) for row in after[key] if row["name"] in old]

    return {"classes": paired("classes"), "buckets": paired("buckets")}


def table_lines(rows: list[JsonObject]) -> list[str]:
    """A fixed-width table of FCT rows (the CLI and the demo print it)."""
    lines = [f"{'':<14}{'flows':>7}{'mean µs':>12}{'p99 µs':>12}{'slowdown':>10}{'p99 sd':>9}"]
    for row in rows:
        lines.append(
            f"{row['name']:<14}{row['flows']:>7}{row['mean_us']:>12.1f}{row['p99_us']:>12.1f}"
            f"{row['mean_slowdown']:>10.2f}{row['p99_slowdown']:>9.2f}"
        )
    return lines


def delta_lines(rows: list[JsonObject]) -> list[str]:
    lines = [f"{'':<14}{'Δ mean µs':>12}{'Δ mean %':>10}{'Δ p99 µs':>12}{'Δ p99 %':>10}"]
    for row in rows:

        def pct(key: str, row: JsonObject = row) -> str:
            value = row[f"{key}_pct"]
            return f"{value:>+10.1f}" if value is not None else f"{'-':>10}"

        lines.append(
            f"{row['name']:<14}{row['mean_us']:>+12.1f}{pct('mean_us')}"
            f"{row['p99_us']:>+12.1f}{pct('p99_us')}"
        )
    return lines


def lossless_lines(figures: JsonObject) -> list[str]:
    """The lossless classes' rows (the CLI prints them under the FCT table): drops (must be
    0), time paused summed over the class's groups, PAUSE frames, DCQCN's CNPs; then where
    the pauses were sent from."""
    lines = [f"{'lossless':<14}{'drops':>7}{'paused µs':>12}{'PAUSE':>8}{'CNPs':>9}"]
    for row in figures["classes"]:
        lines.append(
            f"{row['name']:<14}{row['drops']:>7}{row['paused_us']:>12.1f}"
            f"{row['pause_frames']:>8}{row['cnps']:>9}"
        )
    by_port = figures["paused_us_by_port"]
    fabric_us = by_port["leaf_up"] + by_port["spine"]
    lines.append(
        f"paused: {by_port['leaf_down']:.1f} µs by leaf host ports (hosts held), "
        f"{fabric_us:.1f} µs by fabric ports (PFC spreading into the fabric)"
    )
    return lines
