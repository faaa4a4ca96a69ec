"""The collector's cost against SONiC's own gNMI server, beside vsonic serving the same switch.

One switch laid out as orchagent lays out a 32-port switch over libsaivs (32 ports x 20
queues: 672 counter objects, vsonic's seed layout) in a redis in SONiC's layout, its counters
rewritten every second as syncd's flex counters would (an HSET per object). Two gNMI servers
read that one redis: SONiC's (``lab/realsonic.py``, sonic-net/sonic-gnmi ``telemetry``) and
vsonic (``python -m vsonic.serve --redis-port``). Each client runs in a process of its own and
is measured over the same window (CPU seconds of the client, and of the server it reads):

- ``vsonic``: the collector's streams (counters and agent state, as ``Collector`` opens them)
  against vsonic at SAMPLE 1 s: vsonic sends the whole table in one message a tick. The
  baseline.
- ``table``: the same client against SONiC's server, SAMPLE 1 s of the whole COUNTERS table:
  what the collector subscribes to. SONiC's server answers a table path with one message a
  tick too.
- ``per-object``: the same client and ingest with a subscription per counter object (the
  collector's subscription before: the name maps read first, then ``COUNTERS/<oid>`` each).
  SONiC's server sends one message per path per tick, and holds a redis connection per path.
- ``on-change``: the collector's table subscription in ON_CHANGE mode (its default): one
  message per object each time its counters are written, here every second.

Reproduce: ``uv run python -m bench.telemetry_realsonic_bench`` (``--ports``, ``--queues``,
``--duration``, ``--warmup``; SONiC's bundles beside the clone or ``$SLUICE_SONIC_BUNDLE``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPRODUCE = "uv run python -m bench.telemetry_realsonic_bench"
PASSWORD = "telemetry-realsonic-bench"
ROLES = ("vsonic", "table", "per-object", "on-change")
NS_PER_S = 1_000_000_000


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ---------------------------------------------------------------------------------------------
# one client (``--role``, in a process of its own)


async def _client(role: str, port: int, ports: int, warmup: float, duration: float) -> None:
    from pydantic import SecretStr

    from controller.southbound.gnmi import GnmiTarget
    from controller.southbound.subscribe import (
        AgentStateSession,
        CounterSession,
        Decoder,
        EndpointChannels,
        Notification,
        StreamPolicy,
        SubMode,
        SupervisedStream,
    )
    from controller.telemetry.ingest import SwitchHandler
    from controller.telemetry.state import SwitchTelemetry

    target = GnmiTarget("sonic", "127.0.0.1", port, "admin", SecretStr(PASSWORD))
    mode = SubMode.ON_CHANGE if role == "on-change" else SubMode.SAMPLE
    policy = StreamPolicy(counter_mode=mode, sample_interval_s=1.0)
    speeds = {f"Ethernet{4 * i}": 100e9 for i in range(ports)}
    handler = SwitchHandler(SwitchTelemetry("sonic", speeds, {}), threading.Lock())
    # (messages, the handler's update count once each was applied): one tuple, replaced whole
    # after a message is applied, so a window's edge never falls between a message and its
    # updates (decode runs on the stream's thread and applies what it decodes).
    counts = (0, 0)

    def counting() -> Decoder:
        inner = handler.decoder()

        def decode(raw: bytes) -> Notification | None:
            nonlocal counts
            notification = inner(raw)
            counts = (counts[0] + 1, handler.telemetry.updates)
            return notification

        return decode

    kind = _per_object_session() if role == "per-object" else CounterSession
    counters = kind(handler, policy)
    channels = EndpointChannels()
    rand = random.Random(1).random
    streams = [
        SupervisedStream(target, channels.for_target(target, "counters"), counters,
                         policy.retry, rand=rand, decoder=counting),
        SupervisedStream(target, channels.for_target(target, "agent_state"),
                         AgentStateSession(handler), policy.retry, rand=rand),
    ]  # fmt: skip
    tasks = [asyncio.create_task(s.run()) for s in streams]
    await asyncio.sleep(warmup)
    updates, (sent, carried) = handler.telemetry.updates, counts
    cpu, began = _cpu_s(), time.monotonic()
    print("window", flush=True)
    await asyncio.sleep(duration)
    end = counts
    result = {
        "updates": handler.telemetry.updates - updates,
        "messages": end[0] - sent,
        "message_updates": end[1] - carried,
        "cpu_s": _cpu_s() - cpu,
        "seconds": time.monotonic() - began,
        "queues": len(handler.telemetry.queues),
        "faults": [str(f) for f in handler.telemetry.faults.values()],
    }
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await channels.close()
    print(json.dumps(result), flush=True)


def _per_object_session() -> type:
    from controller.southbound.gnmi import GnmiTarget
    from controller.southbound.subscribe import (
        PORT_NAME_MAP,
        QUEUE_NAME_MAP,
        CounterSession,
        Subscription,
        counters_path,
        read_once,
    )

    class Session(CounterSession):
        """The collector's counters session subscribing the way it did before: both maps
        read ONCE, then a path per counter object (SAMPLE) beside the maps (ON_CHANGE)."""

        async def subscriptions(self, channel: Any, target: GnmiTarget) -> list[Subscription]:
            await super().subscriptions(channel, target)
            maps = await read_once(channel, target, [QUEUE_NAME_MAP, PORT_NAME_MAP], 30)
            oids = sorted(maps.get(QUEUE_NAME_MAP, {}).values())
            oids += sorted(maps.get(PORT_NAME_MAP, {}).values())
            mode, interval = self._policy.counter_mode, self._policy.sample_interval_s
            objects = [Subscription(counters_path(o), mode, interval) for o in oids]
            return [Subscription(QUEUE_NAME_MAP), Subscription(PORT_NAME_MAP), *objects]

    return Session


# ---------------------------------------------------------------------------------------------
# the run


class FlexCounters:
    """Rewrites every counter object every ``every_s``, an HSET per object (one keyspace
    event each), the counts growing at a steady rate: syncd's flex-counter polls."""

    def __init__(self, db: Any, objects: dict[str, tuple[str, str]], every_s: float = 1.0) -> None:
        self._db = db
        self._objects = objects  # oid -> (its packets field, its bytes field)
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flex-counters", daemon=True)

    def start(self) -> FlexCounters:
        self._thread.start()
        return self

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(self._every_s):
            ticks += 1
            with self._db.pipeline(transaction=False) as pipe:
                for oid, (packets, octets) in self._objects.items():
                    pipe.hset(f"COUNTERS:{oid}", mapping={packets: 1000 * ticks,
                                                          octets: 1_500_000 * ticks})  # fmt: skip
                pipe.execute()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


