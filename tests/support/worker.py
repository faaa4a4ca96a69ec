"""The real controller worker (``controller.worker.build_worker``) on a thread, for tests whose
API requests are done by the worker: host plans and applies, reconcile-now."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from controller.settings import Settings
from controller.worker import TunerIO, build_worker

POLL_S = 0.05


@contextmanager
def running_worker(
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    *,
    tuner_io: TunerIO | None = None,
    poll_s: float = POLL_S,
) -> Iterator[None]:
    """A worker over ``settings``' database, stopped (after its step in progress) on exit;
    ``environ``: where its ``env:`` credential references resolve (this process's by
    default); ``tuner_io``: the tuner's telemetry reader and twin (default: the settings');
    ``poll_s``: its wait when idle (recorded work wakes it sooner: controller/store/wakeups.py)."""
    with settings.gnmi.session_pool() as pool:
        worker, close = build_worker(
            settings, pool, environ=os.environ if environ is None else environ, tuner_io=tuner_io
        )
        stop = threading.Event()
        thread = threading.Thread(
            target=worker.run, args=(stop, poll_s), name="test-worker", daemon=True
        )
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(900)
            close()
