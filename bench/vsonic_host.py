"""Virtual switches for the southbound bench, in a process of their own.

``python -m bench.vsonic_host`` (started by ``bench.southbound_bench``, not by hand). The
switches run apart from the bench so that their work (decoding, validating, answering) does
not compete with the controller side for one interpreter lock: on a fabric every switch has
its own CPU, here they share one process and the controller has the other core.

Protocol, one JSON line each way on stdin/stdout:

- first line in: the spec ``{"layout": "standalone" | "fleet", "switches": N, "ports": P,
  "tls": {"cert": path, "key": path}, "converged": bool, "latency_ms": float,
  "gcu_set_s": float}``; every server answers gNMI over TLS with that certificate and key
  (bench/switch_tls.py; required: a switch never serves plaintext); the switches are those of
  ``bench.compile_bench.synthetic_intent(N, P)``, booted with the intent's ports and speeds.
  ``converged``: CONFIG_DB already holds the compiled desired state, written through vsonic's
  own validation (``Switch.apply``), as a previous push would have left it;
  ``validate_once`` (default false): only the first switch of each shape (same ports and
  speeds, same desired state) is written through that validation, the others get the very
  entries it wrote, straight into their store (the same Set on the same boot state gets the
  same verdict; 10,000 switches boot in seconds, not minutes). ``slice`` (default all):
  ``[start, stop]``, serve only those switches of the intent (several host processes then
  share one fleet). ``latency_ms``
  (default 0): a modelled pause before each Get and Set answer (``CountingGnmiService``).
  ``gcu_set_s`` (default 0): each switch applies a Set as one GCU run of that many seconds
  (vsonic/gcu.py: checkpoint, patch, save; one Set at a time per switch).
  Answer: ``{"ports": {switch: tcp port}}``.
- ``stats``: ``{"rpcs": {"Get": n, "Set": n}, "cpu_s": s}`` (RPCs received so far, and the
  process's CPU seconds, every thread).
- ``reset``: every switch back to its boot state; answer ``{"ok": true}``.
- ``stop`` or end of input: stop every server and exit.

The gNMI password comes from the environment (``BENCH_VSONIC_PASSWORD``), never argv.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TextIO

from bench.compile_bench import synthetic_intent
from bench.switch_tls import from_json
from controller.intent.models import Intent
from controller.sonic.compile import compile_fleet, compile_fleet_by_shape
from controller.sonic.model import SwitchConfig
from vsonic.db import CONFIG_DB, SEPARATORS, MemoryStore, Store, read_config, redis_key
from vsonic.gcu import GcuBehaviour
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.paths import DbPath
from vsonic.seed import PortSeed, SwitchSeed, seed_store
from vsonic.setops import OpKind, SetOp, changed_entries
from vsonic.switch import Switch, Targets

PASSWORD_ENV = "BENCH_VSONIC_PASSWORD"
USERNAME = "admin"
LISTEN = "127.0.0.1:0"  # loopback only; the OS picks a free port


class RpcTally:
    """RPCs received, by method, across every server of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, method: str) -> None:
        with self._lock:
            self._counts[method] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"Get": self._counts["Get"], "Set": self._counts["Set"]}


