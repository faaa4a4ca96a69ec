"""Start and stop a throwaway redis-server on 127.0.0.1 (one per virtual switch)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from vsonic.changes import KEYSPACE_EVENTS


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class RedisProcess:
    port: int
    directory: Path
    host: str = "127.0.0.1"

    @property
    def pidfile(self) -> Path:
        return self.directory / f"redis-{self.port}.pid"

    def start(self) -> None:
        """Daemonize redis-server without persistence and wait until it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install -y redis-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [binary, "--port", str(self.port), "--bind", self.host, "--save", "",
             "--appendonly", "no", "--daemonize", "yes", "--dir", str(self.directory),
             # ON_CHANGE subscriptions follow writes through keyspace events (vsonic.changes).
             "--notify-keyspace-events", KEYSPACE_EVENTS,
             "--pidfile", str(self.pidfile),
             "--logfile", str(self.directory / f"redis-{self.port}.log")],
            check=True,
            capture_output=True,
        )  # fmt: skip
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=1)
        try:
            # redis-server --daemonize returns once forked; a few short retries cover startup.
            for _ in range(100):
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    client.connection_pool.disconnect()
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


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
