"""The demo's switch step: roll the example intent out to four virtual switches, then show
the reconcile loop catching a change made behind sluice's back.

``switches_step(env, intent_file, run_dir)`` expects the API to be serving (``env`` holds
``DATABASE_URL``, ``SLUICE_API_URL`` and an operator ``SLUICE_API_TOKEN``, as
``lab.demo.Environment.for_commands()`` gives). It

1. starts the intent's four switches with ``vsonic up --inventory`` (on other free ports when
   50051-50054 are taken, with the intent re-pointed to match),
2. starts the worker (``python -m controller.worker``),
3. applies the intent with a short reconcile interval and runs
   ``sluice rollout start --canary leaf1 --batch-size 2 --allow-port-flaps --watch`` (a
   first rollout takes every port down and up once; the plan names them),
4. shows the verified result (``sluice rollout show``, ``sluice plan``: nothing left),
5. raises a static WRED threshold on leaf1 by writing its CONFIG_DB in Redis directly,
6. waits for the loop to find it and shows ``sluice drift`` and ``sluice reconcile status``,
   then reads the value back from Redis to show it was corrected,
7. runs the agent step (``lab.demo_agents.agents_step``): service classes start and
   stop on leaf1's Ethernet0 and every queue's threshold and throughput are printed as the
   on-switch qos-agent moves them (skipped with ``agents=False``), then the tuner step
   (``lab.demo_tuner.tuner_step``): leaf1's traffic changes, the tuner in ``auto`` mode
   proposes new weights from it and rolls them out through a health-gated rollout, then the
   bad-config step
   (``lab.demo_badconfig.bad_config_step``): ECN thresholds far too low for an incast on
   leaf1 fail a mark-fraction gate and leaf1 is rolled back automatically,
8. runs the Ansible step (``lab.demo_ansible.ansible_step``): an operator's playbook of the
   ``sluice.fabric`` collection raises one class's weight, in check mode first, then for
   real (a new intent version rolled out leaf1 first), then again (nothing changes),
9. stops the worker and the switches (unless ``keep``).

Every switch runs its data plane and qos-agent. The data planes start with an empty traffic
file (so nothing is sent while the rollout configures the switches); the agent step fills it
and has only leaf1's data plane re-read it. The intent's agent interval is set to the 100 ms
the agent step lowers the counter poll to: polling faster would re-read the same counters.

With ``real`` (``./scripts/demo.sh --switches real``) the switches are SONiC's own software
(``lab/demo_real.py``): the same steps, with ASIC_DB checked after the rollout and the drift
repair, each switch's agent started after the first rollout and ``sluice top`` of each
shown; step 7's traffic on leaf1 is carried by a stand-in for the ASIC
(``lab/asic_standin.py``), and its tuner, bad-config and Ansible rollouts go through the real
GCU while the agents move their thresholds, none taking a port down.

``python -m lab.demo_switches`` runs it after the rest of the demo's set-up
(database, migration, token, API), for trying this step alone.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import httpx
import redis
import yaml

from controller.intent.loader import load_intent_file
from controller.sonic.compile import compile_fleet
from lab.demo_agents import COUNTER_POLL_MS, LinkTo, agents_step, reload_traffic
from lab.demo_agents_view import AgentDemo
from lab.demo_ansible import ansible_step
from lab.demo_badconfig import bad_config_step
from lab.demo_common import (
    DemoError,
    Run,
    Say,
    controller_process,
    controller_worker,
    run,
    say,
)
from lab.demo_common import run as run_command
from lab.demo_real import (
    RealFabric,
    StandInFabric,
    asic_standin,
    gnmi_restarted,
    no_port_taken_down,
    real_agents,
    real_switches,
    show_agents,
    show_asic,
)
from lab.demo_tuner import TRAFFIC as TUNER_TRAFFIC
from lab.demo_tuner import tuner_step
from vsonic.tls import tls_files

BIN = Path(sys.executable).parent
DEMO_SWITCH = "leaf1"
RECONCILE_INTERVAL_S = 3.0
WAIT_S = 120.0
# A first rollout of four real switches is minutes of GCU per switch.
REAL_ROLLOUT_TIMEOUT_S = 3600.0
AGENT_GLOBAL = ("SLUICE_AGENT", "global")


class SwitchDemoError(DemoError):
    """A step of the switch demo failed; the message says which and why."""


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_intent(
    source: Path,
    interval_s: float,
    port_free: Callable[[int], bool],
    agent_interval_ms: int = COUNTER_POLL_MS,
) -> Any:
    """The intent to roll out: ``source`` with a short reconcile interval (so the loop shows
    up within seconds), the agent polling as often as the demo's counters refresh, and each
    switch on a free gNMI port on 127.0.0.1."""
    document = yaml.safe_load(source.read_text(encoding="utf-8"))
    fabric = document.setdefault("fabric", {})
    fabric["reconcile"] = {"mode": "correct", "interval_s": interval_s, "jitter_pct": 10}
    fabric.setdefault("agent", {})["interval_ms"] = agent_interval_ms
    for switch in document.get("switches", []):
        switch["gnmi"]["address"] = "127.0.0.1"
        if not port_free(int(switch["gnmi"]["port"])):
            switch["gnmi"]["port"] = _free_port()
    return document


@contextmanager
def virtual_switches(
    intent: Path, state_dir: Path, traffic: Path, env: dict[str, str], run: Run, keep: bool
) -> Iterator[None]:
    """The intent's switches, each with its data plane (on ``traffic``, which holds no class
    yet) and qos-agent."""
    traffic.write_text("# no traffic yet: the agent step writes it and signals the data plane\n")
    run([str(BIN / "vsonic"), "up", "--inventory", str(intent), "--state-dir", str(state_dir),
         "--traffic", str(traffic)], env)  # fmt: skip
    try:
        yield
    finally:
        if not keep:
            run([str(BIN / "vsonic"), "down", "--state-dir", str(state_dir)], env)


def switch_redis(state_dir: Path, name: str) -> redis.Redis[str]:
    """CONFIG_DB of switch ``name`` straight from its Redis (the port ``vsonic up`` chose)."""
    state = json_file(state_dir / "state.json")
    for server, redis_port in zip(state["gnmi"], state["redis_ports"], strict=True):
        if server["names"] == [name]:
            return redis.Redis(host="127.0.0.1", port=redis_port, db=4, decode_responses=True)
    raise SwitchDemoError(f"vsonic did not start a switch named {name}")


def json_file(path: Path) -> Any:
    return json.loads(path.read_text())


def change_behind_sluices_back(db: redis.Redis[str], say: Say) -> tuple[str, str, str]:
    """Double the green max threshold of a static WRED profile; ``(key, was, now)``."""
    keys = sorted(str(k) for k in db.scan_iter("WRED_PROFILE|SLUICE_WRED_*"))
    if not keys:
        raise SwitchDemoError("no SLUICE_WRED_ profile on the switch: was the rollout applied?")
    key = keys[0]
    was = str(db.hget(key, "green_max_threshold"))
    now = str(int(was) * 2)
    db.hset(key, "green_max_threshold", now)
    say(f"changed {key} green_max_threshold on {DEMO_SWITCH} behind sluice's back: {was} -> {now}")
    return key, was, now


def wait_for_drift(env: Mapping[str, str], switch: str) -> None:
    """Poll the drift list until the loop has recorded something on ``switch``."""
    headers = {"Authorization": f"Bearer {env['SLUICE_API_TOKEN']}"}
    deadline = time.monotonic() + WAIT_S
    with httpx.Client(base_url=env["SLUICE_API_URL"], headers=headers, timeout=10) as client:
        while time.monotonic() < deadline:
            page = client.get("/api/v1/drift", params={"switch": switch}).json()
            if page.get("total", 0) > 0:
                return
            time.sleep(0.5)
    raise SwitchDemoError(f"the reconcile loop recorded no drift on {switch} in {WAIT_S:.0f} s")


def wait_for_value(db: redis.Redis[str], key: str, name: str, value: str) -> str:
    """Poll until the loop has written ``value`` back (a real switch's GCU takes seconds)."""
    deadline = time.monotonic() + WAIT_S
    while (now := str(db.hget(key, name))) != value:
        if time.monotonic() > deadline:
            raise SwitchDemoError(f"{key} {name} is {now}, not {value}, after {WAIT_S:.0f} s")
        time.sleep(0.5)
    return now


TOP_EXCERPT_LINES = 12


def show_telemetry(env: Mapping[str, str], say: Say) -> None:
    """Where to watch it: the dashboard's address and the first lines of ``sluice top``."""
    say(f"the dashboard: {env['SLUICE_API_URL']}/dashboard (sign in with the demo's token)")
    say(f"sluice top {DEMO_SWITCH}: each queue now, from Prometheus through the API (excerpt)")
    show_top(env, DEMO_SWITCH, TOP_EXCERPT_LINES)


def show_top(env: Mapping[str, str], switch: str, lines: int) -> None:
    """The first ``lines`` of one ``sluice top --once`` frame of ``switch``."""
    wide = {**env, "COLUMNS": "160"}  # captured output is not a terminal: say how wide
    frame = run([str(BIN / "sluice"), "top", switch, "--once"], wide, capture=True)
    for line in frame.splitlines()[:lines]:
        print(line, flush=True)


REAL_TOP_LINES = 6
STEADY_TRAFFIC = TUNER_TRAFFIC
STEADY_S = 10.0
TOP_WAIT_S = 120.0


def show_real_telemetry(env: Mapping[str, str], switches: Sequence[str], say: Say) -> None:
    """Every real switch's stream, read as the operator reads it: ``sluice top`` of each once
    the collector streams it (``sluice_switch_stream_up``, from Prometheus through the API)."""
    say("the telemetry collector streams every switch from SONiC's gNMI server (one Subscribe "
        "per database: COUNTERS_DB, and STATE_DB for the agents' state)")  # fmt: skip
    for switch in switches:
        wait_for_stream(env, switch)
        say(f"sluice top {switch} (excerpt)")
        show_top(env, switch, REAL_TOP_LINES)


def wait_for_stream(env: Mapping[str, str], switch: str) -> None:
    """Poll Prometheus, through the API, until the collector's stream of ``switch`` is up."""
    query = f'sluice_switch_stream_up{{switch="{switch}"}}'
    deadline = time.monotonic() + TOP_WAIT_S
    with httpx.Client(base_url=env["SLUICE_PROMETHEUS_URL"], timeout=10) as client:
        while time.monotonic() < deadline:
            answer = client.get("/api/v1/query", params={"query": query})
            result = answer.json().get("data", {}).get("result", [])
            if result and result[0]["value"][1] == "1":
                return
            time.sleep(1.0)
    raise SwitchDemoError(
        f"the collector's stream of {switch} was not up within {TOP_WAIT_S:.0f} s; see "
        "collector.log in the run directory"
    )


def real_traffic_steps(
    env: Mapping[str, str],
    intent: Path,
    traffic: Path,
    standin: StandInFabric,
    say: Say,
) -> None:
    """The agent step on the real demo switch, its traffic carried by the stand-in ASIC, then
    steady traffic and its queues as ``sluice top`` reads them from SONiC's own counters."""
    demo = AgentDemo(switch=standin.switch)
    agents_step(Path(), intent, traffic, demo=demo, say=say, link_to=standin.link)
    link = standin.link(standin.switch)
    try:
        say(f"steady traffic on {standin.switch} Ethernet0: storage backlogged (2 DCTCP "
            "senders), analytics a light 0.5 Gb/s stream")  # fmt: skip
        reload_traffic(link, traffic, STEADY_TRAFFIC, time.monotonic, time.sleep)
    finally:
        link.close()
    time.sleep(STEADY_S)  # the collector's rates and Prometheus's scrapes catch up
    say(f"sluice top {standin.switch}: the stand-in's counts as syncd published them and "
        "SONiC's gNMI server streamed them (excerpt)")  # fmt: skip
    show_top(env, standin.switch, TOP_EXCERPT_LINES)


def in_place(fabric: RealFabric | None, what: str, say: Say) -> AbstractContextManager[None]:
    """On real switches, ``what`` must take no port down (``no_port_taken_down``); a virtual
    switch has no GCU to take one down."""
    return nullcontext() if fabric is None else no_port_taken_down(fabric, what, say)


def switches_step(
    env: Mapping[str, str],
    intent_file: Path,
    run_dir: Path,
    *,
    keep: bool = False,
    agents: bool = True,
    real: bool = False,
    run: Run = run,
    say: Say = say,
) -> None:
    """The whole switch demo (see the module docstring); raises ``SwitchDemoError``.
    ``real``: the switches are SONiC's own software (``lab/demo_real.py``), not vsonic."""
    run_dir.mkdir(parents=True, exist_ok=True)
    intent = run_dir / "intent-switches.yaml"
    document = demo_intent(intent_file, RECONCILE_INTERVAL_S, _port_free)
    password = env.get("SLUICE_GNMI_PASSWORD") or secrets.token_urlsafe(18)
    full = {**env, "SLUICE_GNMI_PASSWORD": password, "VSONIC_PASSWORD": password}
    full.update(SLUICE_WORKER_POLL_S="0.5")
    sluice = str(BIN / "sluice")
    state_dir = run_dir / "vsonic"
    traffic = run_dir / "traffic.txt"
    with ExitStack() as stack:
        fabric: RealFabric | None = None
        standin: StandInFabric | None = None
        if real:
            say(
                f"starting the intent's {len(document['switches'])} switches as SONiC's own "
                "software: redis, syncd + orchagent over libsaivs, buffermgrd, the gNMI server "
                "with the real GCU"
            )
            fabric = stack.enter_context(real_switches(document, run_dir, keep, say))
            stack.enter_context(gnmi_restarted(fabric, say))
            say(f"{len(fabric.switches)} switches up in {fabric.started_s:.0f} s, "
                f"{fabric.resident_mb():.0f} MB resident")  # fmt: skip
            full["SLUICE_GNMI_TLS_CA"] = str(fabric.ca)
            intent.write_text(yaml.safe_dump(document, sort_keys=False))
            if agents:
                ports = [p["name"] for s in document["switches"] if s["name"] == DEMO_SWITCH
                         for p in s["ports"]]  # fmt: skip
                standin = stack.enter_context(
                    asic_standin(fabric, DEMO_SWITCH, ports, traffic, run_dir, keep, say)
                )
        else:
            intent.write_text(yaml.safe_dump(document, sort_keys=False))
            # vsonic up serves TLS with a certificate it makes in its state dir; the worker
            # trusts it.
            full["SLUICE_GNMI_TLS_CA"] = str(tls_files(state_dir).cert)
            say("starting the intent's four virtual switches, each with its data plane and "
                "qos-agent (vsonic up --inventory)")  # fmt: skip
            stack.enter_context(virtual_switches(intent, state_dir, traffic, full, run, keep))
        say("starting the controller worker (rollouts and the reconcile loop)")
        stack.enter_context(controller_worker(full, run_dir / "worker.log", keep))
        say("starting the telemetry collector: every switch's counters and agent state over "
            "gNMI Subscribe, as Prometheus metrics")  # fmt: skip
        collector = {**full, "SLUICE_TELEMETRY_REFRESH_S": "2"}
        if fabric is not None:
            # syncd rewrites COUNTERS at every poll, an agent its state at every loop
            # (docs/telemetry.md).
            collector["SLUICE_TELEMETRY_COUNTER_MODE"] = "SAMPLE"
            collector["SLUICE_TELEMETRY_AGENT_STATE_MODE"] = "SAMPLE"
            say(
                "the collector streams the real switches' counters and agent state at SAMPLE: "
                "SONiC's server can exit on a race in its ON_CHANGE streams of tables rewritten "
                "key by key (docs/telemetry.md)"
            )
        log = run_dir / "collector.log"
        stack.enter_context(controller_process("controller.collector", collector, log, keep))
        say(f"the intent, with the reconcile loop every {RECONCILE_INTERVAL_S:g} s")
        run([sluice, "apply", "-f", str(intent), "--summary", "--reason",
             "demo: roll out to the switches"], full)  # fmt: skip
        say("rolling it out: leaf1 first (canary), then two switches per batch; a first rollout "
            "adds every queue binding, which SONiC applies with each port taken down and up "
            "once (the plan names them), so the operator allows it")  # fmt: skip
        rollout = [sluice, "rollout", "start", "--canary", DEMO_SWITCH, "--batch-size", "2",
                   "--allow-port-flaps", "--watch", "--interval"]  # fmt: skip
        if fabric is None:
            run([*rollout, "0.5"], full)
        else:  # minutes of GCU per switch: longer than any other command may take
            run_command([*rollout, "5"], full, timeout_s=REAL_ROLLOUT_TIMEOUT_S)
        say("verified by read-back on every switch; nothing is left to change")
        run([sluice, "rollout", "list"], full)
        run([sluice, "plan", "--summary"], full)
        if fabric is not None:
            desired = compile_fleet(load_intent_file(intent))
            say("and in ASIC_DB: what orchagent programmed, checked against what was rolled out")
            show_asic(fabric, desired, say)
            say("the qos-agents start now, after the first rollout: GCU fails a patch when "
                "CONFIG_DB changes under it, and an agent rewrites its thresholds as soon as "
                "its orders land (docs/demo.md)")  # fmt: skip
            stack.enter_context(real_agents(fabric, run_dir, keep, say))
            show_agents(fabric, {n: c[AGENT_GLOBAL]["version"] for n, c in desired.items()}, say)
        say("an operator edits a switch by hand")
        db = (
            switch_redis(state_dir, DEMO_SWITCH)
            if fabric is None
            else fabric.switches[DEMO_SWITCH].db("CONFIG_DB")
        )
        key, was, _ = change_behind_sluices_back(db, say)
        say("the reconcile loop finds it and writes the desired value back")
        wait_for_drift(full, DEMO_SWITCH)
        run([sluice, "drift", "--switch", DEMO_SWITCH], full)
        run([sluice, "reconcile", "status"], full)
        restored = wait_for_value(db, key, "green_max_threshold", was)
        say(f"{DEMO_SWITCH} {key} green_max_threshold is {restored} again (read from Redis)")
        db.close()
        if fabric is not None:
            show_asic(fabric, compile_fleet(load_intent_file(intent)), say)
            show_real_telemetry(full, list(fabric.switches), say)
        if agents:
            link_to: LinkTo | None = None
            if standin is not None:
                real_traffic_steps(full, intent, traffic, standin, say)
                link_to = standin.link
            else:
                demo = AgentDemo(switch=DEMO_SWITCH)
                agents_step(state_dir, intent, traffic, demo=demo, say=say)
                show_telemetry(full, say)
            with in_place(fabric, "the tuner's rollout", say):
                tuner_step(full, intent, state_dir, traffic, switch=DEMO_SWITCH, run=run,
                           say=say, link_to=link_to)  # fmt: skip
            with in_place(fabric, "the bad config's rollout and its rollback", say):
                bad_config_step(full, intent, state_dir, traffic, switch=DEMO_SWITCH, run=run,
                                say=say, link_to=link_to)  # fmt: skip
        with in_place(fabric, "the playbook's rollout", say):
            ansible_step(full, intent, run_dir, run=run, say=say, canary=DEMO_SWITCH)
