"""The telemetry collector: ``python -m controller.collector [--shard I/N] [--intent FILE]``.

It reads the switches from the current intent in PostgreSQL (or ``--intent FILE``), keeps
two supervised gNMI Subscribe streams per SONiC switch of its shard, one per database
(counters from COUNTERS_DB, the agent's state from STATE_DB:
``controller.southbound.subscribe``), and one per OpenConfig switch (its ``openconfig-qos``
queue state: ``controller.openconfig.counters``; it runs no agent), feeds them into each
switch's telemetry state (``controller.telemetry.ingest``) and serves
that as Prometheus metrics (``controller.telemetry.metrics``) on
``SLUICE_TELEMETRY_METRICS_HOST:PORT`` (127.0.0.1:9464 by default). The switch list is
re-read every ``SLUICE_TELEMETRY_REFRESH_S``; a switch that leaves the intent is
unsubscribed, a new one subscribed.

With ``SLUICE_TELEMETRY_SHARD=engine`` the collectors shard the switches without ``--shard``:
each registers as a worker record of the engine (``controller.rollout.engine.
CollectorMembership``), heartbeats every ``SLUICE_WORKER_HEARTBEAT_S`` and streams its
rendezvous shard among the collectors heard from within ``SLUICE_WORKER_STALLED_AFTER_S``
(``controller.reconcile.shard``, the drift watch's sharing). A collector that dies stops
heartbeating, and the survivors take its switches at their next heartbeat after it counts as
stalled; one that joins takes about 1/N of each other's.

The metrics endpoint is uvicorn (the API's server) on a thread and event loop of its own, so a
scrape never waits on the streams' loop nor they on it: every GET path answers the whole
exposition, gzip-compressed when the scraper accepts it (Prometheus does), as
prometheus_client's own endpoint answers. SIGINT or SIGTERM stops the collector.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import signal
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.types import Receive, Scope, Send

from controller.intent.loader import load_intent_file
from controller.intent.models import Dialect, Intent
from controller.reconcile.shard import TELEMETRY_COLLECTORS, LiveShard, StaticShard
from controller.rollout.engine import CollectorMembership
from controller.services.common import utc_now
from controller.services.intents import IntentService
from controller.settings import Settings
from controller.southbound.credentials import SecretResolver
from controller.southbound.gnmi import GnmiTarget, targets_for
from controller.southbound.subscribe import (
    AgentStateSession,
    CounterSession,
    Decoder,
    EndpointChannels,
    QueueStateSession,
    StreamPolicy,
    SubMode,
    SupervisedStream,
)
from controller.store.db import make_engine, make_sessions
from controller.telemetry.ingest import (
    QueueStateHandler,
    SwitchHandler,
    pfc_classes,
    queue_classes,
    telemetry_for,
)
from controller.telemetry.metrics import CONTENT_TYPE, TelemetryMetrics
from controller.telemetry.state import SwitchTelemetry

log = logging.getLogger("sluice.collector")
NS_PER_S = 1_000_000_000


@dataclass
class Running:
    """One switch's streams: a SONiC switch's counters (COUNTERS_DB) and its agent's state
    (STATE_DB), one database per Subscribe as sonic-gnmi requires; an OpenConfig switch's
    queue state."""

    target: GnmiTarget
    handler: SwitchHandler
    tasks: tuple[asyncio.Task[None], ...]

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()


class Collector:
    """The switches of one shard and their streams. With ``live_shard`` (engine mode) the shard is
    this collector's rendezvous shard among the live collectors instead."""

    def __init__(
        self,
        shard: StaticShard,
        policy: StreamPolicy,
        *,
        window_ns: int,
        rand: Callable[[], float],
        wall_ns: Callable[[], int] = time.time_ns,
        live_shard: LiveShard | None = None,
    ) -> None:
        self.shard = shard
        self.live_shard = live_shard
        self._policy = policy
        self._window_ns = window_ns
        self._rand = rand
        self.lock = threading.Lock()
        self._running: dict[str, Running] = {}
        self._channels = EndpointChannels()
        self.metrics_label = "engine" if live_shard is not None else shard.name
        self.metrics = TelemetryMetrics(self.metrics_label, self.streamed, wall_ns, self.lock)

    def streamed(self) -> Iterable[SwitchTelemetry]:
        """The switches streamed now (the metrics read them holding ``lock``)."""
        return [r.handler.telemetry for r in list(self._running.values())]

    def updates(self) -> int:
        """Updates ingested so far, over every switch."""
        with self.lock:
            return sum(t.updates for t in self.streamed())

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
                running.cancel()
                del self._running[name]
        classes, lossless = queue_classes(intent), pfc_classes(intent)
        for name, switch in sorted(wanted.items()):
            existing = self._running.get(name)
            if existing is not None:  # same endpoint: keep the stream, take the new labels
                fresh = telemetry_for(switch, classes, self._window_ns, lossless)
                with self.lock:
                    existing.handler.telemetry.port_speeds_bps = fresh.port_speeds_bps
                    existing.handler.telemetry.queue_classes = fresh.queue_classes
                    existing.handler.telemetry.pfc_classes = fresh.pfc_classes
                continue
            if name not in targets:
                continue
            target = targets[name]
            telemetry = telemetry_for(switch, classes, self._window_ns, lossless)
            if switch.dialect is Dialect.OPENCONFIG:
                handler: SwitchHandler = QueueStateHandler(telemetry, self.lock)
                tasks = self._start_openconfig(target, handler)
            else:
                handler = SwitchHandler(telemetry, self.lock)
                tasks = self._start(target, handler)
            self._running[name] = Running(target, handler, tasks)

    def _start(self, target: GnmiTarget, handler: SwitchHandler) -> tuple[asyncio.Task[None], ...]:
        """A SONiC switch's two streams, each on a connection of its own (sonic-gnmi keeps one
        Subscribe per connection: ``EndpointChannels``)."""
        counters = CounterSession(handler, self._policy)
        agent = AgentStateSession(handler, self._policy)
        streams = (
            self._stream(target, counters, handler.decoder),
            SupervisedStream(
                target,
                self._channels.for_target(target, agent.kind),
                agent,
                self._policy.retry,
                rand=self._rand,
            ),
        )
        return self._run(streams)

    def _start_openconfig(
        self, target: GnmiTarget, handler: SwitchHandler
    ) -> tuple[asyncio.Task[None], ...]:
        """An OpenConfig switch's one stream: its queues' state (no agent runs on it)."""
        return self._run(
            (self._stream(target, QueueStateSession(handler, self._policy), handler.decoder),)
        )

    def _stream(
        self,
        target: GnmiTarget,
        session: CounterSession | QueueStateSession,
        decoder: Callable[[], Decoder],
    ) -> SupervisedStream:
        return SupervisedStream(
            target,
            self._channels.for_target(target, session.kind),
            session,
            self._policy.retry,
            rand=self._rand,
            decoder=decoder,
        )

    def _run(self, streams: tuple[SupervisedStream, ...]) -> tuple[asyncio.Task[None], ...]:
        loop = asyncio.get_running_loop()
        return tuple(
            loop.create_task(stream.run(), name=f"{stream.session.kind}-{stream.target.name}")
            for stream in streams
        )

    def _holds(self, switch: str) -> bool:
        return self.live_shard is not None or self.shard.holds(switch)

    async def close(self) -> None:
        for running in self._running.values():
            running.cancel()
        tasks = [task for running in self._running.values() for task in running.tasks]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()
        await self._channels.close()


