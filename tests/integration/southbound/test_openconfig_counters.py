"""An OpenConfig switch's queue counters reach the collector over real gRPC: vsonic's
OpenConfig side streams ``openconfig-qos`` queue state from the counters its SONiC side holds
(vsonic/openconfig_state.py), and the collector's stream for an OpenConfig switch
(``QueueStateSession``, ``QueueStateHandler``) turns them into the same rates and metrics
as a SONiC queue's.

The switch's clock is the test's, so each counter write carries a known timestamp and the
rates are exact."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
import yaml

from controller.collector import Collector
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.openconfig.qos import QOS
from controller.openconfig.qos import compile_switch as compile_openconfig
from controller.reconcile.shard import StaticShard
from controller.southbound.credentials import secret_resolver
from controller.southbound.gnmi import open_channel, target_for_switch, targets_for
from controller.southbound.subscribe import (
    SYNC,
    ListMode,
    Notification,
    StreamPolicy,
    SubMode,
    Subscription,
    keyed_decoder,
    subscribe,
)
from controller.telemetry.state import (
    QUEUE_BYTES,
    QUEUE_DROPPED_PACKETS,
    QUEUE_ECN_MARKED_PACKETS,
    QUEUE_PACKETS,
    QueueId,
    SwitchTelemetry,
)
from vsonic.db import COUNTERS_DB, MemoryStore, redis_key
from vsonic.gnmi_server import Clock, Credentials, GnmiService, RunningServer, start_server
from vsonic.openconfig import OcOp, OpenConfigTree
from vsonic.seed import PortSeed, SwitchSeed, seed_store
from vsonic.switch import Switch, Targets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
SWITCH = "leaf2"
PORT = "Ethernet4"
QUEUE = "3"  # the example's storage class
S = 1_000_000_000


@dataclass
class Served:
    model: Switch
    server: RunningServer
    intent: Intent
    password: str
    clock_ns: list[int]

    def write_queue(self, at_s: int, counters: dict[str, int], mode: SubMode) -> None:
        """The queue's counters as of ``at_s``. The switch stamps a notification after it
        read the counters, so the order of the two writes decides what a read between them
        sends: under ON_CHANGE the clock moves first (an old read is no change: nothing is
        sent), under SAMPLE the counters do (a new read with the old time is a duplicate the
        collector drops; the next tick carries it with the new time)."""
        oid = (self.model.store.read_hash(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP") or {})[
            f"{PORT}:{QUEUE}"
        ]
        fields = {name: str(value) for name, value in counters.items()}
        if mode is SubMode.ON_CHANGE:
            self.clock_ns[0] = at_s * S
        self.model.store.write_atomically(
            COUNTERS_DB, {redis_key(COUNTERS_DB, "COUNTERS", oid): fields}
        )
        self.clock_ns[0] = at_s * S


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    raw = yaml.safe_load(EXAMPLE.read_text())
    for switch in raw["switches"]:
        if switch["name"] == SWITCH:
            switch["dialect"] = "openconfig"
    intent = parse_intent(raw)
    switch = next(s for s in intent.switches if s.name == SWITCH)
    store = MemoryStore()
    ports = tuple(PortSeed(p.name, p.speed_gbps) for p in switch.ports)
    seed_store(store, SwitchSeed(SWITCH, ports))
    tree = OpenConfigTree()
    document = compile_openconfig(intent, switch).document()[QOS]
    tree.apply([OcOp("replace", (("qos", ()),), document)])
    model = Switch(SWITCH, store, openconfig=tree)
    clock_ns = [1_000 * S]
    password = secrets.token_hex(12)
    service = GnmiService(
        Targets([model], fleet=False),
        Clock(wall_ns=lambda: clock_ns[0]),
        Credentials("admin", password),
    )
    server = start_server("127.0.0.1:0", service)
    try:
        raw_switch = next(s for s in raw["switches"] if s["name"] == SWITCH)
        raw_switch["gnmi"] = {"address": "127.0.0.1", "port": server.port}
        yield Served(model, server, parse_intent(raw), password, clock_ns)
    finally:
        server.stop(grace_s=0.2)


async def _until(check: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(30):
        while not check():
            await asyncio.sleep(0.02)
    assert check(), what


def _rates(telemetry: SwitchTelemetry) -> dict[str, float]:
    view = telemetry.queues.get(QueueId(PORT, QUEUE))
    return view.rates if view is not None else {}


def _counters(packets: int, octets: int, dropped: int, marked: int) -> dict[str, int]:
    return {
        QUEUE_PACKETS: packets,
        QUEUE_BYTES: octets,
        QUEUE_DROPPED_PACKETS: dropped,
        QUEUE_ECN_MARKED_PACKETS: marked,
    }


@pytest.mark.parametrize(("mode", "base"), [(SubMode.ON_CHANGE, 2_000), (SubMode.SAMPLE, 3_000)])
def test_queue_counters_rising_on_an_openconfig_switch_are_the_collectors_rates(
    served: Served, mode: SubMode, base: int
) -> None:
    resolve = secret_resolver({"SLUICE_GNMI_PASSWORD": served.password})
    targets = targets_for(served.intent.switches, resolve, username="admin", tls=None)
    policy = StreamPolicy(counter_mode=mode, sample_interval_s=1.0)

    async def scenario() -> tuple[dict[str, float], dict[str, float], bytes]:
        collector = Collector(StaticShard(0, 1), policy, window_ns=0, rand=random.Random(0).random)
        try:
            served.write_queue(base, _counters(0, 0, 0, 0), mode)
            collector.sync(served.intent, {SWITCH: targets[SWITCH]})
            telemetry = collector.telemetry(SWITCH)
            assert telemetry is not None
            await _until(lambda: telemetry.stream_up, "the queue state stream syncs")
            await _until(lambda: QueueId(PORT, QUEUE) in telemetry.queues, "the first sample")
            served.write_queue(base + 2, _counters(4_000, 4_000_000, 10, 50), mode)
            await _until(lambda: bool(_rates(telemetry)), "rates after the counters rose")
            first = _rates(telemetry)
            # Only the transmitted packets move: the other leaves keep their last values.
            served.write_queue(base + 6, _counters(12_000, 4_000_000, 10, 50), mode)
            await _until(lambda: _rates(telemetry) != first, "rates after the second rise")
            return first, _rates(telemetry), collector.metrics.render()
        finally:
            await collector.close()

    first, second, exposition = asyncio.run(scenario())
    # Zero at the base time, then 2 s later; then 4 s later only the packets moved.
    assert first[QUEUE_PACKETS] == 2_000.0
    assert first[QUEUE_BYTES] == 2_000_000.0
    assert first[QUEUE_DROPPED_PACKETS] == 5.0
    assert first[QUEUE_ECN_MARKED_PACKETS] == 25.0
    assert second == {
        QUEUE_PACKETS: 2_000.0,
        QUEUE_BYTES: 0.0,
        QUEUE_DROPPED_PACKETS: 0.0,
        QUEUE_ECN_MARKED_PACKETS: 0.0,
    }
    line = next(
        line
        for line in exposition.decode().splitlines()
        if line.startswith("sluice_queue_tx_packets_per_second{")
        and f'switch="{SWITCH}"' in line
        and f'port="{PORT}"' in line
        and f'queue="{QUEUE}"' in line
    )
    assert 'class="storage"' in line
    assert float(line.rsplit(" ", 1)[1]) == 2_000.0


def test_once_answers_one_queues_leaf_and_a_path_that_is_not_queue_state_is_refused(
    served: Served,
) -> None:
    served.write_queue(4_000, _counters(77, 7_700, 0, 0), SubMode.ON_CHANGE)
    resolve = secret_resolver({"SLUICE_GNMI_PASSWORD": served.password})
    target = target_for_switch(
        next(s for s in served.intent.switches if s.name == SWITCH),
        resolve,
        username="admin",
        tls=None,
    )
    leaf = (
        "qos",
        "interfaces",
        f"interface[interface-id={PORT}]",
        "output",
        "queues",
        f"queue[name=SLUICE_Q{QUEUE}]",
        "state",
        "transmit-pkts",
    )

    async def once(elems: tuple[str, ...]) -> list[Notification]:
        channel = open_channel(target, aio=True)
        try:
            subs = [Subscription(elems, origin="openconfig")]
            notes = subscribe(
                channel, target, subs, ListMode.ONCE, deadline_s=10, decoder=keyed_decoder()
            )
            return [note async for note in notes]
        finally:
            await channel.close()

    answered = asyncio.run(once(leaf))
    assert answered[-1] is SYNC
    assert [c for n in answered[:-1] for c in n.changes] == [(leaf, 77)]
    with pytest.raises(grpc.RpcError) as refused:
        asyncio.run(once(("qos", "queues", "queue[name=SLUICE_Q3]", "state")))
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "queue/state and the configuration" in str(refused.value.details())
