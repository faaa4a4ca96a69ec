"""What the southbound bench needs around the code it measures: the switches' process
(bench/vsonic_host.py) and its RPC tally, timing, and the intent's switches re-pointed at
the loopback servers, reached over TLS (bench/switch_tls.py). No figure is computed here
that the bench does not print.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import SecretStr

from bench.switch_tls import as_json, client_tls, serve_flags
from bench.vsonic_host import PASSWORD_ENV, USERNAME
from controller.intent.models import GnmiEndpoint, Intent, Switch
from controller.reconcile.access import OWNED_TABLES
from controller.southbound.credentials import SecretResolver, resolve_secret
from controller.southbound.gnmi import (
    GnmiTarget,
    SessionPool,
    SwitchSession,
    TlsOptions,
    target_for_switch,
)
from vsonic.gnmi_server import TlsFiles
from vsonic.tether import start_tethered

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
# The intent's switches carry credential_ref env:SLUICE_GNMI_PASSWORD (bench/compile_bench.py).
PASSWORD_REF_VARIABLE = "SLUICE_GNMI_PASSWORD"


@dataclass(frozen=True)
class HostStats:
    gets: int
    sets: int
    cpu_s: float


class SwitchHost:
    """The bench/vsonic_host.py process: one JSON line per command and per answer. ``tls``:
    what a session to its switches trusts (they serve the bench's certificate)."""

    def __init__(self, process: subprocess.Popen[str], tls: TlsOptions) -> None:
        self._process = process
        self.tls = tls

    @property
    def pid(self) -> int:
        return self._process.pid

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        if self._process.stdin is None or self._process.stdout is None:
            raise RuntimeError("switch host started without pipes")
        return self._process.stdin, self._process.stdout

    def request(self, line: str) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write(line + "\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            code = self._process.wait(timeout=10)
            raise RuntimeError(f"switch host exited (code {code}); its stderr says why")
        reply: dict[str, Any] = json.loads(answer)
        if "error" in reply:
            raise RuntimeError(f"switch host: {reply['error']}")
        return reply

    def stats(self) -> HostStats:
        reply = self.request("stats")
        return HostStats(reply["rpcs"]["Get"], reply["rpcs"]["Set"], float(reply["cpu_s"]))

    def reset(self) -> None:
        self.request("reset")

    def stop(self) -> None:
        stdin, _ = self._pipes()
        try:
            stdin.write("stop\n")
            stdin.close()
        except BrokenPipeError:
            pass  # already gone
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)


@contextmanager
def switch_host(
    spec: Mapping[str, object], password: str, tls: TlsFiles
) -> Iterator[tuple[SwitchHost, dict[str, int]]]:
    """Start the switches' process, serving TLS with ``tls``; yield it and its
    ``{name: port}``, stop it after."""
    process = start_tethered(
        [sys.executable, "-m", "bench.vsonic_host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, PASSWORD_ENV: password},  # never on the command line
    )
    host = SwitchHost(process, client_tls(tls))
    try:
        ports = host.request(json.dumps({**spec, "tls": as_json(tls)}))["ports"]
        yield host, {str(name): int(port) for name, port in ports.items()}
    finally:
        host.stop()


# --------------------------------------------------------------------------------------------
# measuring


@dataclass(frozen=True)
class Figures:
    label: str
    wall_s: float
    bench_cpu_s: float
    switches_cpu_s: float
    sets: int
    gets: int
    sent: dict[str, int]
    ops: int = 0
    targets: int = 0

    def _rate(self, count: int) -> float:
        return count / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def rpcs_per_s(self) -> float:
        return self._rate(self.sets + self.gets)

    def row(self) -> str:
        return (
            f"  {self.label:<44} {self.wall_s:8.3f}s {self.sets:6d} {self.gets:6d}"
            f" {self.rpcs_per_s:9.1f} {self._rate(self.ops):10.1f} {self._rate(self.targets):9.1f}"
            f" {self.bench_cpu_s:8.3f}s {self.switches_cpu_s:8.3f}s"
        )


HEADER = (
    f"  {'mode':<44} {'wall':>9} {'Set':>6} {'Get':>6} {'RPCs/s':>9} {'ops/s':>10}"
    f" {'targets/s':>9} {'cpu bench':>9} {'cpu vsonic':>9}"
)


def rpcs_sent(sessions: Mapping[str, SwitchSession]) -> dict[str, int]:
    total: dict[str, int] = {}
    for session in sessions.values():
        for method, count in session.rpc_counts.items():
            total[method] = total.get(method, 0) + count
    return total


def measure(
    host: SwitchHost,
    label: str,
    sessions: Mapping[str, SwitchSession],
    work: Callable[[], T],
) -> tuple[Figures, T]:
    """Run ``work`` once: its result, wall and CPU time, and the RPCs the switches got."""
    before = host.stats()
    cpu = time.process_time()
    start = time.perf_counter()
    result = work()
    wall = time.perf_counter() - start
    bench_cpu = time.process_time() - cpu
    after = host.stats()
    figures = Figures(
        label,
        wall,
        bench_cpu,
        after.cpu_s - before.cpu_s,
        after.sets - before.sets,
        after.gets - before.gets,
        rpcs_sent(sessions),
    )
    return figures, result


def check_counts(figures: Figures) -> None:
    """Say so when the bench sent more attempts than the switches received (retries)."""
    sent = (figures.sent.get("Set", 0), figures.sent.get("Get", 0))
    if sent != (figures.sets, figures.gets):
        print(
            f"  note: {figures.label}: sent {sent[0]} Set / {sent[1]} Get attempts,"
            f" switches received {figures.sets} / {figures.gets} (retries)"
        )


# --------------------------------------------------------------------------------------------
# targets


def password_resolver(password: str) -> SecretResolver:
    """Resolve ``credential_ref`` the controller's way, from an environment holding only
    the bench's generated password."""
    environ = {PASSWORD_REF_VARIABLE: password}

    def resolve(ref: str) -> SecretStr:
        return resolve_secret(ref, environ=environ)

    return resolve


def loopback_switches(intent: Intent, ports: Mapping[str, int], *, fleet: bool) -> list[Switch]:
    """The intent's switches re-pointed at the loopback servers (fleet: the one server)."""
    return [
        switch.model_copy(
            update={
                "gnmi": GnmiEndpoint(address="127.0.0.1", port=ports["fleet"], target=switch.name)
                if fleet
                else GnmiEndpoint(address="127.0.0.1", port=ports[switch.name])
            }
        )
        for switch in intent.switches
    ]


def loopback_targets(
    intent: Intent, ports: Mapping[str, int], password: str, tls: TlsOptions, *, fleet: bool
) -> list[GnmiTarget]:
    """Targets for ``loopback_switches``, over ``tls``. Fleet: the switch is picked by the
    gNMI prefix target, its name."""
    resolve = password_resolver(password)
    return [
        target_for_switch(
            switch,
            resolve,
            username=USERNAME,
            tls=tls,
            prefix_target=switch.name if fleet else None,
        )
        for switch in loopback_switches(intent, ports, fleet=fleet)
    ]


def warm_up(targets: list[GnmiTarget]) -> None:
    """One Get on a throwaway pool: import and first-call costs stay out of both timings."""
    with SessionPool() as pool:
        pool.session(targets[0]).get_tables(OWNED_TABLES)


def fleet_names(switches: int) -> list[str]:
    """The switch names a bench's fleet-mode vsonic serves: sw0000, sw0001, ..."""
    return [f"sw{i:04d}" for i in range(switches)]


def start_fleet_server(
    switches: int, ports: int, password: str, tls: TlsFiles
) -> tuple[subprocess.Popen[str], int]:
    """One fleet-mode vsonic in its own process on a free loopback port, serving TLS with
    ``tls``: (process, port)."""
    env = {**os.environ, "VSONIC_PASSWORD": password}  # never on the command line
    args = [sys.executable, "-m", "vsonic.serve", "--address", "127.0.0.1:0", "--fleet",
            *serve_flags(tls), "--ports", str(ports),
            "--names", *fleet_names(switches)]  # fmt: skip
    server = start_tethered(args, env=env, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()  # "vsonic: serving N switch(es) on port P"
    if "on port" not in line:
        server.kill()
        raise RuntimeError(f"vsonic did not start: {line!r}")
    return server, int(line.rsplit(" ", 1)[1])
