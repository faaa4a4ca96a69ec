"""The demo (``scripts/demo.sh``): sluice end to end on one machine.

Steps, each printed as it runs: start a local PostgreSQL unless ``DATABASE_URL`` is given,
migrate it, mint an admin token with ``sluice-admin``, serve the REST API on 127.0.0.1,
apply ``examples/intent.yaml`` with the ``sluice`` CLI (validation, plan, new version) and
print the per-switch plan, the version history and the audit trail. Everything the demo
started is stopped at the end unless ``--keep-running`` is given.

The demo drives the real commands an operator would type, as subprocesses, so it shows
exactly what they print.
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

from controller.demo_common import DemoError, run, say
from controller.store.localpg import LocalPostgres, free_port

REPO = Path(__file__).resolve().parent.parent
RUN_DIR = REPO / ".run" / "demo"
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Environment:
    database_url: str
    api_url: str
    api_port: int
    token: str

    def for_commands(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=self.database_url,
            SLUICE_API_URL=self.api_url,
            SLUICE_API_PORT=str(self.api_port),
            SLUICE_API_TOKEN=self.token,
        )
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
    server = LocalPostgres(root=root)
    say(f"starting a local PostgreSQL on 127.0.0.1:{server.port} ({root})")
    server.start()
    try:
        yield server.url()
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
    proc = subprocess.Popen(
        [str(BIN / "python"), "-m", "api"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_healthy(url, proc)
        yield
    finally:
        if not keep:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
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
    say("dry run: what would change")
    run([sluice, "apply", "-f", str(intent_file), "--dry-run"], env)
    say("applying the example intent (a new intent version)")
    run([sluice, "apply", "-f", str(intent_file), "--reason", "demo: example fabric"], env)
    say("the per-switch plan: desired CONFIG_DB vs what each switch is known to run")
    run([sluice, "plan"], env)
    say("history and audit")
    run([sluice, "get", "versions"], env)
    run([sluice, "audit", "--limit", "5"], env)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--intent", type=Path, default=REPO / "examples" / "intent.yaml")
    parser.add_argument(
        "--keep-running", action="store_true", help="leave PostgreSQL and the API up"
    )
    args = parser.parse_args(argv)
    try:
        with ExitStack() as stack:
            database_url = stack.enter_context(local_database(args.keep_running))
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
            env = Environment(database_url, f"http://127.0.0.1:{port}", port, token)
            say(f"serving the REST API on {env.api_url} (OpenAPI at {env.api_url}/docs)")
            stack.enter_context(api_server(env.for_commands(), env.api_url, args.keep_running))
            show_intent(env.for_commands(), args.intent)
            if args.keep_running:
                say(f"left running: API {env.api_url}; export SLUICE_API_TOKEN=<the token above>")
    except DemoError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    say("demo finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
