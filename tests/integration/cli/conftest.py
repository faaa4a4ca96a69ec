"""A real sluice API for the CLI tests: uvicorn in a thread on 127.0.0.1, a fresh migrated
PostgreSQL database per test (``db_url`` from tests/conftest.py), one token per role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api.main import create_app
from controller.settings import Settings
from tests.integration.cli.support import Cli, issue_tokens
from tests.integration.served import served


@pytest.fixture
def cli(db_url: str) -> Iterator[Cli]:
    tokens = issue_tokens(db_url)
    api = create_app(Settings.for_database(db_url))
    with served(api) as url:
        yield Cli(base_url=url, db_url=db_url, tokens=tokens)
