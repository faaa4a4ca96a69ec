"""Start and stop a throwaway redis-server on 127.0.0.1 (one per virtual switch)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from vsonic.changes import KEYSPACE_EVENTS
from vsonic.tether import start_tethered


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class RedisProcess:
    """One redis-server. By default a child tethered to this process (``vsonic.tether``: it
    stops when this process ends, however it ends); ``daemon`` forks it off to outlive this
    process instead, as ``vsonic up`` wants."""

    port: int
    directory: Path
    host: str = "127.0.0.1"
    daemon: bool = False
    # The tethered child, reaped by ``stop`` (a list: the dataclass is frozen).
    _child: list[subprocess.Popen[Any]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    @property
    def pidfile(self) -> Path:
        return self.directory / f"redis-{self.port}.pid"

    def start(self) -> None:
        """Start redis-server without persistence and wait until it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install -y redis-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(self.port), "--bind", self.host, "--save", "",
                "--appendonly", "no", "--dir", str(self.directory),
                # ON_CHANGE subscriptions follow writes through keyspace events (vsonic.changes).
                "--notify-keyspace-events", KEYSPACE_EVENTS,
                "--pidfile", str(self.pidfile),
                "--logfile", str(self.directory / f"redis-{self.port}.log")]  # fmt: skip
        if self.daemon:
            subprocess.run([*args, "--daemonize", "yes"], check=True, capture_output=True)
        else:
            quiet = subprocess.DEVNULL
            child = start_tethered(
                [*args, "--daemonize", "no"], stdin=quiet, stdout=quiet, stderr=quiet
            )
            self._child.append(child)
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=1)
        try:
            # redis-server answers once it listens; a few short retries cover startup.
            for _ in range(100):
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    client.connection_pool.disconnect()
                    if any(c.poll() is not None for c in self._child):
                        break
                    time.sleep(0.05)
            raise RuntimeError(f"redis-server on {self.host}:{self.port} did not answer")
        finally:
            client.close()

    def pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def stop(self) -> None:
        """Ask the server to shut down; fall back to SIGTERM of the recorded pid."""
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=1)
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            # SHUTDOWN closes the connection it arrived on: that is the success path too.
            pass
        except redis.RedisError:
            pid = self.pid()
            if pid is not None:
                _terminate(pid)
        finally:
            client.close()
            self._reap()

    def _reap(self) -> None:
        """Wait for the tethered child to exit (it was asked to), killing it if it hangs."""
        while self._child:
            child = self._child.pop()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
