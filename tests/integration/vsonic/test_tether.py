"""Tethered children (``vsonic/tether.py``) die with the process that started them, even when
it is killed with SIGKILL and runs no cleanup, as a test run cut by a timeout is; and a child
started from a thread that has ended lives as long as that process does."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from vsonic.redis_process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# The parent: a redis-server (RedisProcess's default) and a plain sleep started from a pool's
# worker thread that then ends; it prints their pids and the redis port, then waits.
PARENT = """
import sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from vsonic.redis_process import RedisProcess
from vsonic.tether import start_tethered

server = RedisProcess(port=int(sys.argv[1]), directory=Path(sys.argv[2]))
with ThreadPoolExecutor(max_workers=1) as pool:
    server_started = pool.submit(server.start)
    sleeper = pool.submit(start_tethered, ["sleep", "600"]).result()
    server_started.result()
time.sleep(0.5)  # the pool's thread has ended; the children must not have
print(server.pid(), sleeper.pid, sleeper.poll(), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _until_gone(pids: list[int]) -> list[int]:
    """The pids still alive after a hang guard's wait (not a timing assertion)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if not _gone(p)]


def test_children_die_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    port = free_port()
    repo = Path(__file__).resolve().parents[3]
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(port), str(tmp_path / "redis")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=repo,
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().split()
        assert len(line) == 3, f"the parent failed to start its children: {line}"
        redis_pid, sleep_pid, sleep_exit = int(line[0]), int(line[1]), line[2]
        assert sleep_exit == "None"  # alive after the thread that forked it ended
        client = redis.Redis(port=port, socket_connect_timeout=1)
        assert client.ping()
        client.close()
        parent.kill()
        parent.wait()
        assert _until_gone([redis_pid, sleep_pid]) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# The parent: two guards, one dismissed; it prints once both are in place, then waits.
GUARDED = """
import sys, time
from vsonic.tether import CleanupGuard

kept = CleanupGuard(["touch", sys.argv[1]])
dismissed = CleanupGuard(["touch", sys.argv[2]])
dismissed.dismiss()
print("guarded", flush=True)
time.sleep(600)
"""


def test_a_guard_runs_its_cleanup_when_its_process_is_killed_unless_dismissed(
    tmp_path: Path,
) -> None:
    ran, not_ran = tmp_path / "ran", tmp_path / "not-ran"
    repo = Path(__file__).resolve().parents[3]
    parent = subprocess.Popen(
        [sys.executable, "-c", GUARDED, str(ran), str(not_ran)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=repo,
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "guarded"
        assert not ran.exists()  # nothing runs while the process lives
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30  # a hang guard, not a timing assertion
        while not ran.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ran.exists()
        assert not not_ran.exists()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
