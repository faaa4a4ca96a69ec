"""How soon the drift watch sees a change made behind sluice's back, through SONiC's own gNMI
server, beside vsonic serving the same switch.

One switch's redis in SONiC's layout (``lab/realsonic.py``: redis, and sonic-net/sonic-gnmi's
``telemetry`` server, no orchagent or GCU), and vsonic (``python -m vsonic.serve
--redis-port``) over that same redis. The switch holds one entry of a table sluice owns
(``SCHEDULER``), as a switch sluice configured does. Two drift watches run in this process
(``controller.reconcile.watch.WatcherThread``, the worker's, ON_CHANGE on the tables sluice
owns, its default debounce): one through each server. Then ``--drifts`` times the entry's
weight is changed by a redis HSET into CONFIG_DB (an operator's ``config`` command, behind
sluice), and the time from that write until each watch reports the switch drifted is taken.
Both watches see the same writes, so each drift is a pair: vsonic's time is the baseline,
SONiC's is measured against it in the same run.

Reproduce: ``uv run python -m bench.drift_realsonic_bench`` (``--drifts``, ``--gap-s``; SONiC's
bundles beside the clone or ``$SLUICE_SONIC_BUNDLE``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from controller.reconcile.watch import WatcherThread, WatchPolicy, WatchState
from controller.southbound.gnmi import GnmiTarget

REPRODUCE = "uv run python -m bench.drift_realsonic_bench"
PASSWORD = "drift-realsonic-bench"
SWITCH = "sonic"  # vsonic's name for the one switch it serves (``--names``)
TABLE = "SCHEDULER"
ENTRY = f"{TABLE}|SLUICE_BENCH"
SERVERS = ("vsonic", "sonic")
WAIT_S = 30.0  # a drift not reported within this is counted missed


@dataclass
class Reports:
    """When a watch reported the switch drifted in ``TABLE`` (monotonic seconds)."""

    times: list[float] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def on_drift(self, switch: str, table: str | None) -> None:
        if switch == SWITCH and table in (TABLE, None):
            with self.changed:
                self.times.append(time.monotonic())
                self.changed.notify_all()

    def first_after(self, start: float, within_s: float) -> float | None:
        with self.changed:
            self.changed.wait_for(lambda: any(t >= start for t in self.times), within_s)
            later = [t for t in self.times if t >= start]
        return min(later) if later else None


@contextmanager
def watching(port: int, reports: Reports, seed: int) -> Iterator[WatcherThread]:
    target = GnmiTarget(SWITCH, "127.0.0.1", port, "admin", SecretStr(PASSWORD))
    watcher = WatcherThread(reports.on_drift, WatchPolicy(), rand=random.Random(seed).random)
    try:
        watcher.sync({SWITCH: target})
        deadline = time.monotonic() + 60
        while watcher.states().get(SWITCH) is not WatchState.WATCHING:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the watch through port {port} never started watching")
            time.sleep(0.1)
        yield watcher
    finally:
        watcher.close()


def summary(latencies: Sequence[float | None]) -> dict[str, Any]:
    seen = sorted(x for x in latencies if x is not None)
    if not seen:
        return {"seen": 0, "missed": len(latencies)}
    return {
        "seen": len(seen),
        "missed": len(latencies) - len(seen),
        "median_ms": statistics.median(seen) * 1e3,
        "p90_ms": seen[min(len(seen) - 1, int(0.9 * len(seen)))] * 1e3,
        "max_ms": seen[-1] * 1e3,
    }


def measure(drifts: int, gap_s: float) -> dict[str, Any]:
    from bench.southbound_support import start_vsonic
    from lab.realsonic import RealSwitch, SwitchParts, prepare_bundle

    result: dict[str, Any] = {"drifts": drifts, "load_before": os.getloadavg()}
    parts = SwitchParts(orchagent=False, buffermgrd=False, gcu=False)
    with RealSwitch(prepare_bundle(), parts) as switch:
        flags = ["--names", SWITCH, "--redis-port", str(switch.redis_port), "--ports", "8"]
        vsonic, vsonic_port = start_vsonic(flags, PASSWORD)
        config = switch.db("CONFIG_DB")
        config.hset(ENTRY, mapping={"type": "DWRR", "weight": "50"})
        ports = {"vsonic": vsonic_port, "sonic": switch.gnmi_port}
        reports = {server: Reports() for server in SERVERS}
        latencies: dict[str, list[float | None]] = {server: [] for server in SERVERS}
        try:
            with (
                watching(ports["vsonic"], reports["vsonic"], 1),
                watching(ports["sonic"], reports["sonic"], 2),
            ):
                time.sleep(gap_s)  # what syncing reported is out
                for n in range(drifts):
                    start = time.monotonic()
                    config.hset(ENTRY, "weight", str(51 + n % 40))
                    for server in SERVERS:
                        seen = reports[server].first_after(start, WAIT_S)
                        latencies[server].append(None if seen is None else seen - start)
                    time.sleep(gap_s)  # the debouncer's report of this drift is out
                    print(f"drift {n + 1}/{drifts}", file=sys.stderr, flush=True)
        finally:
            vsonic.terminate()
            vsonic.wait(timeout=30)
    for server in SERVERS:
        result[server] = summary(latencies[server])
    result["load_after"] = os.getloadavg()
    return result


def render(r: dict[str, Any]) -> str:
    lines = [
        f"{r['drifts']} drifts (HSET of {ENTRY} weight into CONFIG_DB), time until the ON_CHANGE "
        "drift watch reports the switch",
        f"{'server':<34}{'seen':>6}{'missed':>8}{'median ms':>11}{'p90 ms':>9}{'max ms':>9}",
    ]
    labels = {"vsonic": "vsonic (baseline)", "sonic": "SONiC's gNMI server (telemetry)"}
    for server in SERVERS:
        x = r[server]
        if not x["seen"]:
            lines.append(f"{labels[server]:<34}{0:>6}{x['missed']:>8}")
            continue
        lines.append(
            f"{labels[server]:<34}{x['seen']:>6}{x['missed']:>8}{x['median_ms']:>11.1f}"
            f"{x['p90_ms']:>9.1f}{x['max_ms']:>9.1f}"
        )
    if r["vsonic"]["seen"] and r["sonic"]["seen"]:
        ratio = r["sonic"]["median_ms"] / r["vsonic"]["median_ms"]
        lines.append(f"median SONiC / vsonic: {ratio:.2f}")
    load = ", ".join(f"{v:.2f}" for v in r["load_before"])
    lines.append(f"load average before: {load}")
    lines.append(f"reproduce: {REPRODUCE} --drifts {r['drifts']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--drifts", type=int, default=20)
    parser.add_argument("--gap-s", type=float, default=0.5, help="wait between drifts")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    result = measure(args.drifts, args.gap_s)
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
