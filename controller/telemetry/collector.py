"""The collector process: ``python -m controller.telemetry.collector [--shard I/N]``.

It reads the switches from the current intent in PostgreSQL (or ``--intent FILE``), keeps
one supervised gNMI Subscribe stream per switch of its shard (``controller.southbound.
subscribe``), turns the updates into rates and agent state (``controller.telemetry.state``)
and serves them as Prometheus metrics on ``SLUICE_TELEMETRY_METRICS_HOST:PORT`` (127.0.0.1:
9464 by default). The switch list is re-read every ``SLUICE_TELEMETRY_REFRESH_S``; a switch
that leaves the intent is unsubscribed, a new one subscribed.

With ``SLUICE_TELEMETRY_SHARD=engine`` the collectors share the switches without ``--shard``:
each registers as a worker record of the engine (procrastinate's ``procrastinate_workers``,
named a collector's in ``telemetry_collectors``), heartbeats every ``SLUICE_WORKER_HEARTBEAT_S``
and streams its rendezvous share among the collectors heard from within
``SLUICE_WORKER_STALLED_AFTER_S`` (``controller.reconcile.shard``, the drift watch's sharing).
A collector that dies stops heartbeating, and the survivors take its switches at their next
heartbeat after it counts as stalled; one that joins takes about 1/N of each other's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from procrastinate import App, SyncPsycopgConnector
from procrastinate.sql import queries as engine_queries

from controller.intent.loader import load_intent_file
from controller.intent.models import Intent, Switch
from controller.reconcile.shard import TELEMETRY_COLLECTORS, LiveShard
from controller.settings import Settings, libpq_conninfo
from controller.sonic.compile import fleet_qos
from controller.southbound.credentials import environment_resolver
from controller.southbound.gnmi import GnmiTarget, target_for_switch
from controller.southbound.subscribe import (
    AGENT_STATE,
    COUNTERS,
    PORT_NAME_MAP,
    QUEUE_NAME_MAP,
    SYNC,
    CounterSession,
    Decoder,
    EndpointChannels,
    Handler,
    Notification,
    StreamPolicy,
    SubMode,
    SupervisedStream,
    reference_decoder,
)
from controller.telemetry.metrics import CONTENT_TYPE, TelemetryMetrics
from controller.telemetry.state import SwitchTelemetry

log = logging.getLogger("sluice.collector")
NS_PER_S = 1_000_000_000

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


@dataclass(frozen=True)
class Shard:
    index: int  # 0-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
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


def queue_classes(intent: Intent) -> dict[str, str]:
    """Queue index -> service class name (a PIAS stage counts as its class)."""
    return {str(q.queue): q.class_name.split("/")[0] for q in fleet_qos(intent).queues}


def telemetry_for(switch: Switch, classes: Mapping[str, str], window_ns: int) -> SwitchTelemetry:
    speeds = {p.name: p.speed_gbps * 1e9 for p in switch.ports}
    return SwitchTelemetry(switch.name, speeds, classes, window_ns)


class SwitchHandler(Handler):
    """Feeds one switch's notifications into its ``SwitchTelemetry`` under the lock the
    metrics endpoint reads with (it runs on another thread)."""

    def __init__(self, telemetry: SwitchTelemetry, lock: threading.Lock) -> None:
        self.telemetry = telemetry
        self._lock = lock
        self._queue_map: dict[str, str] = {}
        self._port_map: dict[str, str] = {}

    def name_maps(self, queues: Mapping[str, str], ports: Mapping[str, str]) -> list[str]:
        with self._lock:
            self._queue_map, self._port_map = dict(queues), dict(ports)
            self.telemetry.set_queue_map(queues)
            self.telemetry.set_port_map(ports)
            # A map value that is not a SAI oid cannot be subscribed to; it is left out.
            return [oid for oid in self.telemetry.counter_oids() if oid.startswith("oid:")]

    def stream_up(self, up: bool) -> None:
        with self._lock:
            self.telemetry.stream_up = up

    def decoder(self) -> Decoder:
        """A new stream's decoder (``SupervisedStream`` makes one per Subscribe call)."""
        return CounterIngest(self.telemetry, self._lock)

    def notification(self, note: Notification) -> bool:
        """One notification under one lock: a switch sends all its counters due at a tick in
        one, so the lock, the timestamp and the dispatch are paid per notification; each
        counter hash goes straight to its object, anything else through ``_change``."""
        remake = False
        ts_ns = note.timestamp_ns
        counters = self.telemetry.counters
        with self._lock:
            for elems, value in note.changes:
                if len(elems) == 4 and elems[2] == "COUNTERS" and elems[:3] == COUNTERS:
                    if isinstance(value, dict):
                        # Values stay as sent: the state parses each decimal or skips it.
                        counters(elems[3], value, ts_ns)
                    continue
                remake = self._change(elems, value, ts_ns) or remake
        return remake

    def _change(self, elems: tuple[str, ...], value: Any, ts_ns: int) -> bool:
        table, rest = elems[:3], elems[3:]
        if table in (QUEUE_NAME_MAP, PORT_NAME_MAP):
            return self._map_change(table, rest, value)
        if table == AGENT_STATE:
            if rest:
                self.telemetry.agent_state(rest[0], _fields(value), ts_ns)
            elif isinstance(value, dict):
                for key, fields in value.items():
                    self.telemetry.agent_state(str(key), _fields(fields), ts_ns)
            return False
        return False  # a counter hash by oid is taken in ``notification``; nothing else is read

    def _map_change(self, table: tuple[str, ...], rest: tuple[str, ...], value: Any) -> bool:
        """True when the map now differs from the one the stream was made from."""
        current = self._queue_map if table == QUEUE_NAME_MAP else self._port_map
        updated = dict(current)
        if rest:
            if value is None:
                updated.pop(rest[0], None)
            else:
                updated[rest[0]] = str(value)
        elif isinstance(value, dict):
            updated = {str(k): str(v) for k, v in value.items()}
        return updated != current


