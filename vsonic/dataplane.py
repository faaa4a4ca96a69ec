"""The virtual switch's data plane: the Rust ``vswitch-dataplane`` process next to each
switch's Redis (``sim/dataplane``, docs/dataplane.md).

It reads the switch's CONFIG_DB QoS tables, runs them on a virtual ASIC with synthetic
traffic, and publishes COUNTERS_DB like SONiC's flex counters. This module finds (or builds)
the binary and starts one process per switch; ``vsonic.supervisor`` records the pids and
stops them on ``vsonic down``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

BINARY_ENV = "SLUICE_DATAPLANE_BIN"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BINARY = ROOT / "target" / "release" / "vswitch-dataplane"
BUILD_COMMAND = ("cargo", "build", "--release", "--quiet", "-p", "vswitch-dataplane")


class DataplaneUnavailable(RuntimeError):
    """The data plane binary is missing and cannot be built here."""


@dataclass(frozen=True)
class DataplaneOptions:
    """What every switch's data plane is started with (flags of ``vswitch-dataplane``)."""

    traffic: Path | None = None
    flex_interval_ms: int = 1000
    fast_interval_ms: int = 0
    seed: int = 1


def find_binary(env: Mapping[str, str] = os.environ, build: bool = True) -> Path:
    """``$SLUICE_DATAPLANE_BIN``, else the workspace's release build, built with cargo first
    if it is missing and ``build`` allows it."""
    override = env.get(BINARY_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise DataplaneUnavailable(f"{BINARY_ENV}={path} is not a file")
        return path
    if DEFAULT_BINARY.is_file():
        return DEFAULT_BINARY
    if build and shutil.which("cargo") is not None and (ROOT / "Cargo.toml").is_file():
        subprocess.run(BUILD_COMMAND, cwd=ROOT, check=True)
        if DEFAULT_BINARY.is_file():
            return DEFAULT_BINARY
    raise DataplaneUnavailable(
        f"no data plane binary at {DEFAULT_BINARY} (build it with `{' '.join(BUILD_COMMAND)}`, "
        f"set {BINARY_ENV}, or start the switches with --no-dataplane)"
    )


def command(binary: Path, redis_port: int, options: DataplaneOptions, seed: int) -> list[str]:
    """The data plane's command line for the switch whose Redis listens on ``redis_port``."""
    args = [
        str(binary),
        "--redis-host", "127.0.0.1",
        "--redis-port", str(redis_port),
        "--seed", str(seed),
        "--flex-interval-ms", str(options.flex_interval_ms),
        "--fast-interval-ms", str(options.fast_interval_ms),
    ]  # fmt: skip
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
