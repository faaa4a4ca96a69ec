"""One scrape of a collector's metrics: sluice's own text exposition against prometheus_client.

``uv run python -m bench.telemetry_scrape_bench --switches 250 [--lossless]``

Builds the state of N switches x 64 ports x 8 queues in one process (every queue and port
with rates, an agent threshold per queue: the series a collector streaming those switches
exports; with ``--lossless`` one lossless class on priority 3 as well, and what SONiC counts
for it: pause frames on all eight priorities of every port, pausing on 3, its priority
group's drops and watermarks beside seven quiet groups, and the PFC watchdog's storm counts
on its queue), then times, in the same run, ``TelemetryMetrics.render`` (controller/telemetry/
metrics.py, the counter and PFC families written by the compiled core) and two baselines: the
same exposition written in Python (``tests/support/reference_exposition.py``'s
``ReferenceMetrics``, the collector's code path before the core), and the same samples as
prometheus_client metric families (``GaugeMetricFamily.add_metric`` per sample, as the
collector built them before that) rendered by ``generate_latest``. With ``--lossless``, also
the scrape before the PFC families moved into the core (``PfcInPython``) and the same fleet
without the lossless class, so the PFC lines' own cost a switch is had both ways. CPU seconds
of this process, best of ``--repeats``; the Python paths must render the same bytes, and
prometheus_client the same number of samples.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from controller.telemetry.metrics import COUNTER_NAMES, TelemetryMetrics
from controller.telemetry.state import SwitchTelemetry
from tests.support.reference_exposition import PFC_RX, ReferenceMetrics, pfc_lines

S = 1_000_000_000
T = TypeVar("T")


LOSSLESS_PRIORITY = 3


def _pause_frames(t: int) -> dict[str, str]:
    """A port's pause frame counts at tick ``t``: all eight priorities, the lossless one
    moving."""
    pause = {}
    for priority in range(8):
        moving = 100 * t if priority == LOSSLESS_PRIORITY else 0
        pause[f"SAI_PORT_STAT_PFC_{priority}_RX_PKTS"] = str(moving)
        pause[f"SAI_PORT_STAT_PFC_{priority}_TX_PKTS"] = str(moving // 2)
    return pause


def _lossless_counters(
    sw: SwitchTelemetry, s: int, names: list[str], queues: dict[str, str]
) -> None:
    """The rest of what SONiC writes for a lossless class on ``LOSSLESS_PRIORITY`` (its pause
    frames are in the ports' hashes): eight priority groups per port (only the lossless one
    with drops and watermarks), and the watchdog's counts in the lossless queue's hash."""
    pgs = {f"{p}:{g}": f"oid:0x1a{s:04x}{i:03x}{g}" for i, p in enumerate(names) for g in range(8)}
    sw.set_pg_map(pgs)
    for t in (1, 2):
        for name, oid in pgs.items():
            lossless = name.endswith(f":{LOSSLESS_PRIORITY}")
            group = {"SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS": str(t if lossless else 0)}
            if lossless:
                group["SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES"] = "3000"
                group["SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES"] = "1000"
            sw.counters(oid, group, t * S)
    watchdog = {"SAI_QUEUE_STAT_PACKETS": "2000", "PFC_WD_STATUS": "operational",
                "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": "2",
                "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": "2"}  # fmt: skip
    for p in names:
        sw.counters(queues[f"{p}:{LOSSLESS_PRIORITY}"], watchdog, 2 * S)


def fleet(switches: int, ports: int, lossless: bool = False) -> list[SwitchTelemetry]:
    out = []
    for s in range(switches):
        names = [f"Ethernet{4 * i}" for i in range(ports)]
        # The lossless class's queue is its priority's (docs/lossless.md).
        klass = "roce" if lossless else "storage"
        pfc_classes = {str(LOSSLESS_PRIORITY): klass} if lossless else {}
        speeds = dict.fromkeys(names, 100e9)
        sw = SwitchTelemetry(f"leaf{s:04d}", speeds, {"3": klass}, pfc_classes=pfc_classes)
        queues = {f"{p}:{q}": f"oid:0x15{s:04x}{i:03x}{q}" for i, p in enumerate(names)
                  for q in range(8)}  # fmt: skip
        port_oids = {p: f"oid:0x10{s:04x}{i:03x}" for i, p in enumerate(names)}
        sw.set_queue_map(queues)
        sw.set_port_map(port_oids)
        for t in (1, 2):
            fields = {"SAI_QUEUE_STAT_PACKETS": str(1000 * t), "SAI_QUEUE_STAT_BYTES":
                      str(1_500_000 * t), "SAI_QUEUE_STAT_DROPPED_PACKETS": str(t),
                      "SAI_QUEUE_STAT_DROPPED_BYTES": str(1500 * t),
                      "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": str(10 * t),
                      "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "5000"}  # fmt: skip
            for oid in queues.values():
                sw.counters(oid, fields, t * S)
            octets = {"SAI_PORT_STAT_IF_OUT_OCTETS": str(10**9 * t),
                      "SAI_PORT_STAT_IF_IN_OCTETS": str(10**9 * t),
                      **(_pause_frames(t) if lossless else {})}  # fmt: skip
            for oid in port_oids.values():
                sw.counters(oid, octets, t * S)
        if lossless:
            _lossless_counters(sw, s, names, queues)
        agent = {"heartbeat": "1000", "mode": "active", "algorithm": "l2bm", "version": "ab",
                 "loop_us": "200"}  # fmt: skip
        sw.agent_state("global", agent, 2 * S)
        for p in names:
            for q in range(8):
                state = {"threshold_bytes": "40000", "basis": "computed"}
                sw.agent_state(f"{p}|{q}", state, 2 * S)
        sw.stream_up = True
        out.append(sw)
    return out


class PfcInPython(TelemetryMetrics):
    """The scrape before the PFC families moved into the core: the counter families by the
    core, the PFC families in Python (the core writes its PFC lines too and they are dropped,
    so this baseline carries the core's PFC cost besides its own)."""

    def counter_chunks(self, sw: SwitchTelemetry) -> list[bytes]:
        core = sw.counter_lines(COUNTER_NAMES)[:PFC_RX]
        return core + [text.encode() for text in pfc_lines(sw, COUNTER_NAMES)]


class FamiliesOf:
    """The baseline: prometheus_client families made from the samples at each collect."""

    def __init__(self, text: bytes) -> None:
        self._families = [
            (f.name, f.documentation, f.type, [(s.labels, s.value) for s in f.samples])
            for f in text_string_to_metric_families(text.decode())
        ]

    def collect(self) -> Iterator[Metric]:
        for name, doc, kind, samples in self._families:
            labels = list(samples[0][0]) if samples else []
            family_type = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            family = family_type(name, doc, labels=labels)
            for values, value in samples:
                family.add_metric(list(values.values()), value)
            yield family


def _best_cpu_s(run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The least CPU time of ``repeats`` runs (at least one), and the last run's result."""
    start = time.process_time()
    result = run()
    best = time.process_time() - start
    for _ in range(repeats - 1):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return best, result


def _samples(text: bytes) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))


