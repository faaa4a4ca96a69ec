"""A real HTTP server for tests that need one (the CLI, a live API URL): uvicorn in a thread
on 127.0.0.1, on a port the kernel picks, stopped when the block ends."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


@contextmanager
def served(app: FastAPI, *, stop_wait_s: float = 60) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL. Waits up to ``stop_wait_s``
    for the server thread to finish in-flight requests when stopping."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:  # readiness, not a timing assumption: stop if it died
            if not thread.is_alive():
                raise RuntimeError("the API server exited during start-up")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=stop_wait_s)
        sock.close()
