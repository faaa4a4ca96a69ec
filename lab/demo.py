"""The demo (``scripts/demo.sh``): sluice end to end on one machine.

Set-up: the example intent's hosts come up as network namespaces with sshd (when the machine
allows it: root, ``ip netns``), a local PostgreSQL starts unless ``DATABASE_URL`` is given, it
is migrated, ``sluice-admin`` mints an admin token, and the REST API serves on 127.0.0.1.
Then the steps (``--steps``, all by default; docs/demo.md shows sample output):

- ``intent``: check, dry-run, apply ``docs/example-intent.yaml`` with the ``sluice`` CLI, print
  the per-switch plan, the version history and the audit trail;
- ``switches`` (``lab/demo_switches.py``): four virtual switches with their data plane
  (or, with ``--switches real``, SONiC's own software: ``lab/demo_real.py``)
  and qos-agent, a staged rollout verified by read-back, a WRED threshold changed behind
  sluice's back found and corrected by the reconcile loop, then service classes starting and
  stopping while each queue's threshold and throughput move (``lab/demo_agents.py``), then
  an operator's playbook of the ``sluice.fabric`` collection changing the intent and rolling
  it out (``lab/demo_ansible.py``);
- ``hosts`` (``lab/demo_hosts.py``): the hosts planned in check mode, applied in
  batches through Ansible over SSH, read back inside a namespace, applied again with no change.

Everything the demo started is stopped at the end unless ``--keep-running`` is given. It
drives the real commands an operator would type, as subprocesses, so it shows what they print.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from lab.demo_common import DemoError, run, say, start_process, stop_process
from lab.demo_hosts import (
    HostFabricEnv,
    HostFabricUnavailable,
    host_fabric,
    hosts_step,
    intent_host_names,
)
from lab.demo_switches import switches_step
from lab.demo_twin import twin_step
from lab.localpg import LocalPostgres, free_port
from lab.prometheus import LocalPrometheus, LocalPrometheusError

REPO = Path(__file__).resolve().parent.parent
RUN_DIR = REPO / ".run" / "demo"
BIN = Path(sys.executable).parent
# The smallest switch of the example (two ports): its whole plan fits a screen or two.
PLAN_SHOWN_IN_FULL = "spine1"


@dataclass(frozen=True)
class Environment:
    database_url: str
    api_url: str
    api_port: int
    token: str
    # The worker reads rollout health gates from it, as the API does.
    prometheus_url: str
    # Seconds per Prometheus query for the API, worker and CLI; None keeps the settings'.
    prometheus_timeout_s: float | None = None

    def for_commands(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=self.database_url,
            SLUICE_API_URL=self.api_url,
            SLUICE_API_PORT=str(self.api_port),
            SLUICE_API_TOKEN=self.token,
            SLUICE_PROMETHEUS_URL=self.prometheus_url,
        )
        if self.prometheus_timeout_s is not None:
            env["SLUICE_PROMETHEUS_TIMEOUT_S"] = f"{self.prometheus_timeout_s:g}"
        return env


@contextmanager
def local_database(keep: bool) -> Iterator[str]:
    """DATABASE_URL if set; otherwise a fresh PostgreSQL cluster under .run/demo/pg."""
    given = os.environ.get("DATABASE_URL")
    if given:
        say("using DATABASE_URL from the environment")
        yield given
        return
    root = RUN_DIR / "pg"
    if root.exists():
        LocalPostgres(root=root).stop()
        shutil.rmtree(root)
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    for parent in (REPO / ".run", RUN_DIR):
        parent.chmod(0o755)
    server = LocalPostgres(root=root, tethered=not keep)
    say(f"starting a local PostgreSQL on 127.0.0.1:{server.port} ({root})")
    server.start()
    try:
        yield server.url()
    finally:
        if not keep:
            server.stop()


@contextmanager
def local_prometheus(keep: bool, scrape_interval_s: float = 1.0) -> Iterator[str]:
    """A local Prometheus scraping the telemetry collector every ``scrape_interval_s`` (which
    is also its scrape timeout: Prometheus allows no longer) (docs/health.md); yields its
    URL."""
    target = f"127.0.0.1:{os.environ.get('SLUICE_TELEMETRY_METRICS_PORT', '9464')}"
    root = RUN_DIR / "prometheus"
    shutil.rmtree(root, ignore_errors=True)
    server = LocalPrometheus(
        root, targets=[target], scrape_interval_s=scrape_interval_s, tethered=not keep
    )
    say(f"starting a local Prometheus on {server.url}, scraping the collector at {target}")
    try:
        server.start()
    except LocalPrometheusError as why:
        raise DemoError(str(why)) from None
    try:
        yield server.url
    finally:
        if not keep:
            server.stop()


def pick_api_port(preferred: int = 8000) -> int:
    try:
        with httpx.Client(timeout=0.5) as client:
            client.get(f"http://127.0.0.1:{preferred}/healthz")
    except httpx.HTTPError:
        return preferred
    port = free_port()
    print(f"port {preferred} is taken; serving the API on {port} instead", flush=True)
    return port


@contextmanager
def api_server(env: dict[str, str], url: str, keep: bool) -> Iterator[None]:
    log = (RUN_DIR / "api.log").open("w")
    proc = start_process(
        [str(BIN / "python"), "-m", "api"], keep, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_healthy(url, proc)
        yield
    finally:
        if not keep:
            stop_process(proc, signal.SIGINT, timeout_s=15)
        log.close()


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise DemoError(f"the API exited with {proc.returncode}; see {RUN_DIR}/api.log")
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise DemoError(f"the API did not answer {url}/healthz within {timeout_s:.0f} s")


def show_intent(env: dict[str, str], intent_file: Path) -> None:
    sluice = str(BIN / "sluice")
    say("checking the example intent offline")
    run([sluice, "check", "-f", str(intent_file)], env)
    say("dry run: what would change, per switch and table")
    run([sluice, "apply", "-f", str(intent_file), "--dry-run", "--summary"], env)
    say("applying the example intent (a new intent version)")
    run([sluice, "apply", "-f", str(intent_file), "--summary", "--reason", "demo: example fabric"],
        env)  # fmt: skip
    say("the per-switch plan: desired CONFIG_DB vs what each switch is known to run")
    run([sluice, "plan", "--summary"], env)
    say(f"one switch's plan in full, in write order ({PLAN_SHOWN_IN_FULL})")
    run([sluice, "plan", "--switch", PLAN_SHOWN_IN_FULL], env)
    say("history and audit")
    run([sluice, "get", "versions"], env)
    run([sluice, "audit", "--limit", "5"], env)


STEPS = ("intent", "switches", "hosts")


def parse_steps(text: str) -> tuple[str, ...]:
    steps = tuple(step.strip() for step in text.split(",") if step.strip())
    unknown = [step for step in steps if step not in STEPS]
    if unknown or not steps:
        raise argparse.ArgumentTypeError(f"steps are {', '.join(STEPS)}; got {text!r}")
    return steps


def namespaced_hosts(stack: ExitStack, intent_file: Path, keep: bool) -> HostFabricEnv | None:
    """The intent's hosts as namespaces, or None (with the reason) where this machine cannot."""
    document = yaml.safe_load(intent_file.read_text(encoding="utf-8"))
    say("bringing up the intent's hosts as network namespaces with sshd")
    try:
        return stack.enter_context(host_fabric(RUN_DIR, intent_host_names(document), keep=keep))
    except HostFabricUnavailable as why:
        say(f"skipping the hosts step: {why}")
        return None


