"""The controller worker: ``python -m controller.worker``.

It is the only process that touches switches and hosts; it does what the API only records:
switch rollouts (``RolloutRunner``), host runs (``HostRunRunner``: Ansible plans and applies),
operators' reconcile-now requests, discoveries and releases of switches
(``controller/services/discoveries.py``, ``releases.py``), and the reconciliation loop
(``ReconcileLoop``), one after the other on one thread, under the cross-process work lock
(``controller/store/locks.py``). Twin runs and the tuner's searching passes
(``fabric.tuning.search: twin``; queued by the API or by the tuner's own due pass) touch no
switch and take minutes: they run after the locked steps, outside the lock, one of each a
round (``TwinRunRunner``, ``AutoTuner.search_once``).
In engine mode (``SLUICE_WORKER_ENGINE=procrastinate``) a rollout batch and a reconcile pass
are queued as one job per switch instead, which any worker's engine thread takes
(``controller/rollout/engine.py``).
Steps go on back to back while there are any; when none is runnable the loop gets its turn
and the worker waits ``SLUICE_WORKER_POLL_S``. Everything it needs to resume lives in
PostgreSQL, so a worker may be stopped at any time and another started: a host run goes on
with the hosts whose results are not recorded yet.

Settings from the environment (``controller/settings.py``: the ``database``, ``worker`` and
``gnmi`` sections): ``DATABASE_URL``, the poll interval, the gNMI user name and deadline.
gNMI passwords come from each switch's ``credential_ref`` (``env:NAME`` reads this process's
environment). SIGINT or SIGTERM stops it after the step in progress.

With ``SLUICE_WORKER_WATCH_DRIFT`` (on by default) a watcher keeps one ON_CHANGE stream per
switch of the head intent on the tables sluice owns (``controller/reconcile/watch.py``): a
switch that drifts is reconciled within a round, a switch that refuses ON_CHANGE keeps the
intent's reconcile interval, and the full pass becomes an audit every
``SLUICE_WORKER_AUDIT_S``. In engine mode (``SLUICE_WORKER_ENGINE=procrastinate``) each
worker watches only its shard of the switches (``controller/reconcile/shard.py``: rendezvous
hashing over the live workers, recomputed when one joins or dies), and what it reports is
queued as a reconcile job for any worker to take.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from sqlalchemy.orm import Session, sessionmaker

from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import PromQL, make_promql
from controller.reconcile.access import GnmiAccess
from controller.reconcile.loop import ReconcileLoop
from controller.reconcile.shard import LiveShard, QueuedReconciler
from controller.reconcile.watch import (
    AuditPolicy,
    DriftInbox,
    Reconciler,
    WatchedReconcile,
    WatcherThread,
)
from controller.rollout.ansible import AnsibleBatches
from controller.rollout.engine import EngineOptions, EngineWorker, JobDispatch, ReconcileDispatch
from controller.rollout.gates import Reader
from controller.rollout.hosts import HostRunRunner
from controller.rollout.switches import RolloutRunner
from controller.services.auto_rollout import AutoTuner
from controller.services.common import WorkerWait, utc_now
from controller.services.discoveries import DiscoveryService
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.services.reconcile import ReconcileService, SqlReconcileStore
from controller.services.releases import ReleaseService
from controller.services.rollouts import RolloutService
from controller.services.tuning import (
    ReadSummary,
    TuningService,
    fan_out,
    netsim_search,
    search_seeds,
)
from controller.services.twin_runs import TwinRunRunner, run_twin_with
from controller.settings import Settings, TwinSettings, libpq_conninfo
from controller.southbound.credentials import SecretResolver
from controller.southbound.gnmi import GnmiTarget, SessionPool, targets_for
from controller.store.db import make_engine, make_sessions
from controller.store.host_run_store import SqlHostRunStore
from controller.store.locks import switch_work_lock
from controller.store.outage import Backoff, is_database_outage, outage_summary
from controller.store.rollout_store import SqlRolloutStore
from controller.store.wakeups import WakeListener
from controller.telemetry.tuning_summary import read_summary
from controller.tuning.counterfactual import Simulate
from controller.types import Clock

log = logging.getLogger("controller.worker")


class Worker:
    """One worker's parts; ``tick`` does one round, ``run`` ticks until ``stop`` is set."""

    def __init__(
        self,
        runner: RolloutRunner,
        loop: ReconcileLoop,
        lock: Callable[[], AbstractContextManager[None]],
        *,
        host_runner: HostRunRunner,
        answer_requests: Callable[[ReconcileLoop], int],
        switch_requests: Callable[[], int] = lambda: 0,
        twin_runs: Callable[[], int] = lambda: 0,
        searches: Callable[[], int] = lambda: 0,
        monotonic: Callable[[], float] = time.monotonic,
        tune: Callable[[], int] | None = None,
        switch_jobs_busy: Callable[[], bool] = lambda: False,
        watched: WatchedReconcile | None = None,
        wake: threading.Event | None = None,
        wakeups: WakeListener | None = None,
    ) -> None:
        self._watched = watched  # drift watching: its tick replaces the loop's
        self.live_shard: LiveShard | None = None  # engine mode: this worker's shard to watch
        # Set when a switch drifted or work was recorded (``wakeups``, listening while
        # ``run`` runs): an idle worker stops waiting.
        self._wake = wake if wake is not None else threading.Event()
        self._wakeups = wakeups
        self._switch_jobs_busy = switch_jobs_busy
        self._tune = tune
        self._runner = runner
        self.converge_one = runner.converge_one  # engine mode's rollout job body
        self.reconcile_one = loop.reconcile_now  # engine mode's reconcile job body
        self._host_runner = host_runner
        self._answer_requests = answer_requests
        self._switch_requests = switch_requests  # discoveries and releases
        self._twin_runs = twin_runs
        self._searches = searches
        self._loop = loop
        self._lock = lock
        self._monotonic = monotonic

    def tick(self) -> int:
        """Rollout and host-run steps and reconcile-now passes if any are due (how many),
        else a reconcile pass if due (0); then one twin run if one is pending, and one
        searching tuning pass if one is queued."""
        with self._lock():
            steps = self._runner.run_once()
            steps += self._host_runner.run_once()
            steps += self._answer_requests(self._loop)
            steps += self._switch_requests()
            # In engine mode a batch's switches are still being worked by jobs when this round
            # has nothing to step; a reconcile pass then waits, as it does in single mode.
            if not steps and not self._switch_jobs_busy():
                if self._watched is not None:
                    self._watched.tick(self._monotonic())
                else:
                    self._loop.tick(self._monotonic())
                # The tuner (``fabric.tuning``): a pass when its window is due; in ``auto``
                # mode it starts a gated rollout, stepped from the next round on. A pass
                # with the twin search is only queued here.
                steps += self._tune() if self._tune is not None else 0
        # Twin runs and the tuner's search touch no switch: run outside the work lock, so a
        # long netsim run never holds up a rollout or a reconcile pass in another worker.
        return steps + self._twin_runs() + self._searches()

    def run(self, stop: threading.Event, poll_s: float, backoff: Backoff | None = None) -> None:
        """Rounds until ``stop``; a failed round waits with exponential backoff. The database
        being away logs one line when it goes and one when it is back, not one per retry."""
        backoff = backoff or Backoff(first_s=poll_s, cap_s=max(poll_s, BACKOFF_CAP_S))
        if self._wakeups is not None:
            self._wakeups.start()
        try:
            self._rounds(stop, poll_s, backoff)
        finally:
            if self._wakeups is not None:
                self._wakeups.stop()

    def _rounds(self, stop: threading.Event, poll_s: float, backoff: Backoff) -> None:
        while not stop.is_set():
            try:
                busy = self.tick() > 0
            except Exception as error:  # the database or a bug: say so, wait longer, try again
                delay_s, started = backoff.failed()
                _log_failure(error, started, delay_s)
                stop.wait(delay_s)
                continue
            if backoff.succeeded():
                log.warning("worker: database reachable again; resuming")
            if not busy:
                self._idle(stop, poll_s)

    def _idle(self, stop: threading.Event, poll_s: float) -> None:
        # In slices, so a stop is seen within STOP_SEEN_S however long the poll.
        deadline = time.monotonic() + poll_s  # a real wait, whatever clock the rounds read
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._wake.wait(min(left, STOP_SEEN_S)):
                break
        self._wake.clear()


