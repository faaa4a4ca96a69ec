"""The demo's agent step: service classes start and stop on one 25 G host port of leaf1, and
the demo prints, about once a second, every queue's threshold and throughput as the
on-switch qos-agent moves them (MQ-ECN, NSDI 2016 §3).

It runs on switches ``vsonic up`` started WITH their data plane and agent (``switches_step``
does that, and calls this step after its rollout and drift steps). ``agents_step`` then

1. lowers the switch's QUEUE counter poll interval to 100 ms (``FLEX_COUNTER_TABLE|QUEUE
   POLL_INTERVAL``, what ``counterpoll queue interval 100`` does on SONiC), so the agent
   sees fresh counters every interval;
2. waits until the agent reports, in STATE_DB, that it runs the orders the rollout wrote;
3. writes the traffic schedule into the file the data planes were started with and sends
   SIGHUP to the switch's data plane only: it re-reads the file, and the classes' start
   and stop times count from that moment. The traffic therefore starts after the rollout
   wrote the QoS configuration, whenever that was, and the other switches stay idle;
4. every second reads, from the switch's Redis, each queue's threshold in force (its
   ``WRED_PROFILE``, and who set it from ``SLUICE_AGENT_STATE``), its transmitted bytes and
   ECN-marked packets (``COUNTERS`` deltas) and its occupancy, and prints one line;
5. prints a phase-by-phase summary.

Queue names, weights and ECN modes come from the intent; the schedule names service classes
and sends on their first DSCP, so the packets go through the switch's DSCP maps.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import redis

from controller.intent.loader import load_intent_file
from lab.demo_agents_view import (
    BASIS_FLAGS,
    STATIC_FLAG,
    AgentDemo,
    Burst,
    QueueReading,
    Reading,
    ShownQueue,
    events_between,
    render_header,
    render_row,
    render_summary,
    rows,
    shown_queues,
    summarize,
    traffic_text,
)
from lab.demo_common import DemoError, Say, say

COUNTER_POLL_MS = 100  # counterpoll's minimum (sonic-utilities counterpoll)
AGENT_WAIT_S = 60.0
RELOAD_WAIT_S = 15.0
CONFIG_DB, COUNTERS_DB, STATE_DB = 4, 2, 6
TX_BYTES = "SAI_QUEUE_STAT_BYTES"
MARKED = "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"
OCCUPANCY = "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES"

__all__ = ["AgentDemo", "Burst", "LinkTo", "Reading", "SwitchLink", "agents_step"]

# --------------------------------------------------------------------------------------------
# I/O: the switch's Redis and its data plane's process


@dataclass
class SwitchLink:
    """The demo switch's databases (its own Redis, SONiC layout) and its data plane."""

    name: str
    config: redis.Redis[str]
    counters: redis.Redis[str]
    state: redis.Redis[str]
    dataplane_pid: int
    dataplane_log: Path

    def close(self) -> None:
        for client in (self.config, self.counters, self.state):
            client.close()


LinkTo = Callable[[str], SwitchLink]
"""The link to a switch by name: ``vsonic up``'s (``switch_link``) or a real switch's with
its stand-in ASIC (``lab.demo_real.StandInFabric.link``)."""


def switch_link(state_dir: Path, switch: str) -> SwitchLink:
    """The switch ``vsonic up`` started as ``switch``, from its ``state.json``."""
    state: dict[str, Any] = json.loads((state_dir / "state.json").read_text())
    if not any(a["name"] == switch for a in state.get("agents", [])):
        raise DemoError(f"vsonic runs no qos-agent on {switch}: start it without --no-agent")
    for dp in state.get("dataplanes", []):
        if dp["name"] == switch:
            port = int(dp["redis_port"])

            def db(n: int, port: int = port) -> redis.Redis[str]:
                return redis.Redis(host="127.0.0.1", port=port, db=n, decode_responses=True)

            log = state_dir / f"dataplane-{switch}.log"
            return SwitchLink(
                switch, db(CONFIG_DB), db(COUNTERS_DB), db(STATE_DB), int(dp["pid"]), log
            )
    raise DemoError(f"vsonic runs no data plane on {switch}: start it without --no-dataplane")


def open_link(state_dir: Path, switch: str, link_to: LinkTo | None = None) -> SwitchLink:
    """The link to ``switch``: through ``link_to`` when given (a real switch's stand-in), else
    the one ``vsonic up`` started in ``state_dir``."""
    return (link_to or partial(switch_link, state_dir))(switch)


