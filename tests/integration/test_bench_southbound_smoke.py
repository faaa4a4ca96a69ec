"""Smoke test of the southbound benchmark (bench/southbound_bench.py) at tiny sizes.

It runs, its output parses, the RPC counts the switches received are the ones the plans
call for, a drifted target or a refused push stops it loudly, and the switches' process is
gone afterwards. Real gRPC over TLS to real vsonic servers on 127.0.0.1 (the switches serve
the bench's certificate); no timing assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.compile_bench import synthetic_intent
from bench.southbound_bench import VSONIC_PACE, run_push, run_reconcile
from bench.southbound_support import loopback_switches, loopback_targets, switch_host
from bench.switch_tls import bench_tls
from controller.reconcile.apply import gcu_batches
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import plan_switch
from controller.sonic.model import SwitchConfig
from controller.southbound.gnmi import DEFAULT_SET_DEADLINE_S as SET_DEADLINE_S
from vsonic.gnmi_server import TlsFiles

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SWITCHES, TARGETS, PORTS, BATCH = 3, 10, 4, 40
GCU_SWITCHES = 2
ROW = re.compile(
    r"^  (?P<mode>baseline|sluice): .*?\s(?P<wall>\d+\.\d{3})s\s+(?P<sets>\d+)\s+(?P<gets>\d+)"
    r"\s+(?P<rpcs_s>\d+\.\d)\s+(?P<ops_s>\d+\.\d)\s+(?P<targets_s>\d+\.\d)"
    r"\s+(?P<cpu_bench>\d+\.\d{3})s\s+(?P<cpu_vsonic>\d+\.\d{3})s$"
)


@pytest.fixture(scope="module")
def tls() -> Iterator[TlsFiles]:
    with bench_tls() as files:
        yield files


def served_certificate(port: int, tls: TlsFiles) -> bytes:
    """The DER certificate the server on ``port`` presents in a TLS handshake (HTTP/2 offered
    by ALPN, as a gRPC client does), verified against ``tls``'s certificate."""
    context = ssl.create_default_context(cafile=str(tls.cert))
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return der


def parse_rows(stdout: str) -> dict[str, dict[str, dict[str, str]]]:
    """{section: {mode: columns}}; a section starts at a line ``push:``, ``reconcile:`` or
    ``push-gcu (... s per Set):``."""
    sections: dict[str, dict[str, dict[str, str]]] = {}
    current = None
    for line in stdout.splitlines():
        head = line.split(":", 1)[0].split(" ", 1)[0]
        if head in ("push", "reconcile", "push-gcu"):
            current = head
            sections[current] = {}
        elif (match := ROW.match(line)) and current is not None:
            sections[current][match["mode"]] = match.groupdict()
    return sections


