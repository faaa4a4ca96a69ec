"""Child processes that die with the process that started them, however it ends.

A test run killed by a timeout (SIGKILL, or SIGTERM with no cleanup) runs no fixture
finalizer, so the redis-servers, PostgreSQL clusters, Prometheus servers and controller
processes its fixtures started would live on, parented to init, holding ports and memory.
A child started by ``start_tethered`` asks the kernel for a signal when its parent dies
(``prctl(PR_SET_PDEATHSIG)``, prctl(2)). util-linux's ``setpriv --pdeathsig`` sets it and
execs the program, so no Python runs between fork and exec (``preexec_fn`` is not safe in a
process with threads) and the setting survives the exec (kept across execve(2) unless the
program is set-user-ID). A credential change clears it, so a child that runs as another user
changes user first (``Popen``'s ``user``/``group``, before setpriv runs) and sets it after.

The parent the kernel watches is the thread that forked the child (prctl(2): "the thread that
created this process"), so every child is forked from one daemon thread that lives as long
as the process: a child started from a pool's worker thread does not die with that thread.

Left open: a parent killed in the instant between fork and setpriv's prctl leaves that child.
What a child forks off into a session of its own on purpose (``vsonic up``'s servers) is out
of a tether's reach; ``CleanupGuard`` runs the command that stops it instead.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

# util-linux is Essential in Debian: setpriv is on every machine this runs on.
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"

Start = Callable[[], "subprocess.Popen[Any]"]


class _Forker:
    """The one thread every tethered child is forked from (started on first use, and again
    in a child of ``os.fork``, which has none of its parent's threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._work: queue.SimpleQueue[tuple[Start, Future[subprocess.Popen[Any]]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._pid = 0

    def run(self, start: Start) -> subprocess.Popen[Any]:
        with self._lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._work = queue.SimpleQueue()
                self._thread = threading.Thread(
                    target=self._serve, args=(self._work,), name="tethered-forker", daemon=True
                )
                self._pid = os.getpid()
                self._thread.start()
            work = self._work
        done: Future[subprocess.Popen[Any]] = Future()
        work.put((start, done))
        return done.result()

    @staticmethod
    def _serve(work: queue.SimpleQueue[tuple[Start, Future[subprocess.Popen[Any]]]]) -> None:
        while True:
            start, done = work.get()
            try:
                done.set_result(start())
            except BaseException as error:  # handed to the caller, which raises it
                done.set_exception(error)


_FORKER = _Forker()


def tethered_command(
    args: Sequence[str | os.PathLike[str]], death_signal: signal.Signals
) -> list[str]:
    """``args`` behind ``setpriv --pdeathsig``: the program gets ``death_signal`` when the
    thread that forked it ends."""
    return [SETPRIV, f"--pdeathsig={death_signal.name}", "--", *(os.fspath(a) for a in args)]


def start_tethered(
    args: Sequence[str | os.PathLike[str]],
    *,
    death_signal: signal.Signals = signal.SIGTERM,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **popen)``, but the child gets ``death_signal`` when this
    process ends, even by SIGKILL. (Choose a signal the program stops cleanly on: SIGTERM for
    most, SIGINT for PostgreSQL's fast shutdown.)"""
    command = tethered_command(args, death_signal)
    return _FORKER.run(lambda: subprocess.Popen(command, **popen))


@contextmanager
def tethered(
    args: Sequence[str | os.PathLike[str]], *, stop_wait_s: float = 30, **popen: Any
) -> Iterator[subprocess.Popen[Any]]:
    """``start_tethered`` for the length of a block: the child is sent SIGTERM and waited for
    (``stop_wait_s``) when the block ends, however it ends."""
    process = start_tethered(args, **popen)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=stop_wait_s)


# Reads its stdin: a line means dismissed; end of file (every writer gone) runs "$@".
_GUARD_SCRIPT = 'if read -r _; then exit 0; fi; exec "$@"'


class CleanupGuard:
    """Runs ``command`` once this process has ended without calling ``dismiss`` (a killed
    test run), for servers a child forks off beyond a tether's reach (``vsonic up``'s, each
    in a session of its own, which outlive ``vsonic up`` on purpose). The guard is a ``sh``
    reading a pipe whose only writer is this process: the kernel closes it when this process
    ends, however it ends, and the guard's read then reaches end of file. The guard has a
    session of its own, so a signal to this process's group (Ctrl-C) does not take it too."""

    def __init__(self, command: Sequence[str | os.PathLike[str]], **popen: Any) -> None:
        quiet = subprocess.DEVNULL
        self._guard = subprocess.Popen(
            ["sh", "-c", _GUARD_SCRIPT, "cleanup-guard", *(os.fspath(a) for a in command)],
            stdin=subprocess.PIPE,
            stdout=quiet,
            stderr=quiet,
            start_new_session=True,
            **popen,
        )

    def dismiss(self) -> None:
        """The cleanup is done another way: the guard exits without running it."""
        stdin = self._guard.stdin
        if stdin is not None and not stdin.closed:
            stdin.write(b"dismissed\n")
            stdin.close()
        self._guard.wait()