QUEUE_FIELDS = ("SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_BYTES")
PORT_FIELDS = ("SAI_PORT_STAT_IF_OUT_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_OCTETS")


def _seed(switch: Any, ports: int, queues: int) -> dict[str, tuple[str, str]]:
    """COUNTERS_DB as vsonic's seed lays it out; each object's packets and bytes fields."""
    from vsonic.db import COUNTERS_DB
    from vsonic.seed import SwitchSeed, default_ports, seed_entries

    seed = SwitchSeed("sonic", default_ports(ports), queues_per_port=queues)
    entries = seed_entries(seed)[COUNTERS_DB]
    db = switch.db("COUNTERS_DB")
    db.flushdb()  # vsonic's own seed went first: its maps would keep their other names
    with db.pipeline(transaction=False) as pipe:
        for key, fields in entries.items():
            pipe.hset(key, mapping=fields)
        pipe.execute()
    port_oids = set(entries["COUNTERS_PORT_NAME_MAP"].values())
    return {
        oid: PORT_FIELDS if oid in port_oids else QUEUE_FIELDS
        for oid in (k.split(":", 1)[1] for k in entries if k.startswith("COUNTERS:"))
    }


def _vsonic(redis_port: int, ports: int) -> tuple[subprocess.Popen[str], int]:
    """vsonic over the switch's redis. It seeds the redis as a booted switch of ``ports``
    ports x 8 queues when it starts (every oid of which the 20-queue layout also names):
    seed the bench's layout after it."""
    from bench.southbound_support import start_vsonic

    flags = ["--names", "sonic", "--redis-port", str(redis_port), "--ports", str(ports)]
    return start_vsonic(flags, PASSWORD)


