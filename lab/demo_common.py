"""What every demo step shares: how a step is announced, how a command is run (echoed first,
so the reader can type it themselves), and the error that ends the demo.

``lab.demo`` (the orchestrator), ``lab.demo_switches`` and
``lab.demo_agents`` all use these, so the demo reads the same from start to end.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from vsonic.tether import start_tethered

# Generous: ``vsonic up`` builds the Rust binaries on first use, and ``sluice rollout start
# --watch`` lasts as long as the rollout.
COMMAND_TIMEOUT_S = 600

Run = Callable[[Sequence[str], dict[str, str]], str]
Say = Callable[[str], None]


class DemoError(RuntimeError):
    """A demo step failed; the message says which and why."""


def say(step: str) -> None:
    print(f"\n==> {step}", flush=True)


def shown(args: Sequence[str]) -> str:
    """The command as a reader would type it: the program by its name, not its full path."""
    return " ".join(Path(args[0]).name if i == 0 else a for i, a in enumerate(args))


def run(
    args: Sequence[str],
    env: dict[str, str],
    *,
    capture: bool = False,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> str:
    """Run one command; echo it first. Its output goes to the terminal, or is returned when
    ``capture`` is set. A non-zero exit is a ``DemoError`` naming the command."""
    print(f"$ {shown(args)}", flush=True)
    done = subprocess.run(
        list(args),
        env=env,
        text=True,
        check=False,
        stdout=subprocess.PIPE if capture else None,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise DemoError(f"{shown(args)} exited with {done.returncode}")
    return done.stdout or ""


def start_process(args: Sequence[str], keep: bool, **popen: Any) -> subprocess.Popen[Any]:
    """A demo's server process: tethered to the demo (``vsonic.tether``: it stops when the
    demo ends, however it ends) unless ``keep`` leaves it running after the demo."""
    if keep:
        return subprocess.Popen(args, **popen)
    return start_tethered(args, **popen)


def stop_process(process: subprocess.Popen[Any], how: signal.Signals, timeout_s: float) -> None:
    """Ask ``process`` to stop with the signal ``how`` (so it can close its sockets and
    children); kill it, and reap it, when it has not exited within ``timeout_s``."""
    process.send_signal(how)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


BIN = Path(sys.executable).parent


@contextmanager
def controller_process(
    module: str, env: dict[str, str], log: Path, keep: bool, *args: str
) -> Iterator[None]:
    """``python -m MODULE ARGS`` (the worker, the collector) with ``env``, its output in
    ``log``; stopped with SIGTERM (after its step in progress) on exit unless ``keep``."""
    with log.open("w") as out:
        process = start_process(
            [str(BIN / "python"), "-m", module, *args],
            keep,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    print(f"{module.rsplit('.', 1)[-1]} pid {process.pid}, log {log}", flush=True)
    try:
        yield
    finally:
        if not keep:
            stop_process(process, signal.SIGTERM, timeout_s=60)


def controller_worker(env: dict[str, str], log: Path, keep: bool) -> AbstractContextManager[None]:
    """``python -m controller.worker``: the one process that touches switches and hosts."""
    return controller_process("controller.worker", env, log, keep)
