"""The collector follows intent changes: new labels for a switch whose endpoint is unchanged,
without restarting its stream (no server needed: the stream only backs off)."""

from __future__ import annotations


def test_a_collector_takes_new_class_names_and_speeds_without_restarting_streams() -> None:
    import asyncio
    import random

    from controller.collector import Collector, targets_of
    from controller.intent.loader import parse_intent
    from controller.intent.models import Intent
    from controller.reconcile.shard import StaticShard
    from controller.settings import Settings
    from controller.southbound.credentials import secret_resolver
    from controller.southbound.subscribe import StreamPolicy

    def intent(speed: int, name: str) -> Intent:
        return parse_intent({
            "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
            "switches": [{"name": "leaf1", "role": "leaf", "credential_ref": "env:PW",
                          "gnmi": {"address": "127.0.0.1", "port": 9},
                          "ports": [{"name": "Ethernet0", "speed_gbps": speed}]}],
            "service_classes": [{"name": name, "dscp": [10], "queue": 1,
                                 "scheduling": {"type": "DWRR", "weight": 10}, "ecn": "off"}],
        })  # fmt: skip

    async def scenario() -> None:
        collector = Collector(
            StaticShard(0, 1), StreamPolicy(), window_ns=0, rand=random.Random(0).random
        )
        first = intent(25, "storage")
        targets = targets_of(first, Settings(), secret_resolver({"PW": "x"}))
        collector.sync(first, targets)
        tasks = collector._running["leaf1"].tasks
        second = intent(100, "bulk")
        collector.sync(second, targets_of(second, Settings(), secret_resolver({"PW": "x"})))
        telemetry = collector.telemetry("leaf1")
        assert telemetry is not None
        assert telemetry.class_of("1") == "bulk"
        assert telemetry.port_speeds_bps == {"Ethernet0": 100e9}
        assert collector._running["leaf1"].tasks is tasks  # the same streams
        await collector.close()

    asyncio.run(scenario())


def test_an_openconfig_switch_streams_its_queue_state_and_a_sonic_one_its_two_databases() -> None:
    import asyncio
    import random

    from controller.collector import Collector, targets_of
    from controller.intent.loader import parse_intent
    from controller.reconcile.shard import StaticShard
    from controller.settings import Settings
    from controller.southbound.credentials import secret_resolver
    from controller.southbound.subscribe import StreamPolicy
    from controller.telemetry.ingest import QueueStateHandler

    def switch(name: str, port: int, dialect: str) -> dict[str, object]:
        return {"name": name, "role": "leaf", "credential_ref": "env:PW", "dialect": dialect,
                "gnmi": {"address": "127.0.0.1", "port": port},
                "ports": [{"name": "Ethernet0", "speed_gbps": 25}]}  # fmt: skip

    intent = parse_intent({
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
        "switches": [switch("leaf1", 9, "sonic"), switch("leaf2", 10, "openconfig")],
        "service_classes": [{"name": "storage", "dscp": [10], "queue": 1,
                             "scheduling": {"type": "DWRR", "weight": 10}, "ecn": "off"}],
    })  # fmt: skip

    async def scenario() -> None:
        collector = Collector(
            StaticShard(0, 1), StreamPolicy(), window_ns=0, rand=random.Random(0).random
        )
        targets = targets_of(intent, Settings(), secret_resolver({"PW": "x"}))
        assert set(targets) == {"leaf1", "leaf2"}
        collector.sync(intent, targets)
        running = {name: collector._running[name] for name in ("leaf1", "leaf2")}
        collector.sync(intent, targets)
        assert collector._running == running  # the same streams: nothing restarted
        kinds = {name: sorted(task.get_name() for task in r.tasks) for name, r in running.items()}
        assert kinds == {
            "leaf1": ["agent_state-leaf1", "counters-leaf1"],
            "leaf2": ["counters-leaf2"],  # no agent runs on an OpenConfig switch
        }
        assert isinstance(running["leaf2"].handler, QueueStateHandler)
        assert not isinstance(running["leaf1"].handler, QueueStateHandler)
        await collector.close()

    asyncio.run(scenario())
