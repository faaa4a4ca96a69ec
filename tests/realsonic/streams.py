"""What the real-SONiC stream tests share: COUNTERS_DB laid out as orchagent lays it out for a
switch without one running (the name maps and a ``COUNTERS:<oid>`` hash per queue and port,
as vsonic's seed writes them), counters written into it at known rates the way syncd's flex
counters write them (one HSET per object, so one keyspace event each), the collector's
/metrics read back, and a poll helper."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx
import redis
from prometheus_client.parser import text_string_to_metric_families

from lab.realsonic import RealSwitch
from vsonic.db import COUNTERS_DB
from vsonic.seed import SwitchSeed, default_ports, seed_entries

NS_PER_S = 1_000_000_000
RedisFields = dict[str | bytes, bytes | float | int | str]  # what redis-py's hset takes
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def seed_counters(switch: RealSwitch, ports: int = 32) -> dict[str, str]:
    """The switch's COUNTERS_DB as a fresh switch of ``ports`` ports x 8 queues holds it
    (every count 0); the queue map (``Ethernet0:3`` -> oid)."""
    entries = seed_entries(SwitchSeed("sonic", default_ports(ports)))[COUNTERS_DB]
    db = switch.db("COUNTERS_DB")
    with db.pipeline(transaction=False) as pipe:
        for key, fields in entries.items():
            mapping: RedisFields = dict(fields.items())
            pipe.hset(key, mapping=mapping)
        pipe.execute()
    return dict(entries["COUNTERS_QUEUE_NAME_MAP"])


def port_oids(switch: RealSwitch) -> dict[str, str]:
    return dict(switch.db("COUNTERS_DB").hgetall("COUNTERS_PORT_NAME_MAP"))


@dataclass
class CounterWriter:
    """Writes counters that grow at ``rates`` (field -> counts a second, per oid) every
    ``every_s``, each value the rate times the wall time since the writer started: what a
    flex-counter poll leaves in redis. ``hold`` stops writing an object (its last value
    stays); ``write`` sets fields once, now."""

    db: redis.Redis[str]
    rates: dict[str, dict[str, float]]
    every_s: float = 0.5
    _held: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _t0_ns: int = 0

    def start(self) -> CounterWriter:
        self._t0_ns = time.time_ns()
        self._thread = threading.Thread(target=self._run, name="counter-writer", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            elapsed_s = (time.time_ns() - self._t0_ns) / NS_PER_S
            with self._lock:
                for oid, rates in self.rates.items():
                    if oid not in self._held:
                        values: RedisFields = {n: str(int(r * elapsed_s)) for n, r in rates.items()}
                        self.db.hset(f"COUNTERS:{oid}", mapping=values)

    def hold(self, oid: str) -> None:
        with self._lock:
            self._held.add(oid)

    def add(self, oid: str, rates: dict[str, float]) -> None:
        """Write ``oid``'s counters from now on as well (its first write jumps from the
        seed's 0 to the rate times the writer's age: a reset, then rates)."""
        with self._lock:
            self.rates[oid] = rates

    def write(self, oid: str, values: Mapping[str, str]) -> None:
        with self._lock:
            mapping: RedisFields = dict(values.items())
            self.db.hset(f"COUNTERS:{oid}", mapping=mapping)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def metrics(port: int) -> Samples:
    """The collector's /metrics as (name, labels) -> value; empty while it does not answer."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return {}
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def wait_for(what: str, condition: Callable[[], bool], *, within_s: float = 120.0) -> None:
    """Poll until ``condition`` holds; ``within_s`` bounds a loaded machine's wait, never a
    pass/fail measure."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)