def targets_of(
    intent: Intent, settings: Settings, resolve: SecretResolver
) -> dict[str, GnmiTarget]:
    """Targets for the intent's switches, passwords from ``resolve`` (the process's,
    ``VaultSettings.resolver``); a switch whose credential does not resolve is left out
    (``controller.southbound.gnmi.targets_for``)."""
    return targets_for(
        intent.switches,
        resolve,
        username=settings.gnmi.username,
        tls=settings.gnmi.tls(),
    )


def intent_loader(settings: Settings, intent_file: Path | None) -> Callable[[], Intent]:
    """How the collector reads its switches: the file given, else the current intent in the
    database, as the worker reads it (``IntentService``)."""
    if intent_file is not None:
        return lambda: load_intent_file(intent_file)
    if settings.database.url is None:
        raise ValueError("DATABASE_URL is not set and no --intent file was given")
    engine = make_engine(settings.database.url.get_secret_value(), pool_size=1)
    intents = IntentService(make_sessions(engine), clock=utc_now)
    return lambda: intents.current().intent


async def run(
    collector: Collector,
    load: Callable[[], Intent],
    settings: Settings,
    environ: Mapping[str, str],
    stop: asyncio.Event,
    membership: CollectorMembership | None = None,
) -> None:
    """Stream the intent's switches until ``stop``. The intent is re-read every ``refresh_s``;
    in engine mode a round is a heartbeat, and the switches are re-sharded at once when the
    live collectors moved."""
    resolve = settings.vault.resolver(environ)  # once: the secret store's cache is shared
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
                    collector.sync(intent, targets_of(intent, settings, resolve))
            except Exception as error:  # keep streaming what we have; try again next round
                log.warning("collector: could not read the intent: %s", error)
            round_no += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(period_s):  # not wait_for: it can lose a cancel
                    await stop.wait()
    finally:
        await collector.close()
        if membership is not None:
            await asyncio.to_thread(membership.close)


