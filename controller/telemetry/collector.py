"""The collector process: ``python -m controller.telemetry.collector [--shard I/N]``.

It reads the switches from the current intent in PostgreSQL (or ``--intent FILE``), keeps
one supervised gNMI Subscribe stream per switch of its shard (``controller.southbound.
subscribe``), turns the updates into rates and agent state (``controller.telemetry.state``)
and serves them as Prometheus metrics on ``SLUICE_TELEMETRY_METRICS_HOST:PORT`` (127.0.0.1:
9464 by default). The switch list is re-read every ``SLUICE_TELEMETRY_REFRESH_S``; a switch
that leaves the intent is unsubscribed, a new one subscribed.
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

from controller.policy.loader import load_intent_file
from controller.policy.models import Intent, Switch
from controller.settings import Settings
from controller.sonic.compile import fleet_qos
from controller.southbound.credentials import environment_resolver
from controller.southbound.gnmi import GnmiTarget, TlsOptions, target_for_switch
from controller.southbound.subscribe import (
    AGENT_STATE,
    COUNTERS,
    PORT_NAME_MAP,
    QUEUE_NAME_MAP,
    Handler,
    Notification,
    StreamPolicy,
    SubMode,
    SwitchStream,
    open_channel,
)
from controller.telemetry.metrics import CONTENT_TYPE, TelemetryMetrics
from controller.telemetry.state import SwitchTelemetry

log = logging.getLogger("sluice.collector")
NS_PER_S = 1_000_000_000


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


def _fields(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}


@dataclass
class Running:
    target: GnmiTarget
    handler: SwitchHandler
    task: asyncio.Task[None]


class Collector:
    """The switches of one shard and their streams."""

    def __init__(
        self,
        shard: Shard,
        policy: StreamPolicy,
        *,
        window_ns: int,
        rand: Callable[[], float],
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.shard = shard
        self._policy = policy
        self._window_ns = window_ns
        self._rand = rand
        self.lock = threading.Lock()
        self._running: dict[str, Running] = {}
        self._channels: dict[tuple[str, TlsOptions | None], Any] = {}
        self.metrics = TelemetryMetrics(shard.name, self._switches, wall_ns, self.lock)

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
        wanted = {s.name: s for s in intent.switches if self.shard.holds(s.name)}
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
            stream = SwitchStream(
                target, self._channel(target), handler, self._policy, rand=self._rand
            )
            task = asyncio.get_running_loop().create_task(stream.run(), name=f"stream-{name}")
            self._running[name] = Running(target, handler, task)

    def _channel(self, target: GnmiTarget) -> Any:
        """One channel per endpoint: the switches of a fleet server share it."""
        key = (target.endpoint, target.tls)
        channel = self._channels.get(key)
        if channel is None:
            channel = self._channels[key] = open_channel(target)
        return channel

    async def close(self) -> None:
        for running in self._running.values():
            running.task.cancel()
        await asyncio.gather(*(r.task for r in self._running.values()), return_exceptions=True)
        self._running.clear()
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


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
) -> None:
    try:
        while not stop.is_set():
            try:
                intent = await asyncio.to_thread(load)
                collector.sync(intent, targets_of(intent, settings, environ))
            except Exception as error:  # keep streaming what we have; try again next round
                log.warning("collector: could not read the intent: %s", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), settings.telemetry.refresh_s)
    finally:
        await collector.close()


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m controller.telemetry.collector")
    parser.add_argument("--shard", default="0/1", help="I/N: this process's share of switches")
    parser.add_argument("--intent", type=Path, help="read switches from this file, not the DB")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        shard = Shard.parse(args.shard)
        settings = Settings()
        settings.gnmi.tls()  # a contradiction in the TLS settings is named here, not per switch
        load = intent_loader(settings, args.intent)
    except ValueError as error:
        log.error("collector: %s", error)
        return 2
    policy = StreamPolicy(
        counter_mode=SubMode(settings.telemetry.counter_mode),
        sample_interval_s=settings.telemetry.sample_interval_s,
    )
    window_ns = int(settings.telemetry.rate_window_s * NS_PER_S)
    collector = Collector(shard, policy, window_ns=window_ns, rand=random.Random().random)
    server = serve_metrics(
        settings.telemetry.metrics_host, settings.telemetry.metrics_port, collector.metrics.render
    )
    port = server.server_address[1]
    print(
        f"collector {shard.name}: metrics on {settings.telemetry.metrics_host}:{port}", flush=True
    )

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await run(collector, load, settings, os.environ, stop)

    try:
        asyncio.run(serve())
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
