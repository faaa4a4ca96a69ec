"""Start and stop virtual switches as background processes; write the inventory they form.

``vsonic up`` keeps what it started in ``<state-dir>/state.json`` (pids, ports), so
``vsonic down`` can stop exactly those processes and nothing else.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import yaml
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from vsonic.dataplane import DataplaneOptions, agent_command, command, spawn
from vsonic.gnmi_server import Credentials, TlsFiles
from vsonic.inventory import SwitchSpec, inventory_document
from vsonic.redis_process import RedisProcess, free_port
from vsonic.seed import default_ports
from vsonic.serve import PASSWORD_ENV

STATE_FILE = "state.json"
INVENTORY_FILE = "inventory.yaml"
HOST = "127.0.0.1"
# The one other address a gNMI server may bind: every interface of its network namespace.
# Only for a container (docker-compose.yml's lab), whose namespace is its own; on this
# machine's namespace the servers stay on loopback. Loopback is among "every interface",
# so ``up`` still finds the servers answering on HOST.
EVERY_INTERFACE = "0.0.0.0"


@dataclass
class Started:
    """What ``up`` started: gNMI server pids and ports, Redis servers by port, data planes."""

    fleet: bool
    gnmi: list[dict[str, Any]] = field(default_factory=list)  # {pid, port, names}
    redis_ports: list[int] = field(default_factory=list)
    dataplanes: list[dict[str, Any]] = field(default_factory=list)  # {pid, name, redis_port}
    agents: list[dict[str, Any]] = field(default_factory=list)  # {pid, name, redis_port}


@dataclass(frozen=True)
class SwitchProcesses:
    """What runs next to each standalone switch's Redis: the data plane, and the agent when
    its binary is given (the agent needs the data plane's counters, so never alone)."""

    dataplane: Path
    options: DataplaneOptions
    agent: Path | None = None


@dataclass(frozen=True)
class Layout:
    switches: int
    base_port: int
    fleet: bool
    ports: int = 8
    speed_gbps: int = 100
    name_prefix: str = "vs"
    # From `up --inventory`: each switch's own name, gNMI port and ports (standalone only).
    specs: tuple[SwitchSpec, ...] = ()
    # Where the gNMI servers listen (HOST or EVERY_INTERFACE), and the address the inventory
    # gives clients: HOST, or a name the clients resolve (a compose service's name).
    listen: str = HOST
    address: str = HOST

    def names(self) -> list[str]:
        if self.specs:
            return [spec.name for spec in self.specs]
        return [f"{self.name_prefix}{i + 1}" for i in range(self.switches)]

    def gnmi_port(self, index: int) -> int:
        return self.specs[index].gnmi_port if self.specs else self.base_port + index

    def serve_args(self, index: int) -> list[str]:
        if self.specs:
            return ["--port-list", *self.specs[index].port_list()]
        return ["--ports", str(self.ports), "--speed-gbps", str(self.speed_gbps)]


def inventory(layout: Layout) -> dict[str, Any]:
    """Switches in the shape of the controller's intent ``Switch`` model. In fleet mode all
    share one address and the gNMI prefix target selects the switch by its name."""
    if layout.specs:
        return inventory_document(layout.specs, layout.address, f"env:{PASSWORD_ENV}")
    port_list = [{"name": p.name, "speed_gbps": p.speed_gbps}
                 for p in default_ports(layout.ports, layout.speed_gbps)]  # fmt: skip
    switches = []
    for i, name in enumerate(layout.names()):
        gnmi: dict[str, Any] = {"address": layout.address, "port": layout.base_port + i}
        if layout.fleet:
            # One server for every switch: the gNMI prefix target picks the switch.
            gnmi = {"address": layout.address, "port": layout.base_port, "target": name}
        switches.append({
            "name": name,
            "role": "leaf",
            "gnmi": gnmi,
            "credential_ref": f"env:{PASSWORD_ENV}",
            "ports": port_list,
        })  # fmt: skip
    doc: dict[str, Any] = {"switches": switches}
    if layout.fleet:
        fleet = {"address": layout.address, "port": layout.base_port, "target": "switch name"}
        doc["fleet"] = fleet
    return doc


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> int:
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "vsonic.serve", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # outlives `vsonic up`; its own group for clean signals
        )
    return process.pid


def start(
    layout: Layout,
    state_dir: Path,
    env: dict[str, str],
    extras: SwitchProcesses | None = None,
    tls: TlsFiles | None = None,
    gcu_args: Sequence[str] = (),
) -> Started:
    """Start Redis (standalone only), the gNMI server processes (over TLS with ``tls``, with
    ``vsonic.serve``'s GCU flags ``gcu_args``) and, when given, a data plane (and an agent)
    per switch next to its Redis; no waiting here."""
    started = Started(fleet=layout.fleet)
    tls_args = [] if tls is None else ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    tls_args += gcu_args
    serve_args = ["--ports", str(layout.ports), "--speed-gbps", str(layout.speed_gbps)]
    serve_args += tls_args
    if layout.fleet:
        listen = f"{layout.listen}:{layout.base_port}"
        args = ["--fleet", "--address", listen, "--names", *layout.names()]
        log = state_dir / "gnmi-fleet.log"
        pid = _spawn(args + serve_args, log, env)
        started.gnmi.append(
            {"pid": pid, "port": layout.base_port, "names": layout.names(), "log": str(log)}
        )
        return started
    try:
        for i, name in enumerate(layout.names()):
            redis_port = free_port()
            started.redis_ports.append(redis_port)
            RedisProcess(redis_port, state_dir, daemon=True).start()
            port = layout.gnmi_port(i)
            listen = f"{layout.listen}:{port}"
            args = ["--names", name, "--address", listen, "--redis-port", str(redis_port)]
            own = layout.serve_args(i) + tls_args
            log = state_dir / f"gnmi-{name}.log"
            pid = _spawn(args + own, log, env)
            started.gnmi.append({"pid": pid, "port": port, "names": [name], "log": str(log)})
            if extras is not None:
                _start_extras(extras, started, state_dir, name, redis_port, seed_offset=i)
    except (OSError, RuntimeError, subprocess.CalledProcessError):
        stop(started, state_dir)  # leave nothing half-started behind
        raise
    return started


