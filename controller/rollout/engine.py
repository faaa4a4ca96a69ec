"""Engine mode: a rollout's switches shared by any number of workers through procrastinate.

procrastinate (https://procrastinate.readthedocs.io) is a job queue kept in PostgreSQL, the
database sluice already has. Each switch of a batch becomes one job whose ``lock`` is the
switch's name: procrastinate never starts a job while another job with the same lock is
``doing``, so no switch is worked by two workers at once, whichever machine they are on. Its
``queueing_lock`` (one per rollout and switch) keeps a switch from being queued twice.

The rollout's own rows stay the record of what is done: a job converges its switch only while
the row is ``pending`` (``RolloutRunner.converge_one``), and the coordinating step (one
worker at a time, under the switch-work lock) queues every pending switch that has no live
job. A worker that dies stops sending heartbeats; any other worker finds its ``doing`` jobs
after ``stalled_after_s`` and marks them failed, which frees their locks, and the next step
queues those switches again. docs/scaling.md says why this engine and how to run N workers.

Reconcile passes go the same way (``ReconcileDispatch``): a due pass queues one
``RECONCILE_TASK`` job per target on the same queue with the same lock (the switch's name),
so a pass is spread over every worker and never runs on a switch while a rollout job does.
Its ``queueing_lock`` (``reconcile:<switch>``) keeps a switch queued once however many
workers' passes fall due; a pass is queued only when no worker queued one within the policy's
shortest spacing, read from procrastinate's ``deferred`` events. A dead worker's reconcile
jobs are put back to ``todo`` by the reaper (a reconcile is safe to repeat), so another
worker reconciles those switches within the same pass.

Telemetry collectors that share the switches through the engine (``SLUICE_TELEMETRY_SHARD=
engine``) are engine worker records too, each named a collector's in ``telemetry_collectors``
(``CollectorMembership``): they heartbeat and are read back live as the workers are, and the
workers' drift watch leaves them out of its members.

Finished jobs are pruned by procrastinate's own cleanup (``builtin_tasks.remove_old_jobs``)
run as a periodic task: procrastinate's periodic deferrer records each tick in
``procrastinate_periodic_defers``, so however many workers run, one job per tick is queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from procrastinate import App, JobContext, PsycopgConnector, SyncPsycopgConnector, builtin_tasks
from procrastinate.exceptions import AlreadyEnqueued, UniqueViolation
from procrastinate.jobs import Status
from procrastinate.manager import JobManager
from procrastinate.sql import queries as engine_queries
from procrastinate.worker import Worker as ProcrastinateWorker

from controller.settings import libpq_conninfo

log = logging.getLogger("controller.rollout.engine")

TASK = "sluice.rollout.converge_switch"
RECONCILE_TASK = "sluice.reconcile.switch"
QUEUE = "switches"
PRUNE_TASK = "sluice.engine.prune_finished_jobs"
MAINTENANCE_QUEUE = "maintenance"
# Every ten minutes (cron; procrastinate takes an optional sixth field for seconds).
PRUNE_CRON = "*/10 * * * *"
LIVE = ("todo", "doing")
LIVE_LOCKS = (
    "SELECT DISTINCT lock FROM procrastinate_jobs WHERE queue_name = %(queue)s"
    " AND task_name = %(task)s AND status::text = ANY(%(statuses)s)"
)

# Whether a reconcile job was queued within the last ``seconds``, by any worker: the
# ``deferred`` event procrastinate's trigger records for each job (its schema.sql).
RECENT_PASS = (
    "SELECT EXISTS (SELECT 1 FROM procrastinate_events e"
    " JOIN procrastinate_jobs j ON j.id = e.job_id"
    " WHERE j.task_name = %(task)s AND e.type = 'deferred'"
    " AND e.at > now() - make_interval(secs => %(seconds)s)) AS recent"
)

# Every worker's reconcile dispatch takes this transaction-scoped advisory lock (an arbitrary
# key sluice owns), so checking for a recent pass and queueing one is atomic across workers.
PASS_LOCK = "SELECT pg_advisory_xact_lock(7345001)"
# The stalled-job reaper's round lock: taken with ``pg_try_advisory_xact_lock``, so a reaper
# that finds it held skips the round rather than waiting.
REAP_LOCK = "SELECT pg_try_advisory_xact_lock(7345002)"
QUEUED_RECONCILES = (
    "SELECT queueing_lock FROM procrastinate_jobs"
    " WHERE task_name = %(task)s AND status = 'todo' AND queueing_lock IS NOT NULL"
)

# A telemetry collector's record (``telemetry_collectors``, ``CollectorMembership``) is a
# member of the collectors' shard, not of the workers' drift watch.
LIVE_WORKERS = (
    "SELECT id FROM procrastinate_workers"
    " WHERE last_heartbeat > now() - make_interval(secs => %(seconds)s)"
    " AND id NOT IN (SELECT worker_id FROM telemetry_collectors) ORDER BY id"
)

# A new engine worker record (procrastinate's own function, its schema.sql), named a collector's
# in the same statement so no other member ever reads it as a worker.
REGISTER_COLLECTOR = (
    "WITH w AS (SELECT worker_id FROM procrastinate_register_worker_v1())"
    " INSERT INTO telemetry_collectors (worker_id) SELECT worker_id FROM w RETURNING worker_id"
)
LIVE_COLLECTORS = (
    "SELECT w.id FROM procrastinate_workers w JOIN telemetry_collectors c ON c.worker_id = w.id"
    " WHERE w.last_heartbeat > now() - make_interval(secs => %(seconds)s) ORDER BY w.id"
)


def queueing_lock(rollout_id: int, switch: str) -> str:
    return f"rollout:{rollout_id}:{switch}"


class JobDispatch:
    """The coordinating step's side: queue a rollout's pending switches as jobs (synchronous,
    from the worker's tick thread). Open with ``open``; ``close`` when done."""

    def __init__(self, database_url: str) -> None:
        self._app = App(connector=SyncPsycopgConnector(conninfo=libpq_conninfo(database_url)))

    def open(self) -> None:
        self._app.open()

    def close(self) -> None:
        self._app.close()

    def _live_locks(self) -> set[str | None]:
        # One narrow query on procrastinate's job table (its documented schema), run every
        # coordinating round: ``list_jobs`` would build every job of the queue, twice.
        rows = self._app.connector.execute_query_all(
            LIVE_LOCKS, queue=QUEUE, task=TASK, statuses=list(LIVE)
        )
        return {row["lock"] for row in rows}

    def live(self) -> frozenset[str]:
        """The switches with a job queued or running (the runner reads this before the
        rollout's rows: see ``RolloutRunner.step``)."""
        return frozenset(lock for lock in self._live_locks() if lock is not None)

    def busy(self) -> bool:
        """Whether any switch job is queued or running: the coordinator's reconcile pass
        waits until none is, so it never plans a switch from a version a job is replacing."""
        return bool(self._live_locks())

    def __call__(self, rollout_id: int, switches: Sequence[str], live: frozenset[str]) -> int:
        queued = 0
        for switch in switches:
            if switch in live:
                continue
            deferrer = self._app.configure_task(
                TASK, lock=switch, queueing_lock=queueing_lock(rollout_id, switch), queue=QUEUE
            )
            try:
                deferrer.defer(rollout_id=rollout_id, switch=switch)
            except AlreadyEnqueued:  # another coordinator got there first: it is queued
                continue
            queued += 1
        if queued:
            log.info("rollout %d: queued %d switch job(s)", rollout_id, queued)
        return queued


def reconcile_lock(switch: str) -> str:
    return f"reconcile:{switch}"


class ReconcileDispatch:
    """A due reconcile pass's side (``ReconcileLoop``'s ``dispatch``): queue one job per
    switch, unless a pass was queued by any worker in the last ``spacing_s`` seconds.
    Synchronous, from the coordinating round; open with ``open``, ``close`` when done."""

    def __init__(self, database_url: str) -> None:
        self._connector = SyncPsycopgConnector(conninfo=libpq_conninfo(database_url))
        self._app = App(connector=self._connector)

    def open(self) -> None:
        self._app.open()

    def close(self) -> None:
        self._app.close()

    def live_workers(self, stalled_after_s: float) -> tuple[int, ...]:
        """The ids of the engine workers heard from within ``stalled_after_s`` (procrastinate's
        ``procrastinate_workers``, one row per running worker with its last heartbeat)."""
        rows = self._connector.execute_query_all(LIVE_WORKERS, seconds=stalled_after_s)
        return tuple(int(row["id"]) for row in rows)

    def __call__(self, switches: Sequence[str], spacing_s: float) -> int:
        """How many switch jobs were queued (0 when another worker's pass is recent; a
        ``spacing_s`` of 0 always queues: a reported drift).

        A pass is queued whole or not at all: one transaction, under an advisory lock every
        worker's dispatch takes, checks for a recent pass, reads which switches are still
        queued, and inserts the rest in one statement. Queued one job at a time, a worker
        killed part way left the rest of the fleet unqueued until the next pass (an
        interval away), since the others found a pass recent; and two workers that both
        found none due queued a switch twice once its first job had started."""
        with self._connector.pool.connection() as connection, connection.transaction():
            connection.execute(PASS_LOCK)
            if spacing_s > 0 and self._recently_queued(connection, spacing_s):
                return 0
            queued = self._still_queued(connection)
            jobs = [
                self._app.configure_task(
                    RECONCILE_TASK, lock=switch, queueing_lock=reconcile_lock(switch), queue=QUEUE
                ).make_new_job(switch=switch)
                for switch in dict.fromkeys(switches)
                if reconcile_lock(switch) not in queued
            ]
            if jobs:
                self._app.job_manager.batch_defer_jobs(jobs, connection=connection)
        if jobs:
            log.info("reconcile: queued %d switch job(s)", len(jobs))
        return len(jobs)

    def _recently_queued(self, connection: psycopg.Connection[Any], spacing_s: float) -> bool:
        row = self._connector.execute_query_one_with_connection(
            connection, RECENT_PASS, task=RECONCILE_TASK, seconds=spacing_s
        )
        return bool(row["recent"])

    def _still_queued(self, connection: psycopg.Connection[Any]) -> set[str]:
        """The queueing locks of reconcile jobs not yet started: a switch still queued from an
        earlier pass runs once (its ``queueing_lock`` allows one ``todo`` job)."""
        rows = self._connector.execute_query_all_with_connection(
            connection, QUEUED_RECONCILES, task=RECONCILE_TASK
        )
        return {row["queueing_lock"] for row in rows}


class CollectorMembership:
    """A telemetry collector's record among the engine's workers (``SLUICE_TELEMETRY_SHARD=
    engine``): registered at its first ``beat``, heartbeat by the next ones, removed on
    ``close``; ``live`` reads the collectors heard from within ``stalled_after_s``, the members
    its shard is computed over (``controller.reconcile.shard.LiveShard``). Synchronous: call
    off the event loop."""

    def __init__(self, database_url: str, stalled_after_s: float) -> None:
        self._app = App(connector=SyncPsycopgConnector(conninfo=libpq_conninfo(database_url)))
        self._stalled_after_s = stalled_after_s
        self.member_id: int | None = None

    def open(self) -> None:
        self._app.open()

    def beat(self) -> None:
        """Register on the first beat (or again once this record was pruned as stalled, after
        a long pause), else refresh the heartbeat."""
        connector = self._app.connector
        if self.member_id is None or self.member_id not in self.live():
            row = connector.execute_query_one(REGISTER_COLLECTOR)
            self.member_id = int(row["worker_id"])
            log.info("telemetry collector: registered as engine member %d", self.member_id)
            return
        connector.execute_query(engine_queries["update_heartbeat"], worker_id=self.member_id)

    def live(self) -> tuple[int, ...]:
        rows = self._app.connector.execute_query_all(LIVE_COLLECTORS, seconds=self._stalled_after_s)
        return tuple(int(row["id"]) for row in rows)

    def close(self) -> None:
        if self.member_id is not None:
            with contextlib.suppress(Exception):  # a stalled record is pruned anyway
                self._app.connector.execute_query(
                    engine_queries["unregister_worker"], worker_id=self.member_id
                )
        self._app.close()


@dataclass(frozen=True, slots=True)
class EngineOptions:
    concurrency: int  # jobs at once in this process
    heartbeat_s: float
    stalled_after_s: float
    retention_h: int = 24  # finished jobs (succeeded or failed) older than this are pruned
    prune_cron: str = PRUNE_CRON


def utcnow() -> datetime:
    return datetime.now(UTC)


class EngineWorker:
    """The procrastinate worker of one process, on its own thread and event loop, running
    ``converge(rollout_id, switch)`` for each rollout job it takes, ``reconcile(switch)`` for
    each reconcile job, and reaping dead workers' jobs."""

    def __init__(
        self,
        database_url: str,
        converge: Callable[[int, str], bool],
        options: EngineOptions,
        reconcile: Callable[[str], object] = lambda _switch: None,
    ) -> None:
        self._conninfo = libpq_conninfo(database_url)
        self._converge = converge
        self._reconcile = reconcile
        self._options = options
        self._worker: ProcrastinateWorker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engine-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._started.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        loop, main = self._loop, self._main
        if loop is not None and main is not None:
            loop.call_soon_threadsafe(main.cancel)
        self._thread.join(timeout_s)

    def member_id(self) -> int | None:
        """This worker's id in ``procrastinate_workers`` (None before it registered or once
        it stopped): the name the drift-watch shard (``controller/reconcile/shard.py``) knows
        it by."""
        worker = self._worker
        return worker.worker_id if worker is not None else None

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        # Room beyond the jobs' connections for procrastinate's listener and heartbeat and
        # for the reaper, which holds one for its round's lock while it queries on another.
        connector = PsycopgConnector(
            conninfo=self._conninfo, min_size=2, max_size=self._options.concurrency + 4
        )
        app = App(connector=connector)

        def converge_switch(rollout_id: int, switch: str) -> None:
            self._converge(rollout_id, switch)

        def reconcile_switch(switch: str) -> None:
            self._reconcile(switch)

        app.task(name=TASK, queue=QUEUE)(converge_switch)
        app.task(name=RECONCILE_TASK, queue=QUEUE)(reconcile_switch)
        retention_h = self._options.retention_h

        async def prune_finished_jobs(context: JobContext, timestamp: int) -> None:
            # A job's rows are only the queue's bookkeeping: the rollout's own rows are the
            # record, so finished jobs of every queue go once they are ``retention_h`` old.
            await builtin_tasks.remove_old_jobs(
                context, max_hours=retention_h, remove_failed=True, remove_cancelled=True
            )

        prune = app.task(name=PRUNE_TASK, queue=MAINTENANCE_QUEUE, pass_context=True)
        app.periodic(cron=self._options.prune_cron, periodic_id="prune")(prune(prune_finished_jobs))
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        self._started.set()
        async with app.open_async():
            reaper = asyncio.create_task(self._reap(app, connector), name="reap-stalled")
            # The worker built here rather than by ``App.run_worker_async``, which takes the
            # same options, so that its registered id can be read (``member_id``).
            self._worker = ProcrastinateWorker(
                app=app,
                queues=[QUEUE, MAINTENANCE_QUEUE],
                concurrency=self._options.concurrency,
                install_signal_handlers=False,
                update_heartbeat_interval=self._options.heartbeat_s,
                stalled_worker_timeout=self._options.stalled_after_s,
            )
            try:
                await self._worker.run()  # type: ignore[no-untyped-call]
            except asyncio.CancelledError:
                pass
            finally:
                reaper.cancel()

    async def _reap(self, app: App, connector: PsycopgConnector) -> None:
        """Jobs ``doing`` on a worker silent for ``stalled_after_s``: that worker is dead (or
        cut off from the database). A rollout job is failed, freeing its switch lock: the
        coordinating step queues that switch again from the rollout's pending rows. A
        reconcile job goes back to ``todo`` (reconciling twice is harmless), so another
        worker takes it within the same pass.

        One reaper at a time: a round runs only while its transaction holds an advisory lock
        (``REAP_LOCK``), and others skip that round. Two reapers that read the same stalled
        job raced: the one whose retry lost then failed the job the other had just queued
        again (procrastinate fails a ``todo`` job too), so its switch was never reconciled
        in that pass; or it put a job back that a live worker had meanwhile taken."""
        while True:
            await asyncio.sleep(self._options.heartbeat_s)
            try:
                async with connector.pool.connection() as connection, connection.transaction():
                    cursor = await connection.execute(REAP_LOCK)
                    row = await cursor.fetchone()
                    if row is not None and row[0]:
                        await self._reap_round(app.job_manager)
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away, or a job changed under us: next round
                log.warning("engine: reaping stalled jobs failed; retrying", exc_info=True)

    async def _reap_round(self, manager: JobManager) -> None:
        stalled = await manager.get_stalled_jobs(
            queue=QUEUE, seconds_since_heartbeat=self._options.stalled_after_s
        )
        for job in stalled:
            if job.id is None:
                continue
            if job.task_name == RECONCILE_TASK and await _requeued(manager, job.id):
                log.warning(
                    "engine: reconcile job %d (%s) of a dead worker: queued again",
                    job.id,
                    job.lock,
                )
                continue
            log.warning("engine: job %d (%s) of a dead worker: failed", job.id, job.lock)
            await manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=False)


async def _requeued(manager: JobManager, job_id: int) -> bool:
    """Put a dead worker's reconcile job back to ``todo``; False when that is refused (a
    later pass already queued the switch, whose ``queueing_lock`` allows one ``todo`` job):
    the caller then fails it, as the queued one does the work."""
    try:
        await manager.retry_job_by_id_async(job_id, retry_at=utcnow())
    except UniqueViolation:  # the switch's queueing lock: a later pass queued it
        log.info("engine: reconcile job %d not queued again", job_id, exc_info=True)
        return False
    return True