# An idle worker looks at its stop flag at least this often, whatever its poll.
STOP_SEEN_S = 1.0
# The longest a worker waits between rounds while the database is away.
BACKOFF_CAP_S = 30.0


def _log_failure(error: Exception, started: bool, delay_s: float) -> None:
    if is_database_outage(error):
        if started:
            log.warning(
                "worker: database unreachable (%s); retrying with backoff up to %.0f s",
                outage_summary(error),
                BACKOFF_CAP_S,
            )
        return
    # A bug is worth its traceback each time, but no more often than the backoff allows.
    log.exception("worker: round failed; retrying in %.1f s", delay_s)


def build_worker(
    settings: Settings,
    pool: SessionPool,
    *,
    environ: Mapping[str, str],
    clock: Clock = utc_now,
    rand: Callable[[], float] | None = None,
    tuner_io: TunerIO | None = None,
) -> tuple[Worker, Callable[[], None]]:
    """The worker over ``settings``' database and ``pool``; also the function that closes
    what it opened (the database engine). ``tuner_io``: the tuner's telemetry reader and twin
    (default: Prometheus at ``settings.prometheus`` and netsim at ``settings.twin``)."""
    engine = make_engine(settings.database.required_url("worker"))
    sessions = make_sessions(engine)
    # One resolver for the process: the secret store's client and cache are shared.
    resolve = settings.vault.resolver(environ)
    access = GnmiAccess(
        pool,
        resolve,
        username=settings.gnmi.username,
        tls=settings.gnmi.tls(),
    )
    store = SqlRolloutStore(sessions, clock=clock)
    promql = make_promql(settings.prometheus.url, settings.prometheus.timeout_s)
    gates = promql_reader(promql)
    dispatch = _job_dispatch(settings)
    runner = RolloutRunner(
        store,
        access,
        clock,
        max_parallel=settings.worker.max_parallel,
        gates=gates,
        dispatch=dispatch,
    )
    host_store = SqlHostRunStore(sessions, clock=clock)
    host_runner = HostRunRunner(
        host_store, AnsibleBatches(settings.hosts, host_store.intent), clock=clock, gates=gates
    )
    reconciler = ReconcileService(sessions, clock=clock, rand=rand)
    discoveries = DiscoveryService(sessions, clock=clock)
    releases = ReleaseService(sessions, clock=clock)
    passes = _reconcile_dispatch(settings)
    loop = reconciler.loop(access, max_parallel=settings.worker.max_parallel, dispatch=passes)
    inbox = DriftInbox()
    watcher = (
        WatcherThread(inbox.on_drift, rand=rand or random.Random().random)
        if settings.worker.watch_drift
        else None
    )
    live_shard = (
        LiveShard(
            partial(passes.live_workers, settings.worker.stalled_after_s),
            time.monotonic,
            recheck_s=settings.worker.heartbeat_s,
        )
        if passes is not None and watcher is not None
        else None
    )
    watched_loop: Reconciler = loop if passes is None else QueuedReconciler(loop, passes)
    tuner = _auto_tuner(
        sessions, gates, clock, settings.twin, tuner_io or _tuner_io(promql, settings.twin)
    )
    worker = Worker(
        runner,
        loop,
        lambda: switch_work_lock(engine),
        host_runner=host_runner,
        answer_requests=reconciler.answer_requests,
        switch_requests=lambda: (
            discoveries.answer(access, max_parallel=settings.worker.max_parallel)
            + releases.run_pending(access)
        ),
        twin_runs=TwinRunRunner(
            sessions,
            run_twin_with(settings.twin.netsim, settings.twin.timeout_s),
            clock=clock,
            # Two netsim runs when comparing, each killed at its timeout; then a margin.
            stale_after=timedelta(seconds=2 * settings.twin.timeout_s + 60),
        ).run_once,
        tune=tuner.tick,
        searches=tuner.search_once,
        switch_jobs_busy=dispatch.busy if dispatch is not None else lambda: False,
        watched=_watched(
            settings, sessions, watched_loop, watcher, inbox, resolve, rand, clock, live_shard
        ),
        wake=inbox.wake,
        wakeups=WakeListener.for_conninfo(
            libpq_conninfo(settings.database.required_url("worker")),
            lambda _table: inbox.wake.set(),
        ),
    )

    def close() -> None:
        if watcher is not None:
            watcher.close()
        promql.close()
        if dispatch is not None:
            dispatch.close()
        if passes is not None:
            passes.close()
        engine.dispose()

    worker.live_shard = live_shard
    return worker, close


