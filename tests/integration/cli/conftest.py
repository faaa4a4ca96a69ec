"""A real sluice API for the CLI tests: uvicorn in a thread on 127.0.0.1, a fresh migrated
PostgreSQL database per test (``db_url`` from tests/conftest.py), one token per role."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from pydantic import SecretStr

from api.main import create_app
from controller.settings import Settings
from tests.integration.cli.support import Cli, issue_tokens


@pytest.fixture
def cli(db_url: str) -> Iterator[Cli]:
    tokens = issue_tokens(db_url)
    api = create_app(Settings(database_url=SecretStr(db_url)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(api, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:  # readiness, not a timing assumption: stop if the thread died
        if not thread.is_alive():
            raise RuntimeError("the API server exited during start-up")
        time.sleep(0.02)
    try:
        yield Cli(base_url=f"http://127.0.0.1:{port}", db_url=db_url, tokens=tokens)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
