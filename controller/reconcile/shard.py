"""The fleet's division into shards: a collector's static shard (``--shard I/N``,
``StaticShard``) and engine mode's live shards, each live member's part of the switches, for
the workers' drift watch (``SLUICE_WORKER_ENGINE=procrastinate``, docs/scaling.md "Several
workers") and the telemetry collectors (``SLUICE_TELEMETRY_SHARD=engine``).

Each worker watches only its shard of the head intent's switches: a switch belongs to the live
worker with the highest hash of (worker, switch), rendezvous or highest-random-weight hashing
(Thaler and Ravishankar, "Using name-based mappings to increase hit rates", IEEE/ACM
Transactions on Networking 6(1), 1998, section 3). Every worker computes the same owner from
the same member list with no coordination; when a worker dies only its switches move (each to
the survivor that ranks next), and a worker that joins takes about 1/N of each other's.

The members are procrastinate's own worker records (``procrastinate_workers``: an id per
running worker and its last heartbeat), read by the caller; a worker whose heartbeat is older
than ``stalled_after_s`` is not a member. ``LiveShard`` re-reads them at most every
``recheck_s`` and says when they moved, which makes the watcher re-read its switches at once.

What a worker's watcher reports is queued as a reconcile job (``QueuedReconciler``), which any
worker may take under the switch's job lock, as a pass's jobs are.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from controller.reconcile.loop import PassDispatch, ReconcileLoop, SwitchRun

log = logging.getLogger("controller.reconcile.shard")


@dataclass(frozen=True)
class StaticShard:
    """Shard ``index`` of ``count`` (0-based): the switches whose SHA-256 name hash is
    ``index`` modulo ``count``, the same in every process and run, with no coordination."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> StaticShard:
        """``I/N`` with 0 <= I < N, e.g. ``0/1`` (everything) or ``2/4``."""
        index, sep, count = text.partition("/")
        if not sep or not index.isdigit() or not count.isdigit():
            raise ValueError(f"--shard {text!r}: expected I/N, e.g. 0/4")
        shard = cls(int(index), int(count))
        if shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"--shard {text!r}: need 0 <= I < N")
        return shard

    @property
    def name(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, switch: str) -> bool:
        """Stable across processes and restarts (not Python's salted ``hash``)."""
        digest = hashlib.sha256(switch.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index


def weight(member: int, switch: str) -> int:
    """The rank of ``member`` for ``switch``: a stable 64-bit hash of the pair (the same on
    every machine and run, unlike Python's ``hash``)."""
    digest = hashlib.blake2b(f"{member}\x00{switch}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(switch: str, members: Collection[int]) -> int | None:
    """The member that works ``switch`` (None when there is none)."""
    if not members:
        return None
    return max(members, key=lambda member: (weight(member, switch), member))


def shard_of(me: int, switches: Iterable[str], members: Collection[int]) -> list[str]:
    """The switches ``me`` works among ``members`` (``me`` counted even when not listed yet:
    it has just started and not been read back)."""
    everyone = {*members, me}
    return [switch for switch in switches if owner(switch, everyone) == me]


class MemberKind(NamedTuple):
    """Who shards the switches, as the shard's log line names them: the drift watch of the
    reconcile workers, or the telemetry collectors (which shard the same way)."""

    room: str  # the line's prefix
    member: str  # one member, and with an "s" the live ones
    verb: str  # what a member does with its switches


DRIFT_WATCH = MemberKind("drift watch", "worker", "watches")
TELEMETRY_COLLECTORS = MemberKind("telemetry collector", "collector", "streams")


class LiveShard:
    """This member's shard of the switches. ``member`` gives its own worker id (None until
    its engine worker has registered: then it takes nothing); ``live`` reads the live
    members' ids; ``monotonic`` is the clock the re-reads are spaced by; ``kind`` names the
    members in the log."""

    def __init__(
        self,
        live: Callable[[], Sequence[int]],
        monotonic: Callable[[], float],
        *,
        recheck_s: float,
        kind: MemberKind = DRIFT_WATCH,
    ) -> None:
        self.kind = kind
        self.member: Callable[[], int | None] = lambda: None
        self._live = live
        self._monotonic = monotonic
        self._recheck_s = recheck_s
        self._members: frozenset[int] = frozenset()
        self._me: int | None = None
        self._read_at: float | None = None

    def moved(self) -> bool:
        """Re-read the members if ``recheck_s`` has passed; whether they (or this worker's
        own id) changed since the last read."""
        now_s = self._monotonic()
        if self._read_at is not None and now_s < self._read_at + self._recheck_s:
            return False
        self._read_at = now_s
        members, me = frozenset(self._live()), self.member()
        if (members, me) == (self._members, self._me):
            return False
        self._members, self._me = members, me
        return True

    def of(self, switches: Mapping[str, object]) -> list[str]:
        """The names among ``switches`` this member takes now."""
        if self._read_at is None:
            self.moved()
        if self._me is None:
            return []
        mine = shard_of(self._me, sorted(switches), self._members)
        log.info(
            "%s: this %s (%d) %s %d of %d switches (%d live %ss)",
            self.kind.room,
            self.kind.member,
            self._me,
            self.kind.verb,
            len(mine),
            len(switches),
            len(self._members | {self._me}),
            self.kind.member,
        )
        return mine


class QueuedReconciler:
    """The ``Reconciler`` a watcher drives in engine mode: a full pass is the loop's (queued
    as jobs by its dispatch), and the switches reported drifted or left uncovered are queued
    as reconcile jobs at once (no spacing: a reported drift is not a periodic pass). The runs
    are recorded by the jobs, so none are returned here."""

    def __init__(self, loop: ReconcileLoop, dispatch: PassDispatch) -> None:
        self._loop = loop
        self._dispatch = dispatch

    def run_pass(self) -> list[SwitchRun]:
        return self._loop.run_pass()

    def reconcile_now(self, *switch_names: str) -> list[SwitchRun]:
        if switch_names:
            self._dispatch(switch_names, 0.0)
        return []