class CounterIngest:
    """One stream's decoder for the collector. Once the stream has synced, a response that
    is a batch of counter hashes (a SAMPLE tick: the bulk of what a switch sends) goes whole
    into the switch's compiled table as the bytes gRPC received, under the metrics lock, and
    nothing is handed on; anything else (the maps, the agent's state, deletes, and every
    response before the sync, whose paths the stream checks for empty subscriptions) goes
    through the reference decoder to ``SwitchHandler.notification``."""

    def __init__(self, telemetry: SwitchTelemetry, lock: threading.Lock) -> None:
        self._telemetry = telemetry
        self._lock = lock
        self._reference = reference_decoder()
        self._synced = False

    def __call__(self, raw: bytes) -> Notification | None:
        if self._synced:
            with self._lock:
                taken = self._telemetry.ingest(raw)
            if taken is not None:
                return None
        note = self._reference(raw)
        if note is SYNC:
            self._synced = True
        return note


def _fields(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}


@dataclass
class Running:
    target: GnmiTarget
    handler: SwitchHandler
    task: asyncio.Task[None]


class EngineMembership:
    """This collector's worker record in the engine: registered on ``open``, heartbeat by
    ``beat``, removed on ``close``; ``live`` reads the collectors heard from within
    ``stalled_after_s`` (synchronous: call off the event loop)."""

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
            log.info("collector: registered as engine member %d", self.member_id)
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


