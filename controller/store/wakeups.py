"""An idle worker woken when work is recorded, instead of finding it at its next poll.

Migration ``0019_wakeups`` gives the tables that hold the worker's work (rollouts, host runs,
reconcile requests, discoveries, releases, twin runs, tuning passes) a statement trigger on
insert that sends ``NOTIFY sluice_worker`` (PostgreSQL delivers it when the writing
transaction commits, and only then). ``WakeListener`` holds one connection that LISTENs on
the channel and wakes the worker at each notification, so a request made through the API or
the CLI is taken up at once; the worker's poll paces what is due by time (a soak ending, a
reconcile interval) and changes to recorded work (a rollout paused). The poll stays the
fallback: a lost connection, or a notification sent while the listener was reconnecting,
delays work by at most one poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

log = logging.getLogger("controller.store.wakeups")

WAKE_CHANNEL = "sluice_worker"
# How often the listener looks at its stop flag while no notification comes.
LISTEN_SLICE_S = 0.1
# The wait before reconnecting after the connection failed; the poll covers the gap.
RECONNECT_S = 5.0


Connect = Callable[[], psycopg.Connection[tuple[object, ...]]]


# Called with the table whose write notified, or "" when listening begins.
Wake = Callable[[str], None]


class WakeListener:
    """A thread that calls ``wake`` on every ``NOTIFY sluice_worker`` until ``stop``."""

    def __init__(self, connect: Connect, wake: Wake, *, reconnect_s: float = RECONNECT_S) -> None:
        self._connect = connect
        self._wake = wake
        self._reconnect_s = reconnect_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_conninfo(cls, conninfo: str, wake: Wake) -> WakeListener:
        """Listening over psycopg's connection string (``controller.settings.libpq_conninfo``)."""
        return cls(lambda: psycopg.connect(conninfo, autocommit=True, connect_timeout=3), wake)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="worker-wakeups", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(LISTEN_SLICE_S * 4)
            self._thread = None

    def _run(self) -> None:
        failed = False
        while not self._stop.is_set():
            try:
                with self._connect() as connection:
                    connection.execute(f"LISTEN {WAKE_CHANNEL}")
                    if failed:
                        log.info("worker wake-ups: listening again")
                        failed = False
                    # Whatever was recorded while not listening is found by the next round.
                    self._wake("")
                    self._listen(connection)
            except psycopg.Error as error:
                if not failed:  # once per outage; the worker's own backoff logs the database
                    log.warning("worker wake-ups: not listening (%s); polling only", error)
                    failed = True
                self._stop.wait(self._reconnect_s)

    def _listen(self, connection: psycopg.Connection[tuple[object, ...]]) -> None:
        while not self._stop.is_set():
            for notification in connection.notifies(timeout=LISTEN_SLICE_S):
                self._wake(notification.payload)
