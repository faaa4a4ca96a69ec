"""A collector in engine mode streams exactly its rendezvous shard of the intent's switches
and re-shards when the live collectors move (no server needed: the streams only back off);
the settings that cannot work together are refused by name."""

from __future__ import annotations

import asyncio
import random

import pytest

from controller.collector import Collector, engine_membership, targets_of
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.reconcile.shard import LiveShard, StaticShard, shard_of
from controller.settings import Settings
from controller.southbound.credentials import secret_resolver
from controller.southbound.subscribe import StreamPolicy

NAMES = [f"leaf{i}" for i in range(8)]


def _intent() -> Intent:
    return parse_intent({
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
        "switches": [{"name": name, "role": "leaf", "credential_ref": "env:PW",
                      "gnmi": {"address": "127.0.0.1", "port": 9, "target": name},
                      "ports": [{"name": "Ethernet0", "speed_gbps": 100}]} for name in NAMES],
    })  # fmt: skip


def test_a_collector_streams_its_shard_and_takes_a_dead_members_switches() -> None:
    members = [1, 2, 3]
    # The scenario moves switches: 2's shard grows when 3 dies.
    assert set(shard_of(2, NAMES, [1, 2])) > set(shard_of(2, NAMES, [1, 2, 3]))
    live_shard = LiveShard(lambda: members, lambda: 0.0, recheck_s=0.0)
    live_shard.member = lambda: 2

    async def scenario() -> None:
        collector = Collector(
            StaticShard(0, 1),
            StreamPolicy(),
            window_ns=0,
            rand=random.Random(0).random,
            live_shard=live_shard,
        )
        intent = _intent()
        targets = targets_of(intent, Settings(), secret_resolver({"PW": "x"}))
        collector.sync(intent, targets)
        assert set(collector._running) == set(shard_of(2, NAMES, [1, 2, 3]))
        kept = {name: r.tasks for name, r in collector._running.items()}
        members.remove(3)  # member 3 died
        assert live_shard.moved()
        collector.sync(intent, targets)
        assert set(collector._running) == set(shard_of(2, NAMES, [1, 2]))
        assert all(collector._running[name].tasks is tasks for name, tasks in kept.items())
        await collector.close()

    asyncio.run(scenario())


def test_engine_shard_refuses_a_static_shard_and_a_missing_database() -> None:
    engine = Settings.model_validate({"telemetry": {"shard": "engine"}})
    with pytest.raises(ValueError, match="--shard"):
        engine_membership(engine, "0/2")
    if engine.database.url is None:
        with pytest.raises(ValueError, match="DATABASE_URL"):
            engine_membership(engine, None)
    assert engine_membership(Settings(), "0/2") is None