class Collector:
    """The switches of one shard and their streams. With ``share`` (engine mode) the shard is
    this collector's rendezvous share among the live collectors instead."""

    def __init__(
        self,
        shard: Shard,
        policy: StreamPolicy,
        *,
        window_ns: int,
        rand: Callable[[], float],
        wall_ns: Callable[[], int] = time.time_ns,
        share: LiveShard | None = None,
    ) -> None:
        self.shard = shard
        self.live_shard = share
        self._policy = policy
        self._window_ns = window_ns
        self._rand = rand
        self.lock = threading.Lock()
        self._running: dict[str, Running] = {}
        self._channels = EndpointChannels()
        self.metrics_label = "engine" if share is not None else shard.name
        self.metrics = TelemetryMetrics(self.metrics_label, self._switches, wall_ns, self.lock)

    def _switches(self) -> Iterable[SwitchTelemetry]:
        """The switches streamed now (the metrics read them holding ``lock``)."""
        return [r.handler.telemetry for r in list(self._running.values())]

    def updates(self) -> int:
        """Updates ingested so far, over every switch."""
        with self.lock:
            return sum(t.updates for t in self._switches())

    def telemetry(self, name: str) -> SwitchTelemetry | None:
        running = self._running.get(name)
        return running.handler.telemetry if running is not None else None

    def sync(self, intent: Intent, targets: Mapping[str, GnmiTarget]) -> None:
        """Stream exactly the intent's switches of this shard (call on the event loop)."""
        wanted = {s.name: s for s in intent.switches if self._holds(s.name)}
        if self.live_shard is not None:
            mine = set(self.live_shard.of(wanted))
            wanted = {name: switch for name, switch in wanted.items() if name in mine}
        for name in list(self._running):
            running = self._running[name]
            if name not in wanted or running.target != targets.get(name):
                running.task.cancel()
                del self._running[name]
        classes = queue_classes(intent)
        for name, switch in sorted(wanted.items()):
            existing = self._running.get(name)
            if existing is not None:  # same endpoint: keep the stream, take the new labels
                fresh = telemetry_for(switch, classes, self._window_ns)
                with self.lock:
                    existing.handler.telemetry.port_speeds_bps = fresh.port_speeds_bps
                    existing.handler.telemetry.queue_classes = fresh.queue_classes
                continue
            if name not in targets:
                continue
            target = targets[name]
            handler = SwitchHandler(telemetry_for(switch, classes, self._window_ns), self.lock)
            stream = SupervisedStream(
                target,
                self._channels.for_target(target),
                CounterSession(handler, self._policy),
                self._policy.retry,
                rand=self._rand,
                decoder=handler.decoder,
            )
            task = asyncio.get_running_loop().create_task(stream.run(), name=f"stream-{name}")
            self._running[name] = Running(target, handler, task)

    def _holds(self, switch: str) -> bool:
        return self.live_shard is not None or self.shard.holds(switch)

    async def close(self) -> None:
        for running in self._running.values():
            running.task.cancel()
        await asyncio.gather(*(r.task for r in self._running.values()), return_exceptions=True)
        self._running.clear()
        await self._channels.close()


def targets_of(
    intent: Intent, settings: Settings, environ: Mapping[str, str]
) -> dict[str, GnmiTarget]:
    """Targets for the intent's switches; a switch whose credential does not resolve is left
    out (and logged by name, never with the secret)."""
    resolve = environment_resolver(environ)
    out: dict[str, GnmiTarget] = {}
    for switch in intent.switches:
        try:
            out[switch.name] = target_for_switch(
                switch, resolve, username=settings.gnmi.username, tls=settings.gnmi.tls()
            )
        except Exception as error:  # an unresolvable reference is that switch's problem only
            log.warning("collector: no credential for %s: %s", switch.name, type(error).__name__)
    return out


def intent_loader(settings: Settings, intent_file: Path | None) -> Callable[[], Intent]:
    if intent_file is not None:
        return lambda: load_intent_file(intent_file)
    if settings.database.url is None:
        raise ValueError("DATABASE_URL is not set and no --intent file was given")
    from controller.services.intents import IntentService
    from controller.store.db import make_engine, make_sessions

    engine = make_engine(settings.database.url.get_secret_value(), pool_size=1)
    service = IntentService(make_sessions(engine), clock=_utc_now)
    return lambda: service.current().intent


