"""Compile and diff benchmark: synthetic fleets (default 1,000 and 3,000 switches x 64 ports
x 8 queues), the old path beside the new one, in the same run.

- old: every switch compiled from scratch (``compile_fleet(share_shapes=False)``), then the
  plain full diff against an identical observed state (``diff_fleet``, entry by entry);
- new: each switch shape compiled once with its table digests (``compile_fleet_digested``),
  then the digest diff (``diff_fleet(digests=...)``) against the same observed state whose
  digests are known (what a reconcile loop keeps while the switch reports no change);
- also shown: digesting an observed state from scratch (the price when its digests are not
  known), the all-adds diff against an empty switch, and a plain copy of the entries
  (``{key: dict(fields)}``), the least any step building the entries could cost.

Each (fleet size, path) runs in its own fresh process, one after the other, so peak RSS is
that path's own. Reproduce: ``uv run python -m bench.compile_bench`` (``--switches 1000
3000``, ``--ports 64``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from controller.intent.models import (
    EcnMode,
    Fabric,
    GnmiEndpoint,
    Intent,
    Port,
    Role,
    Scheduling,
    SchedulingType,
    ServiceClass,
    Switch,
)
from controller.intent.validate import validate_intent
from controller.sonic.compile import compile_fleet, compile_fleet_digested
from controller.sonic.diff import diff_fleet
from controller.sonic.digest import table_digests
from controller.sonic.model import Plan, SwitchConfig

T = TypeVar("T")

# (queue, scheduling, DWRR weight, ECN mode): eight queues, every static mode, one dynamic one.
CLASSES = (
    (7, SchedulingType.STRICT, None, EcnMode.OFF),
    (6, SchedulingType.STRICT, None, EcnMode.STANDARD),
    (5, SchedulingType.DWRR, 10, EcnMode.PER_QUEUE_MINIMUM),
    (4, SchedulingType.DWRR, 20, EcnMode.MQECN),
    (3, SchedulingType.DWRR, 30, EcnMode.MQECN),
    (2, SchedulingType.DWRR, 15, EcnMode.STANDARD),
    (1, SchedulingType.DWRR, 15, EcnMode.PER_QUEUE_MINIMUM),
    (0, SchedulingType.DWRR, 10, EcnMode.MQECN),
)


def _switch(index: int, ports: int) -> Switch:
    # One switch in four is a spine (all 100G); leaves have 25G host ports and 100G uplinks.
    spine = index % 4 == 3
    speeds = [100 if spine or p >= ports * 3 // 4 else 25 for p in range(ports)]
    return Switch(
        name=f"sw{index:04d}",
        role=Role.SPINE if spine else Role.LEAF,
        gnmi=GnmiEndpoint(address=f"10.{index // 250}.{index % 250}.1", port=8080),
        credential_ref="env:SLUICE_GNMI_PASSWORD",
        ports=tuple(Port(name=f"Ethernet{4 * p}", speed_gbps=s) for p, s in enumerate(speeds)),
    )


def synthetic_intent(switches: int, ports: int) -> Intent:
    classes = tuple(
        ServiceClass(
            name=f"class{queue}",
            dscp=(8 * queue, 8 * queue + 2),
            queue=queue,
            scheduling=Scheduling(type=kind, weight=weight),
            ecn=ecn,
        )
        for queue, kind, weight, ecn in CLASSES
    )
    fabric = Fabric(base_rtt_us=40, mtu_bytes=9100, port_buffer_bytes=4_000_000)
    intent = Intent(
        fabric=fabric,
        switches=tuple(_switch(i, ports) for i in range(switches)),
        service_classes=classes,
    )
    return validate_intent(intent)


@dataclass
class Steps:
    """What one (fleet size, path) run measured: per step wall and CPU seconds, peak RSS."""

    entries: int = 0
    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)
    peak_rss_mb: float = 0.0

    def timed(self, step: str, fn: Callable[[], T]) -> T:
        # The machine is shared: wall time includes waiting for a core, CPU time does not.
        cpu = time.process_time()
        start = time.perf_counter()
        result = fn()
        self.wall[step] = time.perf_counter() - start
        self.cpu[step] = time.process_time() - cpu
        return result


def plain_copy(fleet: dict[str, SwitchConfig]) -> dict[str, SwitchConfig]:
    return {
        name: {key: dict(fields) for key, fields in config.items()}
        for name, config in fleet.items()
    }


def _ops(plans: dict[str, Plan]) -> int:
    return sum(len(plan.ops) for plan in plans.values())


def run_path(path: str, switches: int, ports: int) -> Steps:
    """One path on one fleet, in the calling (fresh) process."""
    intent = synthetic_intent(switches, ports)
    steps = Steps()
    if path == "old":
        fleet = steps.timed("compile", lambda: compile_fleet(intent, share_shapes=False))
        observed = steps.timed("copy", lambda: plain_copy(fleet))
        plans = steps.timed("no-drift diff", lambda: diff_fleet(fleet, observed))
    elif path == "new":
        compiled = steps.timed("compile", lambda: compile_fleet_digested(intent))
        fleet = compiled.configs
        observed = plain_copy(fleet)
        known = {name: (d, d) for name, d in compiled.digests.items()}
        plans = steps.timed("no-drift diff", lambda: diff_fleet(fleet, observed, digests=known))
        fresh = steps.timed(
            "digest observed", lambda: {n: table_digests(c) for n, c in observed.items()}
        )
        pairs = {name: (compiled.digests[name], fresh[name]) for name in fleet}
        steps.ops["digest diff, observed digested"] = _ops(
            diff_fleet(fleet, observed, digests=pairs)
        )
    else:  # all adds: both paths diff an empty switch entry by entry
        fleet = compile_fleet(intent)
        plans = steps.timed("all-adds diff", lambda: diff_fleet(fleet, {}))
    steps.entries = sum(len(config) for config in fleet.values())
    steps.ops[path] = _ops(plans)
    steps.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return steps


def _in_fresh_process(path: str, switches: int, ports: int) -> Steps:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return pool.submit(run_path, path, switches, ports).result()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--switches", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--ports", type=int, default=64)
    args = parser.parse_args(argv)
    print(f"{'switches':>8} {'step':<36} {'wall s':>8} {'cpu s':>8} {'ratio':>7} {'peak RSS':>9}")
    for switches in args.switches:
        old, new, adds = (
            _in_fresh_process(p, switches, args.ports) for p in ("old", "new", "adds")
        )
        _report(switches, old, new, adds)
    flags = " ".join(str(n) for n in args.switches)
    print(
        f"reproduce: uv run python -m bench.compile_bench --switches {flags} --ports {args.ports}"
    )


def _report(switches: int, old: Steps, new: Steps, adds: Steps) -> None:
    """Old beside new. Ratio, on the new rows: the old path's CPU seconds over the new one's
    (above 1: the new path is faster)."""
    if old.ops["old"] or new.ops["new"] or new.ops["digest diff, observed digested"]:
        raise SystemExit("a no-drift diff produced ops: the paths disagree")
    both = ("compile", "no-drift diff")
    for step in both:
        _line(switches, f"old {step}", old.wall[step], old.cpu[step], None)
        _line(switches, f"new {step}", new.wall[step], new.cpu[step], old.cpu[step])
    old_total = (sum(old.wall[s] for s in both), sum(old.cpu[s] for s in both))
    new_total = (sum(new.wall[s] for s in both), sum(new.cpu[s] for s in both))
    _line(switches, "old compile + no-drift diff", *old_total, None, old.peak_rss_mb)
    _line(switches, "new compile + no-drift diff", *new_total, old_total[1], new.peak_rss_mb)
    step = "digest observed"
    _line(switches, "new: digest observed from scratch", new.wall[step], new.cpu[step], None)
    step = "all-adds diff"
    label = f"all-adds diff ({adds.ops['adds']} ops)"
    _line(switches, label, adds.wall[step], adds.cpu[step], None, adds.peak_rss_mb)
    label = f"baseline: plain copy ({old.entries} entries)"
    _line(switches, label, old.wall["copy"], old.cpu["copy"], None)


def _line(
    switches: int,
    label: str,
    wall: float,
    cpu: float,
    against_cpu: float | None,
    rss_mb: float | None = None,
) -> None:
    ratio = f"{against_cpu / cpu:6.2f}x" if against_cpu is not None and cpu > 0 else ""
    rss = f"{rss_mb:6.0f} MB" if rss_mb is not None else ""
    print(f"{switches:>8} {label:<36} {wall:8.3f} {cpu:8.3f} {ratio:>7} {rss:>9}")


if __name__ == "__main__":
    main()
