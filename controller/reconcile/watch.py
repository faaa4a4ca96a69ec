"""Event-driven drift detection: one gNMI ON_CHANGE subscription per switch on the CONFIG_DB
tables sluice owns, so a change made behind sluice's back is reconciled within moments
instead of at the next periodic pass.

- ``ChangeFilter`` (pure) decides which notified changes can be drift. The switch sends an
  entry whenever any of its fields changes, and the on-switch agent rewrites the thresholds
  of ``SLUICE_Q_*`` WRED profiles at run time (``controller/sonic/schema.py``
  ``agent_owned``); for entries with such fields it keeps a digest of the other fields and
  reports the entry only when that digest moves. Every other update or delete is reported.
- ``SwitchWatch`` is the watch's part of one switch's supervised stream (``controller.
  southbound.subscribe.SupervisedStream``, which the collector's streams use too): STREAM of
  ON_CHANGE table paths (sonic-gnmi serves these from Redis keyspace notifications,
  sonic_data_client/mixed_db_client.go), re-opened with backoff and jitter when it ends or
  fails. sonic-gnmi fails a whole Subscribe that names a table it does not hold ("Failed to
  find CONFIG_DB TC_TO_QUEUE_MAP"), and a fresh switch holds few of the owned tables, so
  each Subscribe names only the tables a Get of the CONFIG_DB root found; while some are
  absent, the root is read again every ``WatchPolicy.appear_probe_s`` (and at once when the
  worker wrote to the switch, ``DriftWatcher.recheck``), and the tables that appeared are
  subscribed and reported. A switch that refuses ON_CHANGE (UNIMPLEMENTED or
  INVALID_ARGUMENT on the request) is marked ``unsupported`` and asked again only after
  ``WatchPolicy.unsupported_retry_s``. After a re-subscription the switch is reported with
  table None: what changed while the stream was down is unknown.
- ``Debouncer`` coalesces a burst (one Set writes many keys) into one report per switch and
  table, ``debounce_s`` after the first change.
- ``DriftWatcher`` holds the streams of many switches on one event loop (channels shared per
  endpoint, as the collector does); ``WatcherThread`` runs it beside a synchronous worker.
- ``WatchedReconcile`` is how the worker uses it: switches the watcher reported are
  reconciled at once (``ReconcileLoop.reconcile_now``), switches it does not cover (no
  ON_CHANGE, stream down) every policy interval, and every switch in a full pass every
  ``audit_s``, the safety net for whatever a stream could miss.

The clock, random source and transport are passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import grpc  # type: ignore[import-untyped]

from controller.intent.models import Dialect, Reconcile
from controller.openconfig.entries import ORIGIN as OC_ORIGIN
from controller.openconfig.entries import TABLES as OC_TABLES
from controller.openconfig.entries import WATCH_PATHS, changed_tables
from controller.reconcile.access import OWNED_TABLES
from controller.reconcile.apply import agent_fields
from controller.reconcile.loop import SwitchRun, next_delay_s
from controller.sonic.model import EntryKey
from controller.southbound.faults import Fault, Reason, absent_table
from controller.southbound.gnmi import GnmiTarget
from controller.southbound.paths import DATABASE, PathError, parse_elems, table_elems
from controller.southbound.retry import RetryPolicy
from controller.southbound.subscribe import (
    Change,
    EndpointChannels,
    Notification,
    StreamEnd,
    SubMode,
    Subscription,
    SupervisedStream,
    being_cancelled,
    database_tables,
    keyed_decoder,
    never,
    reference_decoder,
)

log = logging.getLogger("controller.reconcile.watch")

# on_drift(switch, table): table None means "anything may have changed" (a re-subscription).
DriftCallback = Callable[[str, str | None], None]
Volatile = Callable[[EntryKey], frozenset[str]]
# What a switch answers when its gNMI server does not stream changes for a path.
UNSUPPORTED_CODES = frozenset({grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT})


class WatchState(Enum):
    CONNECTING = "connecting"
    WATCHING = "watching"  # synced: a change on the switch reaches the callback
    DOWN = "down"  # the stream failed; retried with backoff
    UNSUPPORTED = "unsupported"  # the switch refused ON_CHANGE


@dataclass(frozen=True)
class WatchPolicy:
    """``appear_probe_s``: how often a switch that lacks some of ``tables`` is read for them
    (one Get of its CONFIG_DB root); ``read_deadline_s`` bounds that Get."""

    tables: tuple[str, ...] = OWNED_TABLES
    debounce_s: float = 0.05
    unsupported_retry_s: float = 600.0
    appear_probe_s: float = 30.0
    read_deadline_s: float = 10.0
    retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(base_delay_s=0.2, max_delay_s=10.0)
    )


def watch_subscriptions(tables: Iterable[str]) -> list[Subscription]:
    """``/CONFIG_DB/localhost/<TABLE>`` ON_CHANGE for each table."""
    return [Subscription(table_elems(table), SubMode.ON_CHANGE) for table in tables]


# --------------------------------------------------------------------------------------------
# pure: which changes can be drift


def _digest(fields: Mapping[str, Any], ignored: frozenset[str]) -> int:
    return hash(frozenset((str(k), str(v)) for k, v in fields.items() if k not in ignored))


class ChangeFilter:
    """The tables a switch's notifications may have drifted, given what it sent before.

    Only entries with agent-moved fields are remembered (as one digest each), so the memory
    per switch is one int per per-queue WRED profile, not a copy of its configuration."""

    def __init__(self, volatile: Volatile = agent_fields) -> None:
        self._volatile = volatile
        self._digests: dict[EntryKey, int] = {}

    def changed_tables(self, changes: Iterable[Change], *, initial: bool) -> set[str]:
        """Tables with a change that is not only the agent's; ``initial``: the values sent
        before the sync response, remembered and never reported."""
        tables: set[str] = set()
        for change in changes:
            try:
                where = parse_elems(change.elems)
            except PathError:
                continue  # not a CONFIG_DB path: nothing this watcher subscribed to
            if where.key is None:
                entries = change.value if isinstance(change.value, dict) else None
                if entries is None:  # the whole table went away
                    self._forget_table(where.table)
                    tables.add(where.table)
                    continue
                for key, fields in entries.items():
                    if self._entry(where.table, str(key), fields) and not initial:
                        tables.add(where.table)
            elif where.field is not None or self._entry(where.table, where.key, change.value):
                tables.update([] if initial else [where.table])
        return tables

    def _entry(self, table: str, key: str, fields: Any) -> bool:
        """Remember an entry's digest; True when it may be drift."""
        if not isinstance(fields, dict):  # deleted (None) or malformed: report it
            self._digests.pop((table, key), None)
            return True
        ignored = self._volatile((table, key))
        if not ignored:
            return True
        digest = _digest(fields, ignored)
        before = self._digests.get((table, key))
        self._digests[(table, key)] = digest
        return before != digest

    def _forget_table(self, table: str) -> None:
        for entry in [e for e in self._digests if e[0] == table]:
            del self._digests[entry]

    def __len__(self) -> int:
        return len(self._digests)


