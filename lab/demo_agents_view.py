"""The agent demo's pure part: the traffic schedule and its data plane traffic file, the
queues shown, throughput and marking rates from counter deltas, and the printed table and
phase summary. ``lab.demo_agents`` does the I/O around it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from controller.intent.models import Intent, ServiceClass
from lab.demo_common import DemoError

DEMO_SWITCH = "leaf1"
DEMO_PORT = "Ethernet0"  # a 25 G host port: its line rate fits the data plane's real time
# One letter for who set the threshold in force: the agent's basis (STATE_DB), or the
# controller's static profile on a queue the agent does not manage.
BASIS_FLAGS = {"computed": "C", "kept": "K", "stale_fallback": "F", "static_ordered": "O"}
STATIC_FLAG = "S"


@dataclass(frozen=True)
class Burst:
    """One service class sending from ``start_s`` to ``stop_s`` (seconds after the reload)."""

    service_class: str
    start_s: float
    stop_s: float


@dataclass(frozen=True)
class AgentDemo:
    """What the step runs: where, which classes when, and how the senders behave."""

    switch: str = DEMO_SWITCH
    port: str = DEMO_PORT
    schedule: tuple[Burst, ...] = (
        Burst("storage", 0.0, 15.0),
        Burst("analytics", 5.0, 20.0),
        Burst("best-effort", 10.0, 20.0),
    )
    tick_s: float = 1.0
    flows: int = 2  # DCTCP senders per class
    packet_bytes: int = 9000  # within the example fabric's 9100 B MTU: fewer packets per Gb/s

    @property
    def end_s(self) -> float:
        return max(b.stop_s for b in self.schedule)


@dataclass(frozen=True)
class ShownQueue:
    """A queue of the demo port and the service class that owns it."""

    queue: int
    name: str
    ecn: str
    weight: int | None
    dscp: int


@dataclass(frozen=True)
class QueueReading:
    """One queue at one moment, as read from the switch's Redis."""

    queue: int
    threshold_bytes: int | None  # the queue's WRED marking point; None: no WRED profile
    flag: str  # who set it: BASIS_FLAGS or STATIC_FLAG
    tx_bytes: int
    marked_packets: int
    occupancy_bytes: int


@dataclass(frozen=True)
class Reading:
    at_s: float  # seconds since the traffic reload
    queues: dict[int, QueueReading] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueRow:
    """What one printed line says about one queue over one tick."""

    threshold_bytes: int | None
    flag: str
    gbps: float
    marks_per_s: float
    occupancy_bytes: int


# --------------------------------------------------------------------------------------------
# pure: classes, traffic file, rows, rendering


def shown_queues(intent: Intent, schedule: Sequence[Burst]) -> list[ShownQueue]:
    """The queues the schedule's classes land in, highest weight first."""
    by_name: dict[str, ServiceClass] = {c.name: c for c in intent.service_classes}
    missing = sorted({b.service_class for b in schedule} - by_name.keys())
    if missing:
        raise DemoError(f"the intent has no service class named {', '.join(missing)}")
    names = dict.fromkeys(b.service_class for b in schedule)
    queues = [
        ShownQueue(c.queue, c.name, c.ecn.value, c.scheduling.weight, c.dscp[0])
        for c in (by_name[n] for n in names)
    ]
    return sorted(queues, key=lambda q: (-(q.weight or 0), q.queue))


def traffic_text(demo: AgentDemo, queues: Sequence[ShownQueue], rtt_us: float) -> str:
    """The data plane's traffic file (docs/dataplane.md): one DCTCP class per burst, on the
    class's DSCP, times in ms from the reload."""
    dscp = {q.name: q.dscp for q in queues}
    lines = [f"# sluice demo: service classes starting and stopping on {demo.switch} {demo.port}"]
    for b in demo.schedule:
        lines.append(
            f"{b.service_class} port={demo.port} dscp={dscp[b.service_class]} kind=dctcp "
            f"flows={demo.flows} packet_bytes={demo.packet_bytes} rtt_us={rtt_us:g} "
            f"start={round(b.start_s * 1000)}ms stop={round(b.stop_s * 1000)}ms"
        )
    return "\n".join(lines) + "\n"


def active_at(schedule: Sequence[Burst], t_s: float) -> list[str]:
    return [b.service_class for b in schedule if b.start_s <= t_s < b.stop_s]


def boundaries(schedule: Sequence[Burst]) -> list[float]:
    """Every moment a class starts or stops, in order."""
    return sorted({b.start_s for b in schedule} | {b.stop_s for b in schedule})