class CountingGnmiService(GnmiService):
    """vsonic's gNMI service, counting the Get and Set RPCs it serves. ``latency_s``: a
    modelled pause before each Get and Set answer, for the time a real switch spends on its
    own CPU (sonic-gnmi, GCU, YANG: seconds per patch, sonic-buildimage#22370, #23945). It
    sleeps without holding the interpreter lock, as switches work side by side on a fabric."""

    def __init__(
        self,
        *args: Any,
        tally: RpcTally,
        latency_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._tally = tally
        self._latency_s = latency_s
        self._sleep = sleep

    def _arrived(self, method: str) -> None:
        self._tally.add(method)
        if self._latency_s > 0:
            self._sleep(self._latency_s)

    def Get(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._arrived("Get")
        return super().Get(request, context)

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._arrived("Set")
        return super().Set(request, context)


@dataclass(frozen=True)
class HostSpec:
    layout: str
    switches: int
    ports: int
    tls: TlsFiles
    converged: bool = False
    latency_ms: float = 0.0
    gcu_set_s: float = 0.0
    validate_once: bool = False
    slice: tuple[int, int] | None = None

    @classmethod
    def from_json(cls, text: str) -> HostSpec:
        raw = json.loads(text)
        spec = cls(
            layout=str(raw["layout"]),
            switches=int(raw["switches"]),
            ports=int(raw["ports"]),
            tls=from_json(raw.get("tls")),
            converged=bool(raw.get("converged", False)),
            latency_ms=float(raw.get("latency_ms", 0.0)),
            gcu_set_s=float(raw.get("gcu_set_s", 0.0)),
            validate_once=bool(raw.get("validate_once", False)),
            slice=(int(raw["slice"][0]), int(raw["slice"][1])) if "slice" in raw else None,
        )
        if spec.layout not in ("standalone", "fleet"):
            raise ValueError(f"layout must be standalone or fleet, not {spec.layout!r}")
        return spec


def boot_seeds(intent: Intent) -> dict[str, SwitchSeed]:
    """Each switch's boot state: the intent's ports, at the intent's speeds."""
    return {
        s.name: SwitchSeed(s.name, tuple(PortSeed(p.name, p.speed_gbps) for p in s.ports))
        for s in intent.switches
    }


def wipe(store: Store) -> None:
    """Remove every hash of every database (MemoryStore keeps no other state)."""
    for db in SEPARATORS:
        store.write_atomically(db, dict.fromkeys(store.read_prefixed(db, ""), None))


def write_validated(switch: Switch, config: SwitchConfig) -> None:
    """Write ``config`` through vsonic's Set path minus gRPC: one update per table (a table
    update replaces the table), validated as a SetRequest would be, all or nothing."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for (table, key), fields in config.items():
        tables.setdefault(table, {})[key] = dict(fields)
    switch.apply([SetOp(OpKind.UPDATE, DbPath("CONFIG_DB", t), v) for t, v in tables.items()])


@dataclass
class Host:
    spec: HostSpec
    intent: Intent
    switches: list[Switch]
    servers: dict[str, RunningServer] = field(default_factory=dict)
    tally: RpcTally = field(default_factory=RpcTally)

    def ports(self) -> dict[str, int]:
        return {name: server.port for name, server in self.servers.items()}

    def stats(self) -> dict[str, Any]:
        return {"rpcs": self.tally.snapshot(), "cpu_s": time.process_time()}

    def reset(self) -> None:
        seeds = boot_seeds(self.intent)
        for switch in self.switches:
            wipe(switch.store)
            seed_store(switch.store, seeds[switch.name])

    def stop(self) -> None:
        # Side by side: each stop waits out its grace period (the servers are asyncio gRPC on
        # threads of their own; ``RunningServer.stop`` closes the service and the loop).
        with ThreadPoolExecutor(max_workers=min(64, max(1, len(self.servers)))) as pool:
            list(pool.map(lambda running: running.stop(0.5), self.servers.values()))
        self.servers.clear()


def write_converged(switches: list[Switch], intent: Intent, *, validate_once: bool) -> None:
    """Each switch's desired state, validated per switch, or once per shape (module doc)."""
    if not validate_once:
        desired = compile_fleet(intent)
        for switch in switches:
            write_validated(switch, desired[switch.name])
        return
    shared = compile_fleet_by_shape(intent).configs
    seeds = boot_seeds(intent)
    written: dict[tuple[tuple[PortSeed, ...], int], dict[str, dict[str, str] | None]] = {}
    for switch in switches:
        config = shared[switch.name]
        shape = (seeds[switch.name].ports, id(config))
        changes = written.get(shape)
        if changes is None:
            before = read_config(switch.store)
            write_validated(switch, config)
            entries = changed_entries(before, read_config(switch.store))
            written[shape] = {redis_key(CONFIG_DB, t, k): f for (t, k), f in entries.items()}
        else:
            switch.store.write_atomically(CONFIG_DB, changes)


def build_host(spec: HostSpec, password: str) -> Host:
    intent = synthetic_intent(spec.switches, spec.ports)
    if spec.slice is not None:
        start, stop = spec.slice
        intent = intent.model_copy(update={"switches": intent.switches[start:stop]})
    gcu = GcuBehaviour(per_set_s=spec.gcu_set_s)
    switches = [Switch(s.name, MemoryStore(), gcu=gcu) for s in intent.switches]
    host = Host(spec, intent, switches)
    host.reset()
    if spec.converged:
        write_converged(switches, intent, validate_once=spec.validate_once)
    credentials = Credentials(USERNAME, password)
    try:
        for name, targets in _target_sets(spec, switches):
            service = CountingGnmiService(
                targets, Clock(), credentials, tally=host.tally, latency_s=spec.latency_ms / 1000
            )
            host.servers[name] = start_server(LISTEN, service, spec.tls)
    except BaseException:
        host.stop()
        raise
    return host


def _target_sets(spec: HostSpec, switches: list[Switch]) -> Iterable[tuple[str, Targets]]:
    """Standalone: a server per switch (its own port); fleet: one server, keyed ``fleet``."""
    if spec.layout == "fleet":
        return [("fleet", Targets(switches, fleet=True))]
    return [(s.name, Targets([s], fleet=False)) for s in switches]


def _reply(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve_commands(host: Host, lines: Iterable[str], out: TextIO) -> None:
    for line in lines:
        command = line.strip()
        if command == "stop":
            return
        if command == "stats":
            _reply(out, host.stats())
        elif command == "reset":
            host.reset()
            _reply(out, {"ok": True})
        else:
            _reply(out, {"error": f"unknown command {command!r}"})


def main() -> int:
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        print(f"{PASSWORD_ENV} is not set", file=sys.stderr)
        return 2
    spec = HostSpec.from_json(sys.stdin.readline())
    host = build_host(spec, password)
    # The switches' state lives until the process ends: move it out of the cycle collector's
    # reach, or every full collection re-scans millions of entry dicts (at 10,000 converged
    # switches the host's CPU per Get tripled).
    gc.freeze()
    try:
        _reply(sys.stdout, {"ports": host.ports()})
        serve_commands(host, sys.stdin, sys.stdout)
    finally:
        host.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
