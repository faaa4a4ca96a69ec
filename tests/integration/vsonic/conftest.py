"""Fixtures for the virtual switch: a real redis-server on 127.0.0.1, stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vsonic.db import RedisStore
from vsonic.redis_process import RedisProcess, free_port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    server = RedisProcess(port=free_port(), directory=Path(tmp_path_factory.mktemp("redis")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_store(redis_server: RedisProcess) -> Iterator[RedisStore]:
    """A store over the session's Redis, emptied before each test."""
    store = RedisStore.connect(redis_server.host, redis_server.port)
    store.client(0).flushall()
    try:
        yield store
    finally:
        store.close()
