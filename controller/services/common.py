"""Small values every service shares: who is acting, the clock, a page of results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

T = TypeVar("T")

Clock = Callable[[], datetime]


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
