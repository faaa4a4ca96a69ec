"""The demo's switches as SONiC's own software (``./scripts/demo.sh --switches real``).

One ``RealSwitch`` (``lab/realsonic.py``) per switch of the intent: its own redis in SONiC's
layout, syncd + orchagent over libsaivs with buffermgrd, a Force10-S6000's buffer pools and
profiles loaded as ``config load`` loads them, and SONiC's gNMI server over TLS with the real
GCU behind it, validating against SONiC's YANG models and sluice's extension. The intent's
switches are pointed at them, each with the Set deadline GCU needs (minutes for a first
rollout). What the demo shows of them that a virtual switch cannot: ASIC_DB, where orchagent
programmed what sluice wrote (``lab/asic_db.py``).

Each switch runs the qos-agent on its redis, as on a SONiC switch. libsaivs has no data
plane: nothing is forwarded and its counters stay at zero. On the demo switch a **stand-in
for the ASIC** carries traffic (``asic_standin``): vsonic's data plane runs beside the
switch's redis on the CONFIG_DB sluice rolled out, and ``lab.asic_standin`` hands its counts
to libsaivs, so that syncd's own flex counter polling publishes them in COUNTERS_DB under
the oids orchagent created. The agent step then runs there as on a virtual switch
(``StandInFabric.link``); the other switches carry no traffic.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from lab.asic_db import asic_problems
from lab.demo_agents import CONFIG_DB, COUNTERS_DB, STATE_DB, SwitchLink
from lab.demo_common import DemoError, Say, start_process, stop_process
from lab.realsonic import (
    GNMI_DAEMONS,
    RealSonicError,
    RealSwitch,
    SwitchParts,
    prepare_bundle,
)
from vsonic.dataplane import (
    AGENT,
    DATAPLANE,
    DataplaneOptions,
    DataplaneUnavailable,
    agent_command,
    command,
    find_binary,
)
from vsonic.seed import S6000_BUFFERS
from vsonic.tls import self_signed_tls

REPO = Path(__file__).resolve().parent.parent
SLUICE_YANG = REPO / "agents" / "qos-agent" / "yang" / "sonic-sluice-agent.yang"
COUNTED = ("WRED", "SCHEDULER", "QOS_MAP")
AGENT_WAIT_S = 60.0
# A first rollout of a leaf is about 60 GCU changes of a second or more each.
REAL_SET_DEADLINE_S = 900.0
# How often the demo looks for a gNMI server that exited (``gnmi_restarted``).
GNMI_WATCH_S = 1.0
# The stand-in's feed and hand-over period: counterpoll's minimum, the agent step's poll.
STANDIN_INTERVAL_MS = 100


@dataclass(frozen=True)
class RealFabric:
    """The running switches by intent name, and the certificate their servers present."""

    switches: Mapping[str, RealSwitch]
    ca: Path
    started_s: float

    def resident_mb(self) -> float:
        return sum(switch.resident_bytes() for switch in self.switches.values()) / 2**20


def real_parts(cert: Path, key: Path) -> SwitchParts:
    """A full switch as an operator hands it over, serving gNMI over TLS."""
    return SwitchParts(
        orchagent=True,
        buffermgrd=True,
        gcu=True,
        yang_extra=(SLUICE_YANG,),
        # Server-side TLS: sonic-gnmi asks for a client certificate unless told not to.
        gnmi_flags=(f"-server_crt={cert}", f"-server_key={key}", "-allow_no_client_auth"),
        operator_config=S6000_BUFFERS,
    )


@contextmanager
def real_switches(document: Any, run_dir: Path, keep: bool, say: Say) -> Iterator[RealFabric]:
    """Start one real switch per switch of ``document`` (the intent, re-pointed in place at
    each switch's gNMI server) and stop them at the end unless ``keep``."""
    try:
        bundle = prepare_bundle()
    except RealSonicError as why:
        raise DemoError(str(why)) from None
    tls_dir = run_dir / "real-tls"
    tls_dir.mkdir(parents=True, exist_ok=True)
    tls = self_signed_tls(tls_dir)
    parts = real_parts(tls.cert, tls.key)
    started: dict[str, RealSwitch] = {}
    began = time.monotonic()
    try:
        for switch in document["switches"]:
            name = switch["name"]
            # Started one after another: the switch scripts share the host's /zmq_swss.
            real = RealSwitch(bundle, parts).start()
            started[name] = real
            switch["gnmi"] = {
                "address": "127.0.0.1",
                "port": real.gnmi_port,
                "set_deadline_s": REAL_SET_DEADLINE_S,
            }
            say(f"{name}: SONiC's gNMI server on 127.0.0.1:{real.gnmi_port}, redis "
                f"127.0.0.1:{real.redis_port}, run dir {real.run_dir}")  # fmt: skip
            resped = real.declare_running_speeds(switch)
            if resped:
                say(f"{name}: {', '.join(resped)} declared at the speed the switch runs")
        yield RealFabric(started, tls.cert, time.monotonic() - began)
    finally:
        for name, real in reversed(started.items()):
            if keep:
                real.leave_running()
                say(f"{name} left running: {real.stop_hint()}")
            else:
                real.stop()


@contextmanager
def gnmi_restarted(fabric: RealFabric, say: Say, every_s: float = GNMI_WATCH_S) -> Iterator[None]:
    """While the block runs, a switch whose gNMI server exited has it started again, as
    SONiC restarts a gnmi container whose critical process exited: sonic-gnmi can exit on a
    map race in its ON_CHANGE streams (docs/telemetry.md), which the qos-agent's writes make
    likelier. Each restart is said with the crash's line; any other daemon that exits is
    said once and left down (the switch is broken, and the next step says how)."""
    stop = threading.Event()
    told: set[tuple[str, str]] = set()

    def watch() -> None:
        while not stop.wait(every_s):
            for name, real in fabric.switches.items():
                exited = real.exited_daemons()
                if "gnmi" in exited and set(exited) <= GNMI_DAEMONS:
                    say(f"{name}: SONiC's gNMI server exited ({crash_line(exited['gnmi'])}); "
                        "started again, as SONiC restarts its gnmi container")  # fmt: skip
                    try:
                        real.restart_gnmi()
                    except RealSonicError as why:
                        say(f"{name}: the gNMI server did not start again: {why}")
                    continue
                for daemon in sorted(set(exited) - {d for n, d in told if n == name}):
                    told.add((name, daemon))
                    say(f"{name}: {daemon} exited: {crash_line(exited[daemon])}")

    watcher = threading.Thread(target=watch, name="gnmi-restarter", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


def crash_line(tail: str) -> str:
    """The line of a daemon's last log lines that says why it exited: a Go runtime's
    ``fatal error:`` or ``panic:``, else the last line."""
    lines = [line for line in tail.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal error:", "panic:")):
            return line
    return lines[-1] if lines else "no log"


def show_asic(fabric: RealFabric, desired: Mapping[str, Any], say: Say) -> None:
    """What orchagent programmed, per switch: every queue's WRED profile and scheduler, the
    port maps and buffer profiles of the desired config, checked in ASIC_DB."""
    for name, real in fabric.switches.items():
        view = real.asic_view()
        problems = asic_problems(view, desired[name])
        objects = {
            kind: len(view.objects.get(kind, {})) for kind in ("WRED", "SCHEDULER", "QOS_MAP")
        }
        if problems:
            raise DemoError(f"{name}: ASIC_DB differs from what was rolled out: {problems[:3]}")
        say(f"{name}: ASIC_DB holds what was rolled out ({objects['WRED']} WRED objects, "
            f"{objects['SCHEDULER']} schedulers, {objects['QOS_MAP']} QoS maps)")  # fmt: skip


@contextmanager
def real_agents(fabric: RealFabric, run_dir: Path, keep: bool, say: Say) -> Iterator[None]:
    """A qos-agent on each switch's redis, as on a SONiC switch (its orders come with the
    rollout); stopped at the end unless ``keep``."""
    try:
        binary = find_binary(binary=AGENT)
    except DataplaneUnavailable as why:
        raise DemoError(str(why)) from None
    started = []
    try:
        for name, real in fabric.switches.items():
            log = run_dir / f"qos-agent-{name}.log"
            with log.open("w") as sink:
                started.append(
                    start_process(
                        agent_command(binary, real.redis_port), keep, stdout=sink, stderr=sink
                    )
                )
            say(f"{name}: qos-agent on its redis (log {log})")
        yield
    finally:
        if not keep:
            for agent in started:
                stop_process(agent, signal.SIGTERM, timeout_s=15)


def show_agents(fabric: RealFabric, version_of: Mapping[str, str], say: Say) -> None:
    """Each switch's agent as it reports itself in STATE_DB, once it runs the rolled-out
    orders (``version_of``: switch -> the orders' version)."""
    for name, real in fabric.switches.items():
        state = real.db("STATE_DB")
        deadline = time.monotonic() + AGENT_WAIT_S
        while state.hget("SLUICE_AGENT_STATE|global", "version") != version_of[name]:
            if time.monotonic() > deadline:
                raise DemoError(f"{name}'s qos-agent did not take the rolled-out orders")
            time.sleep(0.2)
        report = state.hgetall("SLUICE_AGENT_STATE|global")
        why = f" ({report['reason']})" if report.get("reason") else ""
        say(f"{name}: qos-agent runs orders {report['version']} ({report['algorithm']}), "
            f"mode {report['mode']}{why}")  # fmt: skip


@contextmanager
def no_port_taken_down(fabric: RealFabric, what: str, say: Say) -> Iterator[None]:
    """Runs the block watching every switch's ports (``RealSwitch.ports_taken_down``: GCU
    takes a port admin down around a port-critical change) and fails the step, naming them,
    when ``what`` took any down: a weight or threshold change must be made in place."""
    with ExitStack() as stack:
        downs = {
            name: stack.enter_context(real.ports_taken_down())
            for name, real in fabric.switches.items()
        }
        yield
    flapped = {name: sorted(ports) for name, ports in downs.items() if ports}
    if flapped:
        raise DemoError(f"{what} took ports admin down: {flapped}")
    say(f"{what}: no port taken down on any switch (PORT admin_status in CONFIG_DB, watched "
        "throughout)")  # fmt: skip


@dataclass(frozen=True)
class StandInFabric:
    """The real switches, and the demo switch's stand-in ASIC: its data plane's pid and log."""

    fabric: RealFabric
    switch: str
    dataplane_pid: int
    dataplane_log: Path

    def link(self, name: str) -> SwitchLink:
        """The agent step's view of ``name`` (``lab.demo_agents.LinkTo``): its redis and the
        stand-in's data plane, which re-reads the traffic file on SIGHUP."""
        if name != self.switch:
            raise DemoError(f"only {self.switch} has a stand-in ASIC; {name} carries no traffic")
        real = self.fabric.switches[name]

        def db(n: int) -> redis.Redis[str]:
            return redis.Redis(host="127.0.0.1", port=real.redis_port, db=n, decode_responses=True)

        return SwitchLink(name, db(CONFIG_DB), db(COUNTERS_DB), db(STATE_DB), self.dataplane_pid,
                          self.dataplane_log)  # fmt: skip


@contextmanager
def asic_standin(
    fabric: RealFabric,
    switch: str,
    ports: Sequence[str],
    traffic: Path,
    run_dir: Path,
    keep: bool,
    say: Say,
) -> Iterator[StandInFabric]:
    """A stand-in for ``switch``'s ASIC (``lab/asic_standin.py``): vsonic's data plane on the
    switch's redis, on ``traffic`` (no class yet: the agent step writes it), modelling only
    ``ports`` (the intent's: a packet costs the data plane more the more ports it models, and
    libsaivs gives the switch 32) and publishing no ``COUNTERS:<oid>`` of its own, and the
    bridge that hands its counts to libsaivs."""
    try:
        binary = find_binary(binary=DATAPLANE)
    except DataplaneUnavailable as why:
        raise DemoError(str(why)) from None
    real = fabric.switches[switch]
    traffic.write_text("# no traffic yet: the agent step writes it and signals the data plane\n")
    options = DataplaneOptions(traffic=traffic, fast_interval_ms=STANDIN_INTERVAL_MS)
    plane = [*command(binary, real.redis_port, options, seed=1), "--no-flex-counters",
             "--ports", ",".join(ports)]  # fmt: skip
    bridge = [sys.executable, "-m", "lab.asic_standin", "--redis-port", str(real.redis_port),
              "--interval-ms", str(STANDIN_INTERVAL_MS)]  # fmt: skip
    plane_log, bridge_log = run_dir / f"dataplane-{switch}.log", run_dir / f"standin-{switch}.log"
    started: list[subprocess.Popen[bytes]] = []
    try:
        for args, log in ((plane, plane_log), (bridge, bridge_log)):
            with log.open("w") as sink:
                started.append(start_process(args, keep, stdout=sink, stderr=subprocess.STDOUT))
        say(f"{switch}: a stand-in for its ASIC, since libsaivs forwards nothing: vsonic's data "
            "plane runs the QoS that sluice rolled out on simulated traffic beside the switch's "
            "redis, and its counts are handed to libsaivs, so that syncd's own flex counter "
            f"polling publishes them in COUNTERS_DB (logs {plane_log}, {bridge_log})")  # fmt: skip
        yield StandInFabric(fabric, switch, started[0].pid, plane_log)
    finally:
        if not keep:
            for process in reversed(started):
                stop_process(process, signal.SIGTERM, timeout_s=15)