def events_between(schedule: Sequence[Burst], after_s: float, until_s: float) -> list[str]:
    """``"5.0 s  analytics starts"`` for every start and stop in (after_s, until_s]."""
    out: list[tuple[float, str]] = []
    for b in schedule:
        for at, what in ((b.start_s, "starts"), (b.stop_s, "stops")):
            if after_s < at <= until_s:
                out.append((at, f"{at:.1f} s  {b.service_class} {what}"))
    return [text for _, text in sorted(out)]


def queue_row(before: QueueReading, now: QueueReading, dt_s: float) -> QueueRow:
    """Throughput and marking rate from the counter deltas over ``dt_s``; threshold, who set
    it and occupancy as they are now."""
    if dt_s <= 0:
        raise ValueError(f"dt_s must be positive, got {dt_s}")
    # Counters only grow (the data plane carries them over rebuilds); a drop is shown as 0.
    sent = max(now.tx_bytes - before.tx_bytes, 0)
    marked = max(now.marked_packets - before.marked_packets, 0)
    return QueueRow(
        now.threshold_bytes, now.flag, sent * 8 / dt_s / 1e9, marked / dt_s, now.occupancy_bytes
    )


def rows(before: Reading, now: Reading) -> dict[int, QueueRow]:
    dt = now.at_s - before.at_s
    return {q: queue_row(before.queues[q], r, dt) for q, r in now.queues.items()}


QUEUE_COLUMNS = f"{'K bytes':>10} {'':1} {'Gb/s':>6} {'marks/s':>8} {'occ KB':>7}"


def render_header(queues: Sequence[ShownQueue]) -> list[str]:
    titles = " |".join(
        f" {f'{q.name} q{q.queue} ({q.ecn}, w{q.weight or 0})':<{len(QUEUE_COLUMNS)}}"
        for q in queues
    )
    return [
        f"{'time':>6} |{titles}",
        f"{'s':>6} |" + " |".join(f" {QUEUE_COLUMNS}" for _ in queues),
    ]


def render_row(at_s: float, queues: Sequence[ShownQueue], row: Mapping[int, QueueRow]) -> str:
    cells = []
    for q in queues:
        r = row[q.queue]
        k = "-" if r.threshold_bytes is None else f"{r.threshold_bytes:,}"
        cells.append(
            f" {k:>10} {r.flag:1} {r.gbps:>6.2f} {r.marks_per_s:>8,.0f} "
            f"{r.occupancy_bytes / 1000:>7.1f}"
        )
    return f"{at_s:>6.1f} |" + " |".join(cells)


@dataclass(frozen=True)
class PhaseSummary:
    start_s: float
    end_s: float
    active: list[str]
    threshold_bytes: dict[int, int | None]  # at the phase's last reading
    gbps: dict[int, float]  # mean over the phase, its first second left out (settling)


def summarize(
    schedule: Sequence[Burst], readings: Sequence[Reading], settle_s: float = 1.0
) -> list[PhaseSummary]:
    """One summary per phase between two boundaries that has two readings past its settling
    second and before its end."""
    out = []
    edges = boundaries(schedule)
    for start, end in itertools.pairwise(edges):
        inside = [r for r in readings if start + settle_s <= r.at_s <= end]
        if len(inside) < 2:
            continue
        first, last = inside[0], inside[-1]
        gbps = {
            q: queue_row(first.queues[q], last.queues[q], last.at_s - first.at_s).gbps
            for q in last.queues
        }
        thresholds = {q: r.threshold_bytes for q, r in last.queues.items()}
        out.append(PhaseSummary(start, end, active_at(schedule, start), thresholds, gbps))
    return out


SUMMARY_CELL = 26  # "  125,000 B   25.04 Gb/s"


def render_summary(queues: Sequence[ShownQueue], phases: Sequence[PhaseSummary]) -> list[str]:
    head = "".join(f"{f'{q.name} q{q.queue}':>{SUMMARY_CELL}}" for q in queues)
    lines = [f"{'phase':<12}{'sending':<34}{head}"]
    for p in phases:
        cells = ""
        for q in queues:
            k = p.threshold_bytes.get(q.queue)
            cells += f"{'-' if k is None else f'{k:,} B':>14} {p.gbps.get(q.queue, 0.0):>6.2f} Gb/s"
        span = f"{p.start_s:g}-{p.end_s:g} s"
        lines.append(f"{span:<12}{', '.join(p.active) or 'nothing':<34}{cells}")
    return lines
