"""The staging every rollout shares, switches and hosts alike: the canary first, then batches
of ``batch_size`` in order, and a failure budget checked before each batch.

A rollout's targets are rows ``(name, batch, status)`` written when it starts (status
``pending``); a runner asks ``next_stage`` what to do, does it, records the statuses, and asks
again. Every decision is made from the recorded rows, so a runner that restarts after a crash
makes the same one. Pause and resume are states of the rollout (``PAUSABLE``, ``RESUMABLE``):
a runner only steps rollouts in ``running``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

# Statuses that count against the failure budget: a switch that failed, was unreachable,
# read back differently (``mismatch``) or whose unanswered Set never showed (``unknown``); a
# host whose play failed or that was unreachable.
FAILURE_STATUSES = frozenset({"failed", "unreachable", "mismatch", "unknown"})
PENDING = "pending"
PAUSABLE = ("pending", "running")
RESUMABLE = ("paused", "halted", "completed")


class Staged(Protocol):
    """One target of a rollout as recorded: its batch and its status so far."""

    @property
    def batch(self) -> int: ...

    @property
    def status(self) -> str: ...


T = TypeVar("T", bound=Staged)


def assign_batches(
    targets: Sequence[str], canary: Sequence[str], batch_size: int
) -> list[tuple[str, int]]:
    """``(target, batch)`` in run order: the canary targets form batch 0, the others follow
    in the given order in batches of ``batch_size`` (numbered on from 1, or from 0 when
    there is no canary)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    unknown = sorted(set(canary) - set(targets))
    if unknown:
        raise ValueError(f"canary switches not in the intent: {', '.join(unknown)}")
    first = 1 if canary else 0
    rest = [name for name in targets if name not in set(canary)]
    assigned = [(name, 0) for name in dict.fromkeys(canary)]
    assigned += [(name, first + i // batch_size) for i, name in enumerate(rest)]
    return assigned


def failure_count(results: Sequence[Staged]) -> int:
    return sum(1 for r in results if r.status in FAILURE_STATUSES)


def next_batch(results: Sequence[T]) -> list[T]:
    """The pending targets of the lowest batch that has any (empty when none is pending)."""
    pending = [r for r in results if r.status == PENDING]
    if not pending:
        return []
    lowest = min(r.batch for r in pending)
    return [r for r in pending if r.batch == lowest]


@dataclass(frozen=True, slots=True)
class Halt:
    """More targets failed than the budget allows: stop, leave the rest pending."""

    failures: int


@dataclass(frozen=True, slots=True)
class Complete:
    """Nothing is pending: the rollout is done (``failures`` within the budget)."""

    failures: int


@dataclass(frozen=True, slots=True)
class RunBatch(Generic[T]):
    """Run these targets next, all of one batch."""

    batch: list[T]


def next_stage(results: Sequence[T], failure_budget: int) -> Halt | Complete | RunBatch[T]:
    """What a running rollout does next: halt when failures exceed the budget, complete when
    nothing is pending, else run the lowest pending batch."""
    failures = failure_count(results)
    if failures > failure_budget:
        return Halt(failures)
    batch = next_batch(results)
    if not batch:
        return Complete(failures)
    return RunBatch(batch)