def test_bench_runs_at_tiny_sizes_and_its_output_parses() -> None:
    flags = ["--switches", str(SWITCHES), "--targets", str(TARGETS), "--ports", str(PORTS)]
    flags += ["--batch-size", str(BATCH), "--parallel", "2", "--max-in-flight", "4"]
    flags += ["--switch-latency-ms", "1"]
    flags += ["--gcu-set-s", "0.05", "--gcu-switches", str(GCU_SWITCHES), "--gcu-parallel", "2"]
    flags += ["--gcu-batch-size", str(BATCH)]
    done = subprocess.run(
        [sys.executable, "-m", "bench.southbound_bench", *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = parse_rows(done.stdout)
    assert set(rows) == {"push", "reconcile", "push-gcu"}
    assert all(set(modes) == {"baseline", "sluice"} for modes in rows.values()), done.stdout

    # A fresh switch holds none of sluice's tables, so each desired entry is one add op and
    # a switch gets the SetRequests gcu_batches makes of them (at most BATCH ops, a port's
    # port-critical changes in one Set, the agent tables' in Sets of their own; the bench's
    # switches take no time per change, so op counts alone size them), then one read-back Get.
    def set_count(config: SwitchConfig) -> int:
        ops = plan_switch("s", config, {}).ops
        return len(gcu_batches(ops, BATCH, VSONIC_PACE.changes_within(SET_DEADLINE_S)))

    desired = compile_fleet(synthetic_intent(SWITCHES, PORTS))
    sets = sum(set_count(config) for config in desired.values())
    paced = compile_fleet(synthetic_intent(GCU_SWITCHES, PORTS))
    paced_sets = sum(set_count(config) for config in paced.values())
    for mode in ("baseline", "sluice"):
        push, reconcile = rows["push"][mode], rows["reconcile"][mode]
        assert (int(push["sets"]), int(push["gets"])) == (sets, SWITCHES)
        gcu = rows["push-gcu"][mode]
        assert (int(gcu["sets"]), int(gcu["gets"])) == (paced_sets, GCU_SWITCHES)
        # A no-drift pass is one Get per target and no Set at all.
        assert (int(reconcile["sets"]), int(reconcile["gets"])) == (0, TARGETS)
    assert "every plan empty: 10/10 baseline, 10/10 sluice" in done.stdout
    assert "note:" not in done.stdout  # every attempt the bench sent arrived
    reproduce = done.stdout.strip().splitlines()[-1]
    assert reproduce.startswith("reproduce: uv run python -m bench.southbound_bench")
    given = reproduce.split()[6:]
    assert dict(zip(given[::2], given[1::2], strict=True)) == dict(
        zip(flags[::2], flags[1::2], strict=True)
    )


def _another_weight(config: SwitchConfig) -> SwitchConfig:
    """``config`` with the first DWRR scheduler's weight moved by one (1..100 stays valid)."""
    key = next(k for k, fields in sorted(config.items()) if "weight" in fields)
    weight = int(config[key]["weight"])
    return {**config, key: {**config[key], "weight": str(weight % 100 + 1)}}


@pytest.mark.parametrize("baseline", [True, False], ids=["sequential", "reconcile-loop"])
def test_a_drifted_target_stops_the_reconcile_pass_and_the_switches_stop_after(
    baseline: bool, tls: TlsFiles
) -> None:
    password = secrets.token_hex(8)
    intent = synthetic_intent(3, PORTS)
    desired = compile_fleet(intent)
    spec = {"layout": "fleet", "switches": 3, "ports": PORTS, "converged": True}
    args = argparse.Namespace(max_in_flight=4, parallel=2, batch_size=BATCH)
    with switch_host(spec, password, tls) as (host, ports):
        # The switches serve the bench's certificate (bench/switch_tls.py), nothing else.
        expected = ssl.PEM_cert_to_DER_cert(tls.cert.read_text())
        assert served_certificate(ports["fleet"], tls) == expected
        switches = loopback_switches(intent, ports, fleet=True)
        converged = run_reconcile(host, switches, desired, password, args, baseline=baseline)
        assert (converged.sets, converged.gets, converged.targets) == (0, 3, 3)
        # The switch still holds the old weight: one field differs, so one change op, and
        # the loop (alert mode) reports one drift and writes nothing.
        drifted = {**desired, "sw0001": _another_weight(desired["sw0001"])}
        shown = r"sw0001 \(1 ops\)" if baseline else r"sw0001 \(alerted, 1 drift\)"
        with pytest.raises(SystemExit, match="1 of 3 targets not converged: " + shown):
            run_reconcile(host, switches, drifted, password, args, baseline=baseline)
        assert host.stats().sets == 0
        pid, port = host.pid, ports["fleet"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # exited and reaped
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_refused_push_stops_the_bench_naming_the_switch(tls: TlsFiles) -> None:
    password = secrets.token_hex(8)
    intent = synthetic_intent(2, PORTS)
    desired = compile_fleet(intent)
    # vsonic refuses a DWRR weight over 100 (SONiC's YANG range 1..100).
    bad = dict(desired["sw0000"])
    key = next(k for k in sorted(bad) if "weight" in bad[k])
    bad[key] = {**bad[key], "weight": "101"}
    plans = {
        name: plan_switch(name, config, {}) for name, config in {**desired, "sw0000": bad}.items()
    }
    args = argparse.Namespace(max_in_flight=4, parallel=2, batch_size=BATCH)
    spec = {"layout": "standalone", "switches": 2, "ports": PORTS}
    with switch_host(spec, password, tls) as (host, ports):
        targets = loopback_targets(intent, ports, password, host.tls, fleet=False)
        with pytest.raises(SystemExit, match=r"1 of 2 switches not verified: sw0000: failed"):
            run_push(host, targets, plans, args, baseline=False)
