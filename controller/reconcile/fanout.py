"""Doing one thing for many switches at once, at most ``max_parallel`` at a time: how the
fleet apply, the rollout runner's batches and the reconcile loop's passes fan out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def checked_parallel(max_parallel: int) -> int:
    """``max_parallel`` itself; a ``ValueError`` when it is below 1 (nothing would run)."""
    if max_parallel < 1:
        raise ValueError("max_parallel must be at least 1")
    return max_parallel


def map_parallel(
    work: Callable[[T], R], items: Sequence[T], *, max_parallel: int, name: str
) -> list[R]:
    """``work(item)`` for every item, answers in the items' order, on at most
    ``max_parallel`` threads named ``name`` (never more threads than items)."""
    if not items:
        return []
    workers = min(max_parallel, len(items))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name) as pool:
        return list(pool.map(work, items))
