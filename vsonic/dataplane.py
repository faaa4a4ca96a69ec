"""The processes next to each virtual switch's Redis: the data plane (the Rust
``vswitch-dataplane``, ``sim/dataplane``, docs/dataplane.md) and the on-switch agent (the Rust
``qos-agent``, ``agents/qos-agent``).

The data plane reads the switch's CONFIG_DB QoS tables, runs them on a virtual ASIC with
synthetic traffic, and publishes COUNTERS_DB like SONiC's flex counters; the agent reads its
orders and those counters and moves the WRED thresholds, as on a switch. This module finds
(or builds) the binaries and starts the processes; ``vsonic.supervisor`` records the pids and
stops them on ``vsonic down``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RustBinary:
    """A workspace binary: the variable that overrides its path, and how to build it."""

    name: str
    package: str
    env: str

    @property
    def default_path(self) -> Path:
        return ROOT / "target" / "debug" / self.name

    @property
    def build_command(self) -> tuple[str, ...]:
        # The dev profile is optimised (Cargo.toml): the same build `cargo test` makes.
        return ("cargo", "build", "--quiet", "-p", self.package, "--bin", self.name)


DATAPLANE = RustBinary("vswitch-dataplane", "vswitch-dataplane", "SLUICE_DATAPLANE_BIN")
AGENT = RustBinary("qos-agent", "qos-agent", "SLUICE_QOS_AGENT_BIN")
BINARY_ENV = DATAPLANE.env
BUILD_COMMAND = DATAPLANE.build_command


class DataplaneUnavailable(RuntimeError):
    """A binary is missing and cannot be built here."""


@dataclass(frozen=True)
class DataplaneOptions:
    """What every switch's data plane is started with (flags of ``vswitch-dataplane``)."""

    traffic: Path | None = None
    # 0: orchagent's default per counter group (queue 10 s, port 1 s, watermarks 60 s).
    flex_interval_ms: int = 0
    fast_interval_ms: int = 0
    seed: int = 1


def find_binary(
    env: Mapping[str, str] = os.environ, build: bool = True, binary: RustBinary = DATAPLANE
) -> Path:
    """``$<binary.env>``, else the workspace's (optimised) dev build, built with cargo first
    if it is missing and ``build`` allows it."""
    override = env.get(binary.env)
    if override:
        path = Path(override)
        if not path.is_file():
            raise DataplaneUnavailable(f"{binary.env}={path} is not a file")
        return path
    if binary.default_path.is_file():
        return binary.default_path
    if build and shutil.which("cargo") is not None and (ROOT / "Cargo.toml").is_file():
        subprocess.run(binary.build_command, cwd=ROOT, check=True)
        if binary.default_path.is_file():
            return binary.default_path
    flag = "--no-dataplane" if binary == DATAPLANE else "--no-agent"
    raise DataplaneUnavailable(
        f"no {binary.name} binary at {binary.default_path} (build it with "
        f"`{' '.join(binary.build_command)}`, set {binary.env}, or pass {flag})"
    )


def agent_command(binary: Path, redis_port: int) -> list[str]:
    """The agent's command line: it finds its orders in the switch's CONFIG_DB."""
    return [str(binary), "--redis-host", "127.0.0.1", "--redis-port", str(redis_port)]


def command(binary: Path, redis_port: int, options: DataplaneOptions, seed: int) -> list[str]:
    """The data plane's command line for the switch whose Redis listens on ``redis_port``."""
    args = [
        str(binary),
        "--redis-host", "127.0.0.1",
        "--redis-port", str(redis_port),
        "--seed", str(seed),
        "--fast-interval-ms", str(options.fast_interval_ms),
    ]  # fmt: skip
    if options.flex_interval_ms > 0:
        args += ["--flex-interval-ms", str(options.flex_interval_ms)]
    if options.traffic is not None:
        args += ["--traffic", str(options.traffic.resolve())]
    return args


def spawn(args: list[str], log: Path) -> int:
    """Starts the process in its own session (it outlives ``vsonic up``); returns its pid.
    Its JSON log lines go to ``log``."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return process.pid
