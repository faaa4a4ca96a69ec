"""netsim's summary read in the intent's terms: per class by name, per size bucket, and the
deltas between two runs (``--compare``). Pure."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]

# The figures reported for each class and bucket (netsim's ``FctStats`` fields).
FIGURES = ("flows", "mean_us", "p99_us", "mean_slowdown", "p99_slowdown")


def _row(name: str, stats: JsonObject) -> JsonObject:
    return {"name": name, **{key: stats.get(key, 0) for key in FIGURES}}


def per_class(summary: JsonObject, classes: tuple[str, ...]) -> list[JsonObject]:
    """netsim's ``class N`` rows named after the intent's classes (N indexes ``classes``)."""
    rows: list[JsonObject] = []
    for stats in summary.get("classes", []):
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


# netsim's port kinds, by the frames their groups send: a leaf's host port pauses a host,
# the others pause a switch (PFC spreading into the fabric).
PORT_KINDS = ("leaf_down", "leaf_up", "spine")


def lossless_figures(summary: JsonObject, lossless: tuple[str, ...]) -> JsonObject | None:
    """The lossless classes' PFC and DCQCN counts (netsim's ``pfc``: every switch ingress
    group of the lossless priorities summed; with several lossless classes the figures are
    theirs together). None when the run had no lossless class."""
    pfc = summary.get("pfc")
    if not lossless or not pfc:
        return None
    every = pfc.get("all", {})
    return {
        "classes": list(lossless),
        "drops": int(pfc.get("lossless_dropped_packets", 0)),
        # of which past a group's headroom; the rest at an egress queue (buffer or WRED)
        "headroom_overflows": int(every.get("overflow_packets", 0)),
        "pause_frames": int(every.get("pause_frames", 0)),
        "resume_frames": int(every.get("resume_frames", 0)),
        "paused_us": float(every.get("paused_ns", 0.0)) / 1e3,
        "paused_us_by_port": {
            kind: float(pfc.get(kind, {}).get("paused_ns", 0.0)) / 1e3 for kind in PORT_KINDS
        },
        "peak_group_bytes": int(every.get("peak_bytes", 0)),
        "cnps": int(pfc.get("cnps", 0)),
    }


def findings(lossless: JsonObject | None) -> list[str]:
    """What a run shows that must not happen: a lossless class that lost packets (its
    priority groups' headroom overflowed, or an egress queue refused them; the flow that
    lost one stays unfinished, RoCE's retransmission not being modelled)."""
    if lossless is None or not lossless["drops"]:
        return []
    names = " and ".join(lossless["classes"])
    overflows = lossless["headroom_overflows"]
    return [
        f"lossless class {names} lost {lossless['drops']} packets in the switches "
        f"({overflows} past a priority group's headroom, {lossless['drops'] - overflows} "
        "at an egress queue: its buffer, or its DCQCN ramp dropping what is not ECN-capable, "
        "as CNPs are); a lossless class must lose none"
    ]


def result(
    summary: JsonObject,
    classes: tuple[str, ...],
    not_modelled: tuple[str, ...],
    lossless: tuple[str, ...] = (),
) -> JsonObject:
    """What a simulation reports: FCT per class and per size bucket, totals, the lossless
    classes' drops, pauses and CNPs with what they show (``findings``), what is not
    modelled."""
    tally = summary.get("tally", {})
    pfc = lossless_figures(summary, lossless)
    return {
        "classes": per_class(summary, classes),
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
    """The lossless classes' row (the CLI prints it under the FCT table): drops (must be
    0), time paused summed over the groups, PAUSE frames, DCQCN's CNPs."""
    name = "+".join(figures["classes"])
    by_port = figures["paused_us_by_port"]
    fabric_us = by_port["leaf_up"] + by_port["spine"]
    return [
        f"{'lossless':<14}{'drops':>7}{'paused µs':>12}{'to hosts':>12}{'in fabric':>11}"
        f"{'PAUSE':>8}{'CNPs':>9}",
        f"{name:<14}{figures['drops']:>7}{figures['paused_us']:>12.1f}"
        f"{by_port['leaf_down']:>12.1f}{fabric_us:>11.1f}{figures['pause_frames']:>8}"
        f"{figures['cnps']:>9}",
    ]