def _start_extras(
    extras: SwitchProcesses,
    started: Started,
    state_dir: Path,
    name: str,
    redis_port: int,
    seed_offset: int,
) -> None:
    seed = extras.options.seed + seed_offset
    argv = command(extras.dataplane, redis_port, extras.options, seed=seed)
    pid = spawn(argv, state_dir / f"dataplane-{name}.log")
    started.dataplanes.append({"pid": pid, "name": name, "redis_port": redis_port})
    if extras.agent is not None:
        pid = spawn(agent_command(extras.agent, redis_port), state_dir / f"agent-{name}.log")
        started.agents.append({"pid": pid, "name": name, "redis_port": redis_port})


def _channel(port: int, tls: TlsFiles | None) -> Any:
    if tls is None:
        return grpc.insecure_channel(f"{HOST}:{port}")
    trust = grpc.ssl_channel_credentials(root_certificates=tls.cert.read_bytes())
    return grpc.secure_channel(f"{HOST}:{port}", trust)


def answers(
    port: int, credentials: Credentials | None, timeout_s: float, tls: TlsFiles | None = None
) -> bool:
    """True once a gNMI Capabilities call on ``port`` succeeds (over TLS with ``tls``)."""
    metadata = [] if credentials is None else [
        ("username", credentials.username), ("password", credentials.password)
    ]  # fmt: skip
    with _channel(port, tls) as channel:
        try:
            gnmi_pb2_grpc.gNMIStub(channel).Capabilities(
                gnmi_pb2.CapabilityRequest(), metadata=metadata, timeout=timeout_s
            )
        except grpc.RpcError:
            return False
    return True


def _last_words(server: dict[str, Any]) -> str:
    """The last line of an exited server's log (say, the port it could not bind), so the
    operator reads why without opening the file; the log's path when it has nothing to say."""
    log = server.get("log")  # absent in a state file written before logs were recorded
    if log is None:
        return "see its log"
    try:
        lines = Path(log).read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return f"{lines[-1]} (log {log})" if lines else f"its log {log} is empty"


def wait_until_answering(
    started: Started,
    credentials: Credentials | None,
    deadline_s: float,
    monotonic: Callable[[], float] = time.monotonic,
    tls: TlsFiles | None = None,
) -> None:
    end = monotonic() + deadline_s
    for server in started.gnmi:
        while not answers(server["port"], credentials, timeout_s=1.0, tls=tls):
            if not is_running(server["pid"]):
                name = server["names"][0]
                raise RuntimeError(f"gNMI server for {name} exited: {_last_words(server)}")
            if monotonic() > end:
                raise RuntimeError(f"gNMI server on port {server['port']} did not answer")
            time.sleep(0.1)


def is_running(pid: int) -> bool:
    """Alive and not a zombie (PID 1 here does not reap orphans, facts: platform notes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_pid(pid: int, grace_s: float = 5.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace_s
    while is_running(pid) and time.monotonic() < end:
        time.sleep(0.05)
    if is_running(pid):
        os.kill(pid, signal.SIGKILL)


def dataplanes_running(started: Started) -> None:
    """Raises if a data plane or agent exited (a bad traffic file, an unreachable Redis)."""
    for kind, processes in (("dataplane", started.dataplanes), ("agent", started.agents)):
        for p in processes:
            if not is_running(p["pid"]):
                what = "data plane" if kind == "dataplane" else "agent"
                raise RuntimeError(f"{what} of {p['name']} exited; see {kind}-{p['name']}.log")


def stop(started: Started, state_dir: Path) -> None:
    # Agents and data planes first: stopped before their Redis, they end cleanly (the agent
    # reports mode=stopped) instead of reconnecting.
    for p in [*started.agents, *started.dataplanes]:
        stop_pid(p["pid"])
    for server in started.gnmi:
        stop_pid(server["pid"])
    for port in started.redis_ports:
        RedisProcess(port, state_dir).stop()


def save_state(started: Started, state_dir: Path) -> None:
    (state_dir / STATE_FILE).write_text(json.dumps(asdict(started), indent=2))


def load_state(state_dir: Path) -> Started | None:
    try:
        raw = json.loads((state_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    return Started(
        fleet=raw["fleet"],
        gnmi=raw["gnmi"],
        redis_ports=raw["redis_ports"],
        # Absent in a state file written before data planes and agents existed.
        dataplanes=raw.get("dataplanes", []),
        agents=raw.get("agents", []),
    )


def write_inventory(layout: Layout, state_dir: Path) -> Path:
    path = state_dir / INVENTORY_FILE
    path.write_text(yaml.safe_dump(inventory(layout), sort_keys=False))
    return path