class Debouncer:
    """Reports each (switch, table) once per burst, ``delay_s`` after the burst's first
    change, on the event loop it is used from."""

    def __init__(self, delay_s: float, report: DriftCallback) -> None:
        self._delay_s = delay_s
        self._report = report
        self._pending: dict[str, set[str | None]] = {}

    def add(self, switch: str, tables: Iterable[str | None]) -> None:
        batch = set(tables)
        if not batch:
            return
        if switch not in self._pending:
            self._pending[switch] = set()
            asyncio.get_running_loop().call_later(self._delay_s, self._flush, switch)
        self._pending[switch] |= batch

    def _flush(self, switch: str) -> None:
        tables = self._pending.pop(switch, set())
        for table in sorted(tables, key=lambda t: t or ""):
            try:
                self._report(switch, table)
            except Exception:  # the receiver's bug must not stop the other switches' reports
                log.exception("drift watch: on_drift(%s, %s) failed", switch, table)


# --------------------------------------------------------------------------------------------
# one switch


class SwitchWatch:
    """The drift watch's part of one switch's supervised stream (``controller.southbound.
    subscribe.SupervisedStream``): the owned tables the switch holds ON_CHANGE, what may be
    drift to the debouncer, the absent ones read for until they appear, a switch that
    refuses ON_CHANGE asked again only after ``unsupported_retry_s``; its ``state`` says
    whether the switch is covered."""

    kind = "drift_watch"

    def __init__(
        self,
        name: str,
        debouncer: Debouncer,
        policy: WatchPolicy,
        *,
        on_state: Callable[[str, WatchState], None] = lambda _n, _s: None,
        volatile: Volatile = agent_fields,
    ) -> None:
        self.name = name
        self._debouncer = debouncer
        self._policy = policy
        self._on_state = on_state
        self._filter = ChangeFilter(volatile)
        self.state = WatchState.CONNECTING
        self.syncs = 0
        self.absent: frozenset[str] = frozenset()  # owned tables the switch lacked, last read
        self.watched: tuple[str, ...] = ()  # the tables the current Subscribe names
        self._appeared: frozenset[str] = frozenset()
        self._recheck = asyncio.Event()

    def _set(self, state: WatchState) -> None:
        self.state = state
        self._on_state(self.name, state)

    def recheck(self) -> None:
        """Read the switch for its absent tables now (call on the watcher's loop): the
        worker just wrote to it, so some may exist."""
        self._recheck.set()

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        present = await database_tables(channel, target, DATABASE, self._policy.read_deadline_s)
        wanted = frozenset(self._policy.tables)
        self.absent = wanted - present
        self.watched = tuple(sorted(wanted & present))
        return watch_subscriptions(self.watched)

    def synced(self) -> Fault | None:
        self.syncs += 1
        self._set(WatchState.WATCHING)
        if self._appeared:  # what was written to them before this sync was not seen
            self._debouncer.add(self.name, self._appeared)
            self._appeared = frozenset()
        elif self.syncs > 1:  # re-subscribed: changes while down were not seen
            self._debouncer.add(self.name, [None])
        return None

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        """Returns once an absent table appeared: read for them every ``appear_probe_s``, or
        at once on ``recheck``."""
        while True:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the result when the
            # recheck is already set as a cancel lands, and the cancel is lost.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._policy.appear_probe_s):
                    await self._recheck.wait()
            self._recheck.clear()
            if not self.absent:
                continue
            try:
                present = await database_tables(
                    channel, target, DATABASE, self._policy.read_deadline_s
                )
            except grpc.RpcError:
                if being_cancelled():  # grpc.aio can answer the cancel with CANCELLED
                    raise asyncio.CancelledError from None
                continue  # the stream itself notices a switch that went away
            appeared = self.absent & present
            if appeared:
                self._appeared = appeared
                return

    def notification(self, note: Notification, *, synced: bool) -> bool:
        tables = self._filter.changed_tables(note.changes, initial=not synced)
        self._debouncer.add(self.name, tables)
        return False

    def ended(self, end: StreamEnd) -> float | None:
        if end.fault is not None and end.fault.reason is Reason.ABSENT:
            # Emptied between the root read and the Subscribe: read again, at once.
            gone = absent_table(end.fault.cause)
            if gone is not None and gone[0] == DATABASE:
                return 0.0
        if end.code in UNSUPPORTED_CODES:
            log.warning(
                "drift watch: %s refuses ON_CHANGE (%s); the periodic pass covers it",
                self.name,
                end.error,
            )
            self._set(WatchState.UNSUPPORTED)
            return self._policy.unsupported_retry_s
        self._set(WatchState.DOWN)
        return None