def _utc_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def run(
    collector: Collector,
    load: Callable[[], Intent],
    settings: Settings,
    environ: Mapping[str, str],
    stop: asyncio.Event,
    membership: EngineMembership | None = None,
) -> None:
    """Stream the intent's switches until ``stop``. The intent is re-read every ``refresh_s``;
    in engine mode a round is a heartbeat, and the switches are re-shared at once when the
    live collectors moved."""
    refresh_s = settings.telemetry.refresh_s
    period_s = refresh_s if membership is None else min(refresh_s, settings.worker.heartbeat_s)
    rounds_per_refresh = max(1, round(refresh_s / period_s))
    intent: Intent | None = None
    round_no = 0
    try:
        while not stop.is_set():
            moved = False
            if membership is not None and collector.live_shard is not None:
                try:
                    moved = await asyncio.to_thread(
                        beat_and_reshard, membership, collector.live_shard
                    )
                except Exception as error:  # the engine is away: keep what we stream
                    log.warning("collector: engine heartbeat failed: %s", type(error).__name__)
            try:
                if intent is None or round_no % rounds_per_refresh == 0:
                    intent = await asyncio.to_thread(load)
                    moved = True
                if moved:
                    collector.sync(intent, targets_of(intent, settings, environ))
            except Exception as error:  # keep streaming what we have; try again next round
                log.warning("collector: could not read the intent: %s", error)
            round_no += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), period_s)
    finally:
        await collector.close()
        if membership is not None:
            await asyncio.to_thread(membership.close)


def beat_and_reshard(membership: EngineMembership, share: LiveShard) -> bool:
    """Heartbeat, then whether the live collectors (or this one's id) moved since last read."""
    membership.beat()
    return share.moved()


def serve_metrics(host: str, port: int, render: Callable[[], bytes]) -> ThreadingHTTPServer:
    """The metrics endpoint on its own thread: every GET path answers the exposition (as
    prometheus_client's server did), rendered per request by ``render``."""

    class MetricsHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server dispatches to
            body = render()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a scrape every few seconds is not worth a log line."""

    server = ThreadingHTTPServer((host, port), MetricsHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def engine_membership(settings: Settings, shard_arg: str | None) -> EngineMembership | None:
    """The engine record of a collector that shares through the engine (None when static)."""
    if settings.telemetry.shard != "engine":
        return None
    if shard_arg is not None:
        raise ValueError("--shard is the static share: not with SLUICE_TELEMETRY_SHARD=engine")
    if settings.database.url is None:
        raise ValueError("SLUICE_TELEMETRY_SHARD=engine needs DATABASE_URL (the engine's)")
    return EngineMembership(
        settings.database.url.get_secret_value(), settings.worker.stalled_after_s
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m controller.telemetry.collector")
    parser.add_argument(
        "--shard", help="I/N: this process's share of switches (static share; default 0/1)"
    )
    parser.add_argument("--intent", type=Path, help="read switches from this file, not the DB")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        shard = Shard.parse(args.shard or "0/1")
        settings = Settings()
        settings.gnmi.tls()  # a contradiction in the TLS settings is named here, not per switch
        load = intent_loader(settings, args.intent)
        membership = engine_membership(settings, args.shard)
    except ValueError as error:
        log.error("collector: %s", error)
        return 2
    share = None
    if membership is not None:
        share = LiveShard(  # read every round
            membership.live, time.monotonic, recheck_s=0.0, kind=TELEMETRY_COLLECTORS
        )
        share.member = lambda: membership.member_id
    policy = StreamPolicy(
        counter_mode=SubMode(settings.telemetry.counter_mode),
        sample_interval_s=settings.telemetry.sample_interval_s,
    )
    window_ns = int(settings.telemetry.rate_window_s * NS_PER_S)
    collector = Collector(
        shard, policy, window_ns=window_ns, rand=random.Random().random, live_shard=share
    )
    server = serve_metrics(
        settings.telemetry.metrics_host, settings.telemetry.metrics_port, collector.metrics.render
    )
    port = server.server_address[1]
    print(
        f"collector {collector.metrics_label}: metrics on {settings.telemetry.metrics_host}:{port}",
        flush=True,
    )

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        if membership is not None:
            await asyncio.to_thread(membership.open)
        await run(collector, load, settings, os.environ, stop, membership)

    try:
        asyncio.run(serve())
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
