"""Shared fixtures: a real PostgreSQL cluster for the whole test session."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.store.localpg import LocalPostgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    """A throwaway PostgreSQL on 127.0.0.1, started once per session and stopped after.

    Not under pytest's tmp_path: that folder is private to root and the server runs as the
    ``postgres`` user.
    """
    root = Path(tempfile.mkdtemp(prefix="sluice-pg-"))
    root.chmod(0o755)
    server = LocalPostgres(root=root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