class OpenConfigWatch(SwitchWatch):
    """The drift watch's part of an OpenConfig switch's stream: the configuration containers
    of what sluice writes (``controller.openconfig.entries.WATCH_PATHS``), ON_CHANGE on
    origin ``openconfig``; after the sync, a change to a sluice entry or to a port's entry
    is reported with its table (``changed_tables``). The containers are subscribed with
    their keys wildcarded, so an entry that appears is covered without a new Subscribe."""

    async def subscriptions(self, channel: Any, target: GnmiTarget) -> Sequence[Subscription]:
        self.absent = frozenset()
        self.watched = tuple(table.table for table in OC_TABLES)
        return [
            Subscription(("qos", *path), SubMode.ON_CHANGE, origin=OC_ORIGIN)
            for path in WATCH_PATHS
        ]

    async def changed(self, channel: Any, target: GnmiTarget) -> None:
        await never()

    def notification(self, note: Notification, *, synced: bool) -> bool:
        if synced:  # the initial values are what the switch held: not drift
            self._debouncer.add(self.name, changed_tables(note.changes))
        return False


# --------------------------------------------------------------------------------------------
# many switches


@dataclass
class _Running:
    target: GnmiTarget
    watch: SwitchWatch
    task: asyncio.Task[None]


class DriftWatcher:
    """The watched switches and their streams; use from its event loop."""

    def __init__(
        self,
        on_drift: DriftCallback,
        policy: WatchPolicy | None = None,
        *,
        rand: Callable[[], float],
        volatile: Volatile = agent_fields,
    ) -> None:
        self._policy = policy or WatchPolicy()
        self._debouncer = Debouncer(self._policy.debounce_s, on_drift)
        self._rand = rand
        self._volatile = volatile
        self._running: dict[str, _Running] = {}
        self._channels = EndpointChannels()
        self._lock = threading.Lock()
        self._states: dict[str, WatchState] = {}

    def sync(self, targets: Mapping[str, GnmiTarget]) -> None:
        """Watch exactly ``targets`` (a changed endpoint or credential is re-subscribed)."""
        for name in list(self._running):
            if targets.get(name) != self._running[name].target:
                self._running.pop(name).task.cancel()
                with self._lock:
                    self._states.pop(name, None)
        with self._lock:
            for name in [n for n in self._states if n not in targets and n not in self._running]:
                del self._states[name]
        for name, target in sorted(targets.items()):
            if name in self._running:
                continue
            openconfig = target.dialect is Dialect.OPENCONFIG
            watch = (OpenConfigWatch if openconfig else SwitchWatch)(
                name,
                self._debouncer,
                self._policy,
                on_state=self._state_changed,
                volatile=self._volatile,
            )
            stream = SupervisedStream(
                target,
                self._channels.for_target(target),
                watch,
                self._policy.retry,
                rand=self._rand,
                decoder=keyed_decoder if openconfig else reference_decoder,
            )
            with self._lock:
                self._states[name] = WatchState.CONNECTING
            task = asyncio.get_running_loop().create_task(stream.run(), name=f"watch-{name}")
            self._running[name] = _Running(target, watch, task)

    def _state_changed(self, name: str, state: WatchState) -> None:
        with self._lock:
            if name in self._states:
                self._states[name] = state

    def states(self) -> dict[str, WatchState]:
        """Each watched switch's state (safe from any thread)."""
        with self._lock:
            return dict(self._states)

    def resubscriptions(self) -> int:
        """Streams synced again after their first sync, over every switch."""
        return sum(max(0, r.watch.syncs - 1) for r in self._running.values())

    def watch_of(self, name: str) -> SwitchWatch | None:
        running = self._running.get(name)
        return running.watch if running is not None else None

    def recheck(self, names: Iterable[str]) -> None:
        """The worker wrote to these switches: tables they lacked may exist now."""
        for name in names:
            running = self._running.get(name)
            if running is not None:
                running.watch.recheck()

    async def close(self) -> None:
        for running in self._running.values():
            running.task.cancel()
        await asyncio.gather(*(r.task for r in self._running.values()), return_exceptions=True)
        self._running.clear()
        with self._lock:
            self._states.clear()
        await self._channels.close()