def _watched(
    settings: Settings,
    sessions: sessionmaker[Session],
    loop: Reconciler,
    watcher: WatcherThread | None,
    inbox: DriftInbox,
    resolve: SecretResolver,
    rand: Callable[[], float] | None,
    clock: Clock,
    live_shard: LiveShard | None,
) -> WatchedReconcile | None:
    """The loop driven by drift watching (None when ``SLUICE_WORKER_WATCH_DRIFT`` is off); in
    engine mode over this worker's ``live_shard`` of the switches, re-read when it moves."""
    if watcher is None:
        return None
    intents = IntentService(sessions, clock=clock)
    store = SqlReconcileStore(sessions)
    known: dict[int, dict[str, GnmiTarget]] = {}

    def targets() -> dict[str, GnmiTarget]:
        """The head intent's switches (parsed again only when the head moves)."""
        head = intents.head()
        if head == 0:
            return {}
        if head not in known:
            known.clear()
            known[head] = targets_for(
                intents.current().intent.switches,
                resolve,
                username=settings.gnmi.username,
                tls=settings.gnmi.tls(),
            )
        every = known[head]
        if live_shard is None:
            return every
        return {name: every[name] for name in live_shard.of(every)}

    return WatchedReconcile(
        loop,
        watcher,
        inbox,
        targets=targets,
        policy=store.policy,
        rand=rand or random.Random().random,
        audit=AuditPolicy(audit_s=settings.worker.audit_s),
        moved=live_shard.moved if live_shard is not None else lambda: False,
    )


