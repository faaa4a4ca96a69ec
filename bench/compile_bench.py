"""Compile and diff benchmark: a synthetic fleet (default 1,000 switches x 64 ports x 8 queues).

Times ``compile_fleet``, ``diff_fleet`` against an empty observed state (every entry an add)
and against an identical one (no ops), and a baseline measured in the same run: a plain copy
of the same entries (``{key: dict(fields)}``), the least any of these steps could cost.

Reproduce: ``uv run python -m bench.compile_bench`` (``--switches N`` for a smaller fleet).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TypeVar

from controller.policy.models import (
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
from controller.policy.validate import validate_intent
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import diff_fleet
from controller.sonic.model import SwitchConfig

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


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Result and wall-clock seconds; CPU seconds of the process are kept in CPU_SECONDS."""
    cpu = time.process_time()
    start = time.perf_counter()
    result = fn()
    CPU_SECONDS.append(time.process_time() - cpu)
    return result, time.perf_counter() - start


# CPU seconds of each timed step, in order: the machine is shared, so wall time includes
# waiting for a core; CPU time is what the code itself spent.
CPU_SECONDS: list[float] = []


def plain_copy(fleet: dict[str, SwitchConfig]) -> dict[str, SwitchConfig]:
    return {
        name: {key: dict(fields) for key, fields in config.items()}
        for name, config in fleet.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--switches", type=int, default=1000)
    parser.add_argument("--ports", type=int, default=64)
    args = parser.parse_args(argv)
    intent, build_s = timed(lambda: synthetic_intent(args.switches, args.ports))
    CPU_SECONDS.clear()
    fleet, compile_s = timed(lambda: compile_fleet(intent))
    entries = sum(len(config) for config in fleet.values())
    copy, copy_s = timed(lambda: plain_copy(fleet))
    adds, add_s = timed(lambda: diff_fleet(fleet, {}))
    noops, noop_s = timed(lambda: diff_fleet(fleet, copy))
    ops_add = sum(len(plan.ops) for plan in adds.values())
    ops_noop = sum(len(plan.ops) for plan in noops.values())
    total = compile_s + add_s + noop_s
    print(f"fleet: {args.switches} switches x {args.ports} ports x {len(CLASSES)} queues")
    per_switch = entries / max(args.switches, 1)
    print(f"entries: {entries} ({per_switch:.0f} per switch); intent built in {build_s:.2f} s")
    compile_cpu, copy_cpu, add_cpu, noop_cpu = CPU_SECONDS
    print(f"{'step':<40} {'wall':>9} {'entries/s':>12} {'vs copy':>8} {'cpu':>9}")
    _row("baseline: plain dict copy", copy_s, entries, copy_s, copy_cpu)
    _row("compile_fleet", compile_s, entries, copy_s, compile_cpu)
    _row(f"diff_fleet vs empty ({ops_add} ops)", add_s, entries, copy_s, add_cpu)
    _row(f"diff_fleet vs identical ({ops_noop} ops)", noop_s, entries, copy_s, noop_cpu)
    total_cpu = compile_cpu + add_cpu + noop_cpu
    print(f"{'compile + both diffs':<40} {total:8.3f}s {'':>12} {'':>8} {total_cpu:8.3f}s")
    print("reproduce: uv run python -m bench.compile_bench" + _flags(args))


def _row(label: str, seconds: float, entries: int, baseline_s: float, cpu_s: float) -> None:
    rate = entries / seconds if seconds > 0 else float("inf")
    ratio = seconds / baseline_s if baseline_s > 0 else float("inf")
    print(f"{label:<40} {seconds:8.3f}s {rate:12,.0f} {ratio:7.1f}x {cpu_s:8.3f}s")


def _flags(args: argparse.Namespace) -> str:
    out = "" if args.switches == 1000 else f" --switches {args.switches}"
    return out + ("" if args.ports == 64 else f" --ports {args.ports}")


if __name__ == "__main__":
    main()