def _run_client(
    role: str, server_pid: int, port: int, ports: int, window: tuple[float, float]
) -> dict[str, Any]:
    warmup, duration = window
    args = [sys.executable, "-m", "bench.telemetry_realsonic_bench", "--role", role, "--port",
            str(port), "--ports", str(ports), "--warmup", str(warmup), "--duration",
            str(duration)]  # fmt: skip
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as client:
        assert client.stdout is not None
        if client.stdout.readline().strip() != "window":
            raise RuntimeError(f"{role}: the client did not start its window")
        before, fds = _process_cpu_s(server_pid), _open_fds(server_pid)
        result: dict[str, Any] = json.loads(client.stdout.readline())
        result["server_cpu_s"] = _process_cpu_s(server_pid) - before
        result["server_fds"] = fds
    return result


def measure(ports: int, queues: int, duration: float, warmup: float) -> dict[str, Any]:
    from lab.realsonic import RealSwitch, SwitchParts, prepare_bundle

    results: dict[str, Any] = {"ports": ports, "queues": queues, "duration": duration,
                               "load_before": os.getloadavg()}  # fmt: skip
    parts = SwitchParts(orchagent=False, buffermgrd=False, gcu=False)
    with RealSwitch(prepare_bundle(), parts) as switch:
        vsonic, vsonic_port = _vsonic(switch.redis_port, ports)
        try:
            oids = _seed(switch, ports, queues)
            results["objects"] = len(oids)
            sonic_pid = int((switch.run_dir / "gnmi.pid").read_text())
            sonic_idle_fds = _open_fds(sonic_pid)
            writer = FlexCounters(switch.db("COUNTERS_DB"), oids).start()
        except BaseException:
            vsonic.terminate()
            raise
        try:
            for role in ROLES:
                pid, port = (vsonic.pid, vsonic_port) if role == "vsonic" else (
                    sonic_pid, switch.gnmi_port)  # fmt: skip
                results[role] = _run_client(role, pid, port, ports, (warmup, duration))
                print(f"{role}: {json.dumps(results[role])}", file=sys.stderr, flush=True)
        finally:
            writer.stop()
            vsonic.terminate()
            vsonic.wait(timeout=30)
        results["sonic_idle_fds"] = sonic_idle_fds
    results["load_after"] = os.getloadavg()
    return results


LABELS = {
    "vsonic": "vsonic, table SAMPLE 1 s (baseline)",
    "table": "SONiC, table SAMPLE 1 s (the collector)",
    "per-object": "SONiC, a path per object, SAMPLE 1 s",
    "on-change": "SONiC, table ON_CHANGE, writes every 1 s",
}


def render(r: dict[str, Any]) -> str:
    lines = [
        f"one switch: {r['ports']} ports x {r['queues']} queues, {r['objects']} counter objects "
        f"rewritten every second; window {r['duration']:g} s per client",
        f"{'client':<42}{'msgs/s':>8}{'updates/s':>11}{'CPU ms/s':>10}{'us/update':>11}"
        f"{'x base':>8}{'server ms/s':>13}{'server fds':>12}",
    ]
    base = r["vsonic"]["cpu_s"] / r["vsonic"]["seconds"] if "vsonic" in r else None
    for role in ROLES:
        if role not in r:
            continue
        x = r[role]
        cpu = x["cpu_s"] / x["seconds"]
        per = x["cpu_s"] / x["updates"] * 1e6 if x["updates"] else float("nan")
        ratio = f"{cpu / base:.1f}" if base else "-"
        lines.append(
            f"{LABELS[role]:<42}{x['messages'] / x['seconds']:>8,.0f}"
            f"{x['updates'] / x['seconds']:>11,.0f}{cpu * 1e3:>10.1f}{per:>11.1f}{ratio:>8}"
            f"{x['server_cpu_s'] / x['seconds'] * 1e3:>13.1f}{x['server_fds']:>12}"
        )
        if x["faults"]:
            lines.append(f"  faults: {'; '.join(x['faults'])}")
    lines.append(f"SONiC's server with no client: {r['sonic_idle_fds']} open fds")
    load = ", ".join(f"{v:.2f}" for v in r["load_before"])
    lines.append(f"load average before: {load}")
    lines.append(
        f"reproduce: {REPRODUCE} --ports {r['ports']} --queues {r['queues']} "
        f"--duration {r['duration']:g}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ports", type=int, default=32)
    parser.add_argument("--queues", type=int, default=20, help="queues per port")
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--role", choices=ROLES, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)  # the server a role reads
    args = parser.parse_args(argv)
    if args.role is not None:
        asyncio.run(_client(args.role, args.port, args.ports, args.warmup, args.duration))
        return 0
    print(render(measure(args.ports, args.queues, args.duration, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