def _job_dispatch(settings: Settings) -> JobDispatch | None:
    """Engine mode's queue of switch jobs (None in the default single-worker mode)."""
    if settings.worker.engine != "procrastinate":
        return None
    dispatch = JobDispatch(settings.database.required_url("worker"))
    dispatch.open()
    return dispatch


def _reconcile_dispatch(settings: Settings) -> ReconcileDispatch | None:
    """Engine mode's reconcile passes as switch jobs (None in single-worker mode)."""
    if settings.worker.engine != "procrastinate":
        return None
    passes = ReconcileDispatch(settings.database.required_url("worker"))
    passes.open()
    return passes


def _engine_worker(settings: Settings, worker: Worker) -> EngineWorker | None:
    if settings.worker.engine != "procrastinate":
        return None
    options = EngineOptions(
        concurrency=settings.worker.max_parallel,
        heartbeat_s=settings.worker.heartbeat_s,
        stalled_after_s=settings.worker.stalled_after_s,
        retention_h=settings.worker.job_retention_h,
    )
    return EngineWorker(
        settings.database.required_url("worker"),
        worker.converge_one,
        options,
        reconcile=worker.reconcile_one,
    )


@dataclass(frozen=True, slots=True)
class TunerIO:
    """What the tuner reads telemetry from and searches in."""

    read_summary: ReadSummary
    simulate: Simulate


def _tuner_io(promql: PromQL, twin: TwinSettings) -> TunerIO:
    return TunerIO(
        lambda at, window_s: read_summary(promql, at, window_s),
        netsim_search(twin.netsim, twin.timeout_s),
    )


def _auto_tuner(
    sessions: sessionmaker[Session],
    gates: Reader,
    clock: Clock,
    twin: TwinSettings,
    io: TunerIO,
) -> AutoTuner:
    intents = IntentService(sessions, clock=clock)
    tuning = TuningService(
        sessions,
        intents,
        io.read_summary,
        clock=clock,
        simulate=io.simulate,
        # A searching pass left running this long past its budget was left by a worker that
        # stopped: the twin run in progress is killed at its timeout; then a margin.
        search_margin_s=twin.timeout_s + 60.0,
        search_seeds=search_seeds(twin.search_seeds),
        run_many=fan_out(twin.parallel),
    )
    host_runs = HostRunService(sessions, clock=clock, wait=WorkerWait(timeout_s=0.0))
    return AutoTuner(tuning, RolloutService(sessions, clock=clock), host_runs, gates)


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = Settings()
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.info(
            "worker: %s received; stopping after the current step", signal.Signals(signum).name
        )
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, request_stop)
    with settings.gnmi.session_pool() as pool:
        try:
            worker, close = build_worker(
                settings, pool, environ=os.environ, rand=random.Random().random
            )
        except ValueError as error:
            log.error("worker: %s", error)
            return 2
        engine_worker = _engine_worker(settings, worker)
        if engine_worker is not None:
            engine_worker.start()
            if worker.live_shard is not None:
                worker.live_shard.member = engine_worker.member_id
        log.info(
            "worker: started (%s mode); polling every %.1f s",
            settings.worker.engine,
            settings.worker.poll_s,
        )
        try:
            worker.run(stop, settings.worker.poll_s)
        finally:
            if engine_worker is not None:
                engine_worker.stop()
            close()
    log.info("worker: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