# SONiC's own software for four switches loads this kind of 2-core machine to 20 and more;
# a Prometheus query then outlasts the settings' 5 s (a real run: `sluice top spine2 --once`
# failed with ReadTimeout at load 20, spine1's frame came back "stream unknown").
REAL_PROMETHEUS_TIMEOUT_S = 30.0
# Prometheus's scrape timeout is at most its interval, 1 s for the virtual demo. Four real
# switches' collector answers /metrics (about 1.5 MB: libsaivs gives every port 20 queues) in
# 0.6-4 s at load 38: a whole run at 1 s had 512 of 1426 scrapes succeed, none in its last
# 5 minutes, and failed on "the collector's stream of leaf2 was not up" (2026-11-30).
REAL_SCRAPE_INTERVAL_S = 5.0


def serve(
    stack: ExitStack,
    keep: bool,
    hosts: HostFabricEnv | None,
    prometheus_timeout_s: float | None = None,
    scrape_interval_s: float = 1.0,
) -> Environment:
    """Database, schema, admin token and the API (told where the hosts are)."""
    database_url = stack.enter_context(local_database(keep))
    port = pick_api_port()
    base = dict(os.environ, DATABASE_URL=database_url, SLUICE_API_PORT=str(port))
    say("migrating the database")
    run([str(BIN / "sluice-admin"), "migrate"], base)
    say("creating an admin token")
    token = run(
        [str(BIN / "sluice-admin"), "create-token", "--name", "demo", "--role", "admin"],
        base,
        capture=True,
    ).strip()
    prometheus_url = stack.enter_context(local_prometheus(keep, scrape_interval_s))
    env = Environment(
        database_url, f"http://127.0.0.1:{port}", port, token, prometheus_url, prometheus_timeout_s
    )
    say(f"serving the REST API on {env.api_url} (OpenAPI at {env.api_url}/docs)")
    api_env = {**env.for_commands(), **(hosts.env if hosts else {})}
    stack.enter_context(api_server(api_env, env.api_url, keep))
    return env


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice-demo", description="sluice end to end")
    parser.add_argument("--intent", type=Path, default=REPO / "docs" / "example-intent.yaml")
    parser.add_argument("--steps", type=parse_steps, default=STEPS, help=",".join(STEPS))
    parser.add_argument(
        "--switches",
        choices=("virtual", "real"),
        default="virtual",
        help="virtual: vsonic with its data plane and agents; real: SONiC's own gNMI server, "
        "GCU and orchagent over libsaivs (shared/sonic beside the clone, lab/realsonic.py)",
    )
    parser.add_argument(
        "--keep-running", action="store_true", help="leave everything the demo started up"
    )
    args = parser.parse_args(argv)
    keep: bool = args.keep_running
    try:
        with ExitStack() as stack:
            hosts = None
            if "hosts" in args.steps:
                hosts = namespaced_hosts(stack, args.intent, keep)
            real = args.switches == "real"
            if real:
                env = serve(stack, keep, hosts, REAL_PROMETHEUS_TIMEOUT_S, REAL_SCRAPE_INTERVAL_S)
            else:
                env = serve(stack, keep, hosts)
            if "intent" in args.steps:
                show_intent(env.for_commands(), args.intent)
            if "switches" in args.steps:
                switches_step(env.for_commands(), args.intent, RUN_DIR, keep=keep, real=real)
                twin_step(env.for_commands(), args.intent, RUN_DIR)
            if hosts is not None:
                hosts_step(env.for_commands(), RUN_DIR, hosts, intent_file=args.intent, keep=keep)
            if keep:
                say(f"left running: API {env.api_url}, dashboard {env.api_url}/dashboard; "
                    "export SLUICE_API_TOKEN=<the token above>")  # fmt: skip
    except DemoError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    say("demo finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