def poll_counters_every(link: SwitchLink, interval_ms: int) -> None:
    """What ``counterpoll queue interval <ms>`` and ``counterpoll wredqueue`` write on SONiC:
    the queue counters and the ECN-marked counts (the agent tells a backlogged queue by its
    marks) every ``interval_ms``. A group already so is not written again: on SONiC's own
    software each write is a keyspace event orchagent acts on, and twice in four real runs
    the collector's rates through SONiC's gNMI server stopped moving (syncd's counts did
    not) right after the same values were written again (docs/demo.md)."""
    wanted = {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": str(interval_ms)}
    for group in ("QUEUE", "WRED_ECN_QUEUE"):
        key = f"FLEX_COUNTER_TABLE|{group}"
        held = link.config.hgetall(key)
        changed: dict[str | bytes, bytes | float | int | str] = {
            field: value for field, value in wanted.items() if held.get(field) != value
        }
        if changed:
            link.config.hset(key, mapping=changed)


def wait_for_orders(
    link: SwitchLink, clock: Callable[[], float], sleep: Callable[[float], None]
) -> dict[str, str]:
    """The orders in CONFIG_DB once the agent's STATE_DB report says it runs them."""
    deadline = clock() + AGENT_WAIT_S
    while clock() < deadline:
        orders = link.config.hgetall("SLUICE_AGENT|global")
        report = link.state.hgetall("SLUICE_AGENT_STATE|global")
        runs = orders and all(report.get(f) == orders.get(f) for f in ("version", "algorithm"))
        if runs and report.get("mode") in ("dynamic", "fallback", "idle"):
            return orders
        sleep(0.2)
    raise DemoError(
        f"the qos-agent on {link.name} did not report the rolled-out orders within "
        f"{AGENT_WAIT_S:.0f} s; see its log (agent-{link.name}.log next to the vsonic state, "
        f"qos-agent-{link.name}.log in the run directory of real switches)"
    )


def queue_bounds(link: SwitchLink, port: str, queue: int) -> dict[str, str]:
    return link.config.hgetall(f"SLUICE_AGENT_QUEUE|{port}|{queue}")


def read_port(
    link: SwitchLink, port: str, queues: Sequence[int], oids: Mapping[int, str], at_s: float
) -> Reading:
    """Every queue's threshold, who set it, and counters: three pipelined round trips."""
    profiles = link.config.pipeline(transaction=False)
    for q in queues:
        profiles.hget(f"QUEUE|{port}|{q}", "wred_profile")
    names: list[str | None] = profiles.execute()
    config = link.config.pipeline(transaction=False)
    for name in names:
        config.hget(f"WRED_PROFILE|{name}", "green_max_threshold")
    thresholds: list[str | None] = config.execute()
    state = link.state.pipeline(transaction=False)
    for q in queues:
        state.hget(f"SLUICE_AGENT_STATE|{port}|{q}", "basis")
    bases: list[str | None] = state.execute()
    counters = link.counters.pipeline(transaction=True)  # one publication for every queue
    for q in queues:
        counters.hgetall(f"COUNTERS:{oids[q]}")
    hashes: list[dict[str, str]] = counters.execute()
    out = {}
    for q, name, k, basis, c in zip(queues, names, thresholds, bases, hashes, strict=True):
        flag = BASIS_FLAGS.get(basis, "?") if basis is not None else STATIC_FLAG
        threshold = int(k) if name is not None and k is not None else None
        out[q] = QueueReading(
            q, threshold, flag, int(c.get(TX_BYTES, 0)), int(c.get(MARKED, 0)),
            int(c.get(OCCUPANCY, 0)),
        )  # fmt: skip
    return Reading(at_s, out)


def queue_oids(link: SwitchLink, port: str, queues: Sequence[int]) -> dict[int, str]:
    names = [f"{port}:{q}" for q in queues]
    oids: list[str | None] = link.counters.hmget("COUNTERS_QUEUE_NAME_MAP", names)
    missing = [n for n, o in zip(names, oids, strict=True) if o is None]
    if missing:
        raise DemoError(f"{link.name} has no counters for {', '.join(missing)}")
    return {q: str(o) for q, o in zip(queues, oids, strict=True)}


def reload_traffic(
    link: SwitchLink,
    traffic_file: Path,
    text: str,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> float:
    """Writes the schedule and has the switch's data plane re-read it (SIGHUP); returns the
    clock at the signal, which is time 0 of the schedule. Waits for the data plane to log
    the reload, so a refused file is an error here, not a silent idle port."""
    offset = link.dataplane_log.stat().st_size if link.dataplane_log.exists() else 0
    traffic_file.write_text(text)
    os.kill(link.dataplane_pid, signal.SIGHUP)
    t0 = clock()
    while clock() < t0 + RELOAD_WAIT_S:
        for event in _log_events(link.dataplane_log, offset):
            if event.get("event") == "traffic_reloaded":
                return t0
            if event.get("event") == "traffic_reload_refused":
                raise DemoError(f"the data plane refused {traffic_file}: {event.get('error')}")
        sleep(0.05)
    raise DemoError(f"the data plane of {link.name} did not reload its traffic within "
                    f"{RELOAD_WAIT_S:.0f} s; see {link.dataplane_log}")  # fmt: skip


def _log_events(log: Path, offset: int) -> list[dict[str, Any]]:
    with log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode(errors="replace").splitlines()
    events = []
    for line in lines:
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line still being written
    return events


# --------------------------------------------------------------------------------------------
# the step


def _print(line: str) -> None:
    print(line, flush=True)


def watch(
    link: SwitchLink,
    demo: AgentDemo,
    queues: Sequence[ShownQueue],
    t0: float,
    baseline: Reading,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    out: Callable[[str], None],
) -> list[Reading]:
    """One line a tick, from the reload until one tick past the schedule's end."""
    numbers = [q.queue for q in queues]
    oids = queue_oids(link, demo.port, numbers)
    readings = [baseline]
    for line in render_header(queues):
        out(line)
    # A row shows the tick that ends at its time. A reading lands a little after its tick, so
    # a start or stop is shown before the first row that it is more than a quarter tick
    # inside of: one at 5.0 s comes after the row of 4-5 s, before the row of 5-6 s.
    margin = demo.tick_s / 4
    shown_until = float("-inf")
    tick = 1
    while readings[-1].at_s < demo.end_s + demo.tick_s:
        sleep(max(0.0, t0 + tick * demo.tick_s - clock()))
        now = read_port(link, demo.port, numbers, oids, clock() - t0)
        for event in events_between(demo.schedule, shown_until, now.at_s - margin):
            out(f"{'':>6} | -- {event}")
        shown_until = now.at_s - margin
        out(render_row(now.at_s, queues, rows(readings[-1], now)))
        readings.append(now)
        tick += 1
    return readings


def describe_orders(
    link: SwitchLink, demo: AgentDemo, queues: Sequence[ShownQueue], orders: Mapping[str, str]
) -> list[str]:
    lines = [
        f"{link.name}'s qos-agent runs orders {orders['version']}: {orders['algorithm']} every "
        f"{orders['interval_ms']} ms, RTT {orders['rtt_us']} us, lambda {orders['lambda']}"
    ]
    for q in queues:
        b = queue_bounds(link, demo.port, q.queue)
        where = "static, set by the controller"
        if b.get("managed") == "true":  # unmanaged entries only count in the agent's shares
            low, high = int(b["floor_bytes"]), int(b["ceiling_bytes"])
            where = f"the agent moves it between {low:,} and {high:,} B"
        lines.append(
            f"  {demo.port} queue {q.queue} ({q.name}, {q.ecn}, weight {q.weight}): {where}"
        )
    return lines


def agents_step(
    state_dir: Path,
    intent_file: Path,
    traffic_file: Path,
    *,
    demo: AgentDemo = AgentDemo(),
    say: Say = say,
    out: Callable[[str], None] = _print,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    link_to: LinkTo | None = None,
) -> list[Reading]:
    """The agent step (module docstring) on switches ``vsonic up`` started in ``state_dir``
    with ``--traffic traffic_file`` (or on the switch ``link_to`` names, whose data plane
    reads ``traffic_file``); returns the readings it printed. Raises ``DemoError``."""
    intent = load_intent_file(intent_file)
    queues = shown_queues(intent, demo.schedule)
    link = open_link(state_dir, demo.switch, link_to)
    try:
        say(f"the on-switch agent: MQ-ECN on {demo.switch} {demo.port} "
            f"({', '.join(b.service_class for b in demo.schedule)} start and stop)")  # fmt: skip
        out(f"counterpoll queue interval {COUNTER_POLL_MS} on {demo.switch}: "
            f"FLEX_COUNTER_TABLE|QUEUE POLL_INTERVAL = {COUNTER_POLL_MS}")  # fmt: skip
        poll_counters_every(link, COUNTER_POLL_MS)
        orders = wait_for_orders(link, clock, sleep)
        for line in describe_orders(link, demo, queues, orders):
            out(line)
        text = traffic_text(demo, queues, intent.fabric.base_rtt_us)
        say(f"traffic on {demo.switch} {demo.port} (DCTCP senders, times from the reload)")
        for line in text.splitlines()[1:]:
            out(f"  {line}")
        out("K = the queue's WRED marking threshold in force, then who set it: C agent computed, "
            "K agent kept, F agent fell back, I agent idle, S static profile")  # fmt: skip
        baseline = read_port(
            link, demo.port, [q.queue for q in queues],
            queue_oids(link, demo.port, [q.queue for q in queues]), 0.0,
        )  # fmt: skip
        t0 = reload_traffic(link, traffic_file, text, clock, sleep)
        readings = watch(link, demo, queues, t0, baseline, clock, sleep, out)
        say("phase by phase: threshold at the end, mean throughput (first second left out)")
        for line in render_summary(queues, summarize(demo.schedule, readings)):
            out(line)
        return readings
    finally:
        link.close()
