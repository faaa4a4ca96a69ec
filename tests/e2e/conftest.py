"""Fixtures for end-to-end tests: a namespaced fabric with sshd per host.

These tests need root (network namespaces, sshd); they run as root here and in CI. Every
fixture tears down what it made: namespaces, sshd processes and the temporary keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from lab import netns


def _require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("e2e tests need root for network namespaces and sshd", pytrace=False)


@pytest.fixture
def small_fabric() -> Iterator[netns.Fabric]:
    """Three fresh hosts for one test."""
    _require_root()
    with netns.running(3) as fabric:
        yield fabric


@pytest.fixture(scope="module")
def fabric(request: pytest.FixtureRequest) -> Iterator[netns.Fabric]:
    """The test module's hosts (its ``HOSTS`` names), shared by the module's tests; a module
    that configures its fabric as it makes it defines its own ``fabric``."""
    _require_root()
    names = list(request.module.HOSTS)
    with netns.running(len(names), names=names) as made:
        yield made
