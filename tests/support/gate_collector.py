"""A fake collector for the gate tests: serves the collector's metric names (docs/telemetry.md),
and a host exporter's flow completion times (docs/tuning.md), on /metrics from values the test
changes while Prometheus scrapes it. The real collector
(``python -m controller.collector``) takes its place once its switches run the data
plane; everything downstream (Prometheus, PromQL, the gates, the runner, the store) is real."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import make_promql
from controller.rollout.gates import Reader
from lab.prometheus import LocalPrometheus

# The host exporter's completion-time buckets (roles/host_exporter: 50 us x 2^k).
FCT_BUCKETS = tuple(50e-6 * 2**k for k in range(22))


@dataclass
class FlowCompletions:
    """One class's small flows as a host's exporter counts them: cumulative per bucket."""

    per_scrape: int = 0  # flows that finish between two scrapes
    seconds: float = 0.0  # how long each of them took
    buckets: list[int] = field(default_factory=lambda: [0] * len(FCT_BUCKETS))
    count: int = 0
    total: float = 0.0

    def finish(self) -> None:
        self.count += self.per_scrape
        self.total += self.per_scrape * self.seconds
        for index, bound in enumerate(FCT_BUCKETS):
            if self.seconds <= bound:
                self.buckets[index] += self.per_scrape


@dataclass
class Exposition:
    """Per switch: dropped packets/s of queue 3 on Ethernet0, and the agent's mode; per
    class: host h1's small flows, ``per_scrape`` of them finishing at each scrape, each taking
    the given seconds (``set_flows``)."""

    drops: dict[str, float] = field(default_factory=dict)
    agent_mode: dict[str, str] = field(default_factory=dict)
    flows: dict[str, FlowCompletions] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set(
        self, drops: Mapping[str, float] | None = None, modes: Mapping[str, str] | None = None
    ) -> None:
        with self.lock:
            self.drops.update(drops or {})
            self.agent_mode.update(modes or {})

    def set_flows(self, klass: str, per_scrape: int, seconds: float) -> None:
        with self.lock:
            found = self.flows.setdefault(klass, FlowCompletions())
            found.per_scrape, found.seconds = per_scrape, seconds

    def _flow_lines(self) -> list[str]:
        name = "sluice_host_flow_completion_seconds"
        lines = [f"# TYPE {name} histogram"]
        for klass, found in sorted(self.flows.items()):
            found.finish()
            labels = f'host="h1",class="{klass}",size="small"'
            lines += [
                f'{name}_bucket{{{labels},le="{bound!r}"}} {n}'
                for bound, n in zip(FCT_BUCKETS, found.buckets, strict=True)
            ]
            lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {found.count}')
            lines.append(f"{name}_count{{{labels}}} {found.count}")
            lines.append(f"{name}_sum{{{labels}}} {found.total!r}")
        return lines

    def text(self) -> str:
        with self.lock:
            lines = ["# TYPE sluice_queue_dropped_packets_per_second gauge"]
            lines += [
                "sluice_queue_dropped_packets_per_second"
                f'{{switch="{name}",port="Ethernet0",queue="3",class="storage"}} {value}'
                for name, value in sorted(self.drops.items())
            ]
            lines.append("# TYPE sluice_agent_mode_info gauge")
            lines += [
                f'sluice_agent_mode_info{{switch="{name}",mode="{mode}",algorithm="dynaq"}} 1'
                for name, mode in sorted(self.agent_mode.items())
            ]
            lines += self._flow_lines()
        return "\n".join(lines) + "\n"


@contextmanager
def fake_collector(exposition: Exposition) -> Iterator[str]:
    """Serve ``exposition`` (read at every scrape) until the block ends; yields host:port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = exposition.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def scraped(exposition: Exposition, root: Path, scrape_interval_s: float = 1.0) -> Iterator[Reader]:
    """A real Prometheus (data under ``root``) scraping ``exposition`` through the fake
    collector; yields the gates' PromQL reader over it."""
    with fake_collector(exposition) as target:
        server = LocalPrometheus(root, targets=[target], scrape_interval_s=scrape_interval_s)
        server.start()
        promql = make_promql(server.url, 5.0)
        try:
            yield promql_reader(promql)
        finally:
            promql.close()
            server.stop()


def settle(read: Reader, expression: str, expected: float, within_s: float = 20.0) -> None:
    """Until Prometheus answers ``expected`` (it has scraped what the collector serves now)."""
    deadline = time.monotonic() + within_s
    while read(expression) != expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"Prometheus never answered {expected} for {expression}")
        time.sleep(0.2)


class HandClock:
    """A runner's clock moved by the test: a soak waits on it, never on sleep."""

    def __init__(self, start: datetime = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