def _render_s(metrics_type: type[TelemetryMetrics], switches: list[SwitchTelemetry],
              repeats: int) -> tuple[float, bytes]:  # fmt: skip
    metrics = metrics_type("0/1", lambda: switches, lambda: 3 * S)
    return _best_cpu_s(metrics.render, repeats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--switches", type=int, default=20)
    parser.add_argument("--ports", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--lossless", action="store_true", help="a lossless class on priority 3, PFC counters"
    )
    args = parser.parse_args(argv)
    switches = fleet(args.switches, args.ports, args.lossless)
    ours_s, text = _render_s(TelemetryMetrics, switches, args.repeats)
    samples = _samples(text)
    python_s, python_text = _render_s(ReferenceMetrics, switches, args.repeats)
    registry = CollectorRegistry()
    registry.register(FamiliesOf(text))
    base_s, base_text = _best_cpu_s(lambda: generate_latest(registry), args.repeats)
    if python_text != text:
        raise SystemExit("the Python path rendered another exposition")
    if _samples(base_text) != samples:
        raise SystemExit("prometheus_client rendered a different number of samples")

    def per_sample(cpu_s: float) -> str:
        return (
            f"{cpu_s:.2f} CPU s ({cpu_s / samples * 1e6:.2f} us a sample, "
            f"{cpu_s / args.switches * 1e6:,.0f} us a switch)"
        )

    lossless = f", a lossless class on priority {LOSSLESS_PRIORITY}" if args.lossless else ""
    print(
        f"{args.switches} switches x {args.ports} ports{lossless}: {samples:,} samples, "
        f"{len(text) / 2**20:,.0f} MiB of text\n"
        f"sluice render (counter and PFC families by the core): {per_sample(ours_s)}\n"
        f"baseline: the same in Python (before the core): {per_sample(python_s)}\n"
        f"baseline: prometheus_client families + generate_latest: {per_sample(base_s)}\n"
        f"ratio Python / render: {python_s / ours_s:.1f}x; "
        f"prometheus_client / render: {base_s / ours_s:.1f}x"
    )
    if args.lossless:
        _pfc_lines_cost(args, switches, ours_s, text)
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def _pfc_lines_cost(
    args: argparse.Namespace, switches: list[SwitchTelemetry], ours_s: float, text: bytes
) -> None:
    """The scrape before the PFC families moved into the core against this one; and the PFC
    lines' own cost a switch: in Python (``pfc_lines`` alone) and by the core (its lines of
    the lossless fleet less those of the same fleet without the lossless class), best of at
    least five, all in this run."""
    before_s, before_text = _render_s(PfcInPython, switches, args.repeats)
    if before_text != text:
        raise SystemExit("the PFC lines in Python differ from the core's")
    plain = fleet(args.switches, args.ports)
    repeats = max(args.repeats, 5)

    def core_lines(fleet_: list[SwitchTelemetry]) -> float:
        return _best_cpu_s(lambda: [sw.counter_lines(COUNTER_NAMES) for sw in fleet_], repeats)[0]

    core_s = core_lines(switches) - core_lines(plain)
    python_s, _ = _best_cpu_s(lambda: [pfc_lines(sw, COUNTER_NAMES) for sw in switches], repeats)
    lines = (_samples(text) - _samples(_render_s(TelemetryMetrics, plain, 1)[1])) // args.switches

    def per_switch(cpu_s: float) -> str:
        return f"{cpu_s / args.switches * 1e6:,.0f} us a switch"

    print(
        f"baseline: PFC families in Python, the rest by the core (before this change): "
        f"{per_switch(before_s)}; ratio before / render: {before_s / ours_s:.2f}x\n"
        f"the PFC lines alone ({lines} a switch): Python {per_switch(python_s)}, core "
        f"{per_switch(core_s)} (its lines of this fleet less those of the fleet without the "
        f"lossless class); ratio Python / core {python_s / max(core_s, 1e-9):.1f}x"
    )


if __name__ == "__main__":
    raise SystemExit(main())