def beat_and_reshard(membership: CollectorMembership, live_shard: LiveShard) -> bool:
    """Heartbeat, then whether the live collectors (or this one's id) moved since last read."""
    membership.beat()
    return live_shard.moved()


def engine_membership(settings: Settings, shard_arg: str | None) -> CollectorMembership | None:
    """The engine record of a collector that shards through the engine (None when static)."""
    if settings.telemetry.shard != "engine":
        return None
    if shard_arg is not None:
        raise ValueError("--shard is the static shard: not with SLUICE_TELEMETRY_SHARD=engine")
    if settings.database.url is None:
        raise ValueError("SLUICE_TELEMETRY_SHARD=engine needs DATABASE_URL (the engine's)")
    return CollectorMembership(
        settings.database.url.get_secret_value(), settings.worker.stalled_after_s
    )


# --- the metrics endpoint ----------------------------------------------------------------------

# zlib's fastest level: a 250-switch exposition (about 124 MB of text) compresses about 10 to
# 25 times in a fraction of its render's time (docs/benchmarks.md, "The scrape").
GZIP_LEVEL = 1


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` value takes gzip (RFC 9110 12.5.3: named, or ``*``, with
    a quality above zero)."""
    for coding in accept_encoding.split(","):
        name, _, params = coding.strip().partition(";")
        if name.strip().lower() not in ("gzip", "*"):
            continue
        key, _, value = params.strip().partition("=")
        if key.strip().lower() != "q":
            return True
        try:
            return float(value) > 0
        except ValueError:
            return False
    return False


def gzip_bytes(body: bytes) -> bytes:
    """``body`` as one gzip member (RFC 1952), at ``GZIP_LEVEL``."""
    packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(body) + packer.flush()


def exposition_app(render: Callable[[], bytes]) -> Callable[[Scope, Receive, Send], object]:
    """The ASGI app: a GET of any path is the whole exposition, rendered on a worker thread
    (the render takes the collector's lock per switch; the event loop keeps serving)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "GET":
            await _answer(send, 405, [(b"allow", b"GET")], b"")
            return
        accept = dict(scope["headers"]).get(b"accept-encoding", b"").decode("latin-1")
        gzipped = accepts_gzip(accept)
        body = await asyncio.to_thread(lambda: gzip_bytes(render()) if gzipped else render())
        headers = [(b"content-type", CONTENT_TYPE.encode()), (b"vary", b"Accept-Encoding")]
        if gzipped:
            headers.append((b"content-encoding", b"gzip"))
        await _answer(send, 200, headers, body)

    return app


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class MetricsEndpoint:
    """The metrics endpoint: ``exposition_app`` served by uvicorn on a thread and event loop
    of its own. The socket is bound here, so a port taken is an error at startup and port 0
    gives a free one (``port``); ``close`` stops the server and its thread."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes]) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family)
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            exposition_app(render),
            log_config=None,  # the collector's logging stays as it set it up
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[self._socket])),
            name="metrics",
            daemon=True,
        )
        self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)
        self._socket.close()


# --- the process -------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m controller.collector")
    parser.add_argument(
        "--shard", help="I/N: this process's shard of the switches (static; default 0/1)"
    )
    parser.add_argument("--intent", type=Path, help="read switches from this file, not the DB")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        shard = StaticShard.parse(args.shard or "0/1")
        settings = Settings()
        settings.gnmi.tls()  # a contradiction in the TLS settings is named here, not per switch
        load = intent_loader(settings, args.intent)
        membership = engine_membership(settings, args.shard)
    except ValueError as error:
        log.error("collector: %s", error)
        return 2
    live_shard = None
    if membership is not None:
        live_shard = LiveShard(  # read every round
            membership.live, time.monotonic, recheck_s=0.0, kind=TELEMETRY_COLLECTORS
        )
        live_shard.member = lambda: membership.member_id
    policy = StreamPolicy(
        counter_mode=SubMode(settings.telemetry.counter_mode),
        agent_state_mode=SubMode(settings.telemetry.agent_state_mode),
        sample_interval_s=settings.telemetry.sample_interval_s,
    )
    window_ns = int(settings.telemetry.rate_window_s * NS_PER_S)
    collector = Collector(
        shard, policy, window_ns=window_ns, rand=random.Random().random, live_shard=live_shard
    )
    host = settings.telemetry.metrics_host
    endpoint = MetricsEndpoint(host, settings.telemetry.metrics_port, collector.metrics.render)
    print(f"collector {collector.metrics_label}: metrics on {host}:{endpoint.port}", flush=True)

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
        endpoint.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