class WatcherThread:
    """A ``DriftWatcher`` on an event loop of its own thread, for a synchronous process."""

    def __init__(
        self,
        on_drift: DriftCallback,
        policy: WatchPolicy | None = None,
        *,
        rand: Callable[[], float],
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="drift-watch")
        self._thread.daemon = True
        self._thread.start()
        self.watcher = self._call(lambda: DriftWatcher(on_drift, policy, rand=rand))

    def _call(self, work: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return work()

        future: Future[Any] = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return future.result(timeout=60)

    def sync(self, targets: Mapping[str, GnmiTarget]) -> None:
        self._call(lambda: self.watcher.sync(targets))

    def states(self) -> dict[str, WatchState]:
        result: dict[str, WatchState] = self.watcher.states()
        return result

    def recheck(self, names: Iterable[str]) -> None:
        wanted = list(names)
        if wanted:
            self._loop.call_soon_threadsafe(self.watcher.recheck, wanted)

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.watcher.close(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(60)
        self._loop.close()


# --------------------------------------------------------------------------------------------
# the worker's side


class DriftInbox:
    """Switches reported drifted, collected across threads until the worker takes them;
    ``wake`` is set at each report so an idle worker need not wait out its poll."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._switches: set[str] = set()
        self.wake = threading.Event()

    def on_drift(self, switch: str, table: str | None) -> None:
        with self._lock:
            self._switches.add(switch)
        self.wake.set()

    def take(self) -> set[str]:
        with self._lock:
            taken, self._switches = self._switches, set()
        return taken


class Reconciler(Protocol):
    """What ``WatchedReconcile`` needs of ``ReconcileLoop``."""

    def run_pass(self) -> list[SwitchRun]: ...

    def reconcile_now(self, *switch_names: str) -> list[SwitchRun]: ...


class Watcher(Protocol):
    def sync(self, targets: Mapping[str, GnmiTarget]) -> None: ...

    def states(self) -> dict[str, WatchState]: ...

    def recheck(self, names: Iterable[str]) -> None: ...


def uncovered(states: Mapping[str, WatchState]) -> list[str]:
    """Switches whose changes the watcher would not see now."""
    return sorted(name for name, state in states.items() if state is not WatchState.WATCHING)


@dataclass(frozen=True)
class AuditPolicy:
    audit_s: float = 3600.0  # the full pass's period while the watcher covers the switches
    refresh_s: float = 30.0  # how often the watched switches are re-read from the intent


# A watch state after which a switch's changes are reported (or it is on the fallback pass).
SETTLED = frozenset({WatchState.WATCHING, WatchState.UNSUPPORTED})


class WatchedReconcile:
    """The worker's reconcile turn with a watcher: ``tick`` instead of ``ReconcileLoop.tick``."""

    def __init__(
        self,
        loop: Reconciler,
        watcher: Watcher,
        inbox: DriftInbox,
        *,
        targets: Callable[[], Mapping[str, GnmiTarget]],
        policy: Callable[[], Reconcile],
        rand: Callable[[], float],
        audit: AuditPolicy | None = None,
        moved: Callable[[], bool] = lambda: False,
    ) -> None:
        self._moved = moved  # engine mode: the live workers changed, so the share did
        self._loop = loop
        self._watcher = watcher
        self._inbox = inbox
        self._targets = targets
        self._policy = policy
        self._rand = rand
        self._audit = audit or AuditPolicy()
        # Switches this watcher gained after its first sync (a worker died, the intent grew):
        # what changed on them before their stream synced is unknown, so each is reconciled
        # once its stream is synced (or refused). The first sync has the audit pass instead.
        self._gained: set[str] = set()
        self._watching: set[str] = set()
        self.audit_at: float | None = None  # monotonic; None: the first tick runs a full pass
        self.fallback_at: float | None = None
        self.refresh_at: float | None = None

    def tick(self, now_s: float) -> list[SwitchRun]:
        """Re-read the watched switches if due; reconcile what drifted; a full pass if the
        audit is due, else the uncovered switches if their interval is due. A switch the
        pass wrote to may hold tables it lacked: its watch reads for them at once."""
        runs = self._tick(now_s)
        self._watcher.recheck(r.switch for r in runs if r.status == "corrected")
        return runs

    def _tick(self, now_s: float) -> list[SwitchRun]:
        if self.refresh_at is None or now_s >= self.refresh_at or self._moved():
            targets = self._targets()
            if self.refresh_at is not None:
                self._gained |= targets.keys() - self._watching
            self._watching = set(targets)
            self._gained &= self._watching
            self._watcher.sync(targets)
            self.refresh_at = now_s + self._audit.refresh_s
        runs: list[SwitchRun] = []
        drifted = self._inbox.take() | self._take_synced()
        if self.audit_at is None or now_s >= self.audit_at:
            runs += self._loop.run_pass()  # covers the drifted ones too
            policy = self._policy()
            # The audit's wait is jittered as the passes are (``fabric.reconcile.jitter_pct``).
            audit = policy.model_copy(update={"interval_s": self._audit.audit_s})
            self.audit_at = now_s + next_delay_s(audit, self._rand())
            self.fallback_at = now_s + next_delay_s(policy, self._rand())
            return runs
        if drifted:
            runs += self._loop.reconcile_now(*sorted(drifted))
        if self.fallback_at is not None and now_s >= self.fallback_at:
            left_out = [n for n in uncovered(self._watcher.states()) if n not in drifted]
            if left_out:
                runs += self._loop.reconcile_now(*left_out)
            self.fallback_at = now_s + next_delay_s(self._policy(), self._rand())
        return runs

    def _take_synced(self) -> set[str]:
        """The gained switches whose stream has synced (or was refused), no longer pending."""
        if not self._gained:
            return set()
        states = self._watcher.states()
        done = {n for n in self._gained if states.get(n) in SETTLED}
        self._gained -= done
        return done
