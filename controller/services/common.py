"""Small values every service shares: who is acting, the clock, a page of results, and how
long the API waits for the worker to answer what it recorded."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Generic, TypeVar

from controller.errors import WorkerTimeout

T = TypeVar("T")


def utc_now() -> datetime:
    """The production clock; tests and services receive a clock as a parameter instead."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who makes a change and in which request (the audit log groups a request's changes)."""

    name: str
    request_id: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: Sequence[T]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class WorkerWait:
    """How the API waits for the worker to finish something it recorded (a host plan, a
    reconcile pass): poll every ``poll_s`` for at most ``timeout_s``."""

    timeout_s: float = 600.0
    poll_s: float = 0.2
    monotonic: Callable[[], float] = field(default=time.monotonic)
    sleep: Callable[[float], None] = field(default=time.sleep)

    def until(self, done: Callable[[], bool], what: str) -> None:
        deadline = self.monotonic() + self.timeout_s
        while not done():
            if self.monotonic() >= deadline:
                raise WorkerTimeout(
                    f"{what} is recorded, but no worker finished it within {self.timeout_s:g} s "
                    "(is python -m controller.worker running?); it runs when one does"
                )
            self.sleep(self.poll_s)
