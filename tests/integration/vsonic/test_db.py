"""SONiC's database layout on a real Redis, and the in-memory store that mirrors it."""

from __future__ import annotations

import redis

from vsonic.db import (
    CONFIG_DB,
    COUNTERS_DB,
    STATE_DB,
    MemoryStore,
    RedisStore,
    read_config,
    read_table,
    split_redis_key,
)
from vsonic.redis_process import RedisProcess
from vsonic.seed import SwitchSeed, default_ports, seed_store


def _raw(server: RedisProcess, db: int) -> redis.Redis[str]:
    return redis.Redis(host=server.host, port=server.port, db=db, decode_responses=True)


def test_seed_writes_sonic_key_layout(redis_server: RedisProcess, redis_store: RedisStore) -> None:
    seed_store(redis_store, SwitchSeed(hostname="leaf1", ports=default_ports(2, speed_gbps=100)))
    config, counters, state = (_raw(redis_server, db) for db in (CONFIG_DB, COUNTERS_DB, STATE_DB))
    # Ports are named by first lane, 4 lanes each: Ethernet0, Ethernet4; speed in Mb/s:
    # 100 Gb/s x 1000 = "100000".
    assert config.hgetall("PORT|Ethernet4")["speed"] == "100000"
    assert config.hgetall("BUFFER_POOL|egress_lossy_pool") == {
        "mode": "dynamic",
        "type": "egress",
        "size": str(32 * 1024 * 1024),
    }
    names = counters.hgetall("COUNTERS_QUEUE_NAME_MAP")
    assert len(names) == 2 * 8
    # Queue oids count up from 0x15000000000000: Ethernet4 is port 1, queue 3 -> 1*8+3 = 11.
    assert names["Ethernet4:3"] == "oid:0x1500000000000b"
    assert counters.hget("COUNTERS_QUEUE_INDEX_MAP", "oid:0x1500000000000b") == "3"
    assert counters.hget("COUNTERS_QUEUE_PORT_MAP", "oid:0x1500000000000b") == "oid:0x1000000000001"
    assert counters.hget("COUNTERS:oid:0x1500000000000b", "SAI_QUEUE_STAT_PACKETS") == "0"
    assert counters.hget("COUNTERS_PORT_NAME_MAP", "Ethernet0") == "oid:0x1000000000000"
    assert state.hget("PORT_TABLE|Ethernet0", "oper_status") == "up"


def test_write_replaces_whole_entries_and_hides_null_marker(
    redis_server: RedisProcess, redis_store: RedisStore
) -> None:
    raw = _raw(redis_server, CONFIG_DB)
    raw.hset("QUEUE|Ethernet0|3", mapping={"scheduler": "s1", "wred_profile": "w1"})
    raw.hset("QUEUE|Ethernet0|4", mapping={"scheduler": "s1"})
    redis_store.write_atomically(
        CONFIG_DB, {"QUEUE|Ethernet0|3": {"wred_profile": "w2"}, "QUEUE|Ethernet0|4": None,
                    "WRED_PROFILE|empty": {}}
    )  # fmt: skip
    assert raw.hgetall("QUEUE|Ethernet0|3") == {"wred_profile": "w2"}
    assert raw.exists("QUEUE|Ethernet0|4") == 0
    # An entry without fields is stored as NULL/NULL (as SONiC does) and read back empty.
    assert raw.hgetall("WRED_PROFILE|empty") == {"NULL": "NULL"}
    assert read_config(redis_store) == {
        ("QUEUE", "Ethernet0|3"): {"wred_profile": "w2"},
        ("WRED_PROFILE", "empty"): {},
    }


def test_prefix_reads_treat_glob_characters_literally(redis_store: RedisStore) -> None:
    redis_store.write_atomically(
        CONFIG_DB, {"T*|a": {"f": "1"}, "Tx|b": {"f": "2"}, "T[|c": {"f": "3"}}
    )
    assert read_table(redis_store, CONFIG_DB, "T*") == {"a": {"f": "1"}}
    assert read_table(redis_store, CONFIG_DB, "T[") == {"c": {"f": "3"}}


def test_memory_store_holds_the_same_layout_as_redis(redis_store: RedisStore) -> None:
    seed = SwitchSeed(hostname="leaf1", ports=default_ports(3))
    memory = MemoryStore()
    seed_store(memory, seed)
    seed_store(redis_store, seed)
    for db in (CONFIG_DB, COUNTERS_DB, STATE_DB):
        assert memory.read_prefixed(db, "") == redis_store.read_prefixed(db, "")


def test_split_key_keeps_the_rest_of_the_key_together() -> None:
    assert split_redis_key(CONFIG_DB, "QUEUE|Ethernet0|3") == ("QUEUE", "Ethernet0|3")
    assert split_redis_key(COUNTERS_DB, "COUNTERS:oid:0x15") == ("COUNTERS", "oid:0x15")
    assert split_redis_key(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP") is None
