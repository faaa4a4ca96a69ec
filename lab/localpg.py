"""A throwaway local PostgreSQL cluster for the demo and the tests.

``initdb`` refuses to run as root, so when we are root the cluster is created and run as the
``postgres`` user in a folder it owns. The server listens on 127.0.0.1 only and on a unix
socket inside the cluster folder. It runs as a child tethered to this process (``vsonic.
tether``: a test run that is killed takes its cluster with it), or, for a demo that should
leave it running, as ``pg_ctl``'s daemon.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsonic.tether import start_tethered

PG_BIN_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin")


class LocalPostgresError(RuntimeError):
    pass


def find_pg_bin() -> Path:
    for candidate in PG_BIN_CANDIDATES:
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise LocalPostgresError(
        "PostgreSQL server binaries not found; run scripts/bootstrap.sh "
        "(it installs Debian's postgresql)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalPostgres:
    """One cluster in ``root``; ``start`` initialises it on first use."""

    root: Path
    port: int = field(default_factory=free_port)
    user: str = "postgres"
    tethered: bool = True  # False: pg_ctl's daemon, which outlives this process
    _child: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        if os.geteuid() == 0:
            args = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in args)]
        return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)

    def _ensure_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, user="postgres", group="postgres")

    def start(self) -> None:
        bin_dir = find_pg_bin()
        self._ensure_root()
        if not (self.data_dir / "PG_VERSION").exists():
            done = self._run(
                [str(bin_dir / "initdb"), "-D", str(self.data_dir), "-A", "trust", "-U", self.user]
            )
            if done.returncode != 0:
                raise LocalPostgresError(f"initdb failed: {done.stderr.strip()}")
        options = [
            "-k", str(self.root), "-c", "listen_addresses=127.0.0.1", "-p", str(self.port),
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "max_connections=200",
        ]  # fmt: skip
        if self.tethered:
            self._start_child(bin_dir, options)
        else:
            self._start_daemon(bin_dir, options)
        self._wait_ready()

    def _start_child(self, bin_dir: Path, options: list[str]) -> None:
        """The postmaster as this process's child; it gets SIGINT (a fast shutdown: clients
        cut off, a checkpoint, exit) when this process ends."""
        as_postgres: dict[str, Any] = {}
        if os.geteuid() == 0:
            as_postgres = {"user": "postgres", "group": "postgres", "extra_groups": []}
        with self.log_file.open("ab") as log:
            self._child = start_tethered(
                [bin_dir / "postgres", "-D", self.data_dir, *options],
                death_signal=signal.SIGINT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                **as_postgres,
            )

    def _start_daemon(self, bin_dir: Path, options: list[str]) -> None:
        done = self._run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
                "-o",
                " ".join(options),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        if done.returncode != 0:
            raise LocalPostgresError(f"pg_ctl start failed: {done.stderr.strip()} {done.stdout}")

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        """Until the server accepts connections (``pg_isready``: not merely listening, which
        it does while still starting up)."""
        ready = [str(find_pg_bin() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._child is not None and self._child.poll() is not None:
                raise LocalPostgresError(f"PostgreSQL exited; see {self.log_file}")
            if subprocess.run([*ready, "-U", self.user], check=False, timeout=10).returncode == 0:
                return
            time.sleep(0.1)
        raise LocalPostgresError(f"PostgreSQL did not accept connections on port {self.port}")

    def stop(self) -> None:
        """A fast shutdown: of the child this object started, or (another object's, the
        demo's daemon) of whatever server runs in the cluster folder."""
        child, self._child = self._child, None
        if child is not None:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return
        bin_dir = find_pg_bin()
        if (self.data_dir / "postmaster.pid").exists():
            self._run(
                [str(bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]
            )


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\"'\"'") + "'"


@contextmanager
def throwaway_postgres(prefix: str) -> Iterator[LocalPostgres]:
    """A cluster in a fresh temporary folder (readable by PostgreSQL's own user when run as
    root), started; stopped and removed with its folder when the block ends."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    server = LocalPostgres(root=root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
