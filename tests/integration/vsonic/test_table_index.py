"""The fleet store's index by table and the cached table answers, checked against a real
Redis: a switch on a RedisStore (a SCAN per read, an encoding per Get, no index and no cache)
given the same writes must answer every read and every Get with the same bytes."""

from __future__ import annotations

import json
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import tls_channel
from vsonic.db import CONFIG_DB, COUNTERS_DB, MemoryStore, RedisStore, Store, read_table
from vsonic.errors import PathNotFoundError
from vsonic.fleet import fleet_targets
from vsonic.gnmi_codec import json_text
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.paths import DbPath
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.setops import OpKind, SetOp
from vsonic.switch import Switch

CREDS = Credentials("admin", "index-test-password")
WRED = {"green_min_threshold": "1000", "green_max_threshold": "2000"}

# Writes that exercise the index: tables whose names share a prefix, a key-less hash, glob
# characters, a table emptied by deletes, a key rewritten with fewer fields.
WRITES: list[tuple[int, dict[str, dict[str, str] | None]]] = [
    (CONFIG_DB, {"SLUICE_AGENT|global": {"a": "1"}, "SLUICE_AGENT_QUEUE|Ethernet0|3": {"b": "2"}}),
    (CONFIG_DB, {"QUEUE|Ethernet0|3": {"scheduler": "s1"}, "QUEUE|Ethernet4|3": {"x": "y"}}),
    (CONFIG_DB, {"T*|a": {"f": "1"}, "Tx|b": {"f": "2"}, "T[|c": {"f": "3"}}),
    (COUNTERS_DB, {"COUNTERS_QUEUE_NAME_MAP": {"Ethernet0:3": "oid:0x1"}}),
    (COUNTERS_DB, {"COUNTERS:oid:0x1": {"SAI_QUEUE_STAT_PACKETS": "7"}}),
    (CONFIG_DB, {"QUEUE|Ethernet4|3": None, "SLUICE_AGENT|global": None}),
    (CONFIG_DB, {"QUEUE|Ethernet0|3": {"wred_profile": "w"}}),
    (CONFIG_DB, {"QUEUE|Ethernet0|3": None, "Tx|b": None}),
]
PREFIXES = [
    (CONFIG_DB, ""),
    (CONFIG_DB, "SLUICE_AGENT"),
    (CONFIG_DB, "SLUICE_AGENT|"),
    (CONFIG_DB, "SLUICE_AGENT_QUEUE|"),
    (CONFIG_DB, "SLUICE_AGENT_QUEUE|Ethernet0|"),
    (CONFIG_DB, "QUEUE|"),
    (CONFIG_DB, "QUEUE|Ethernet0|"),
    (CONFIG_DB, "T*|"),
    (CONFIG_DB, "T"),
    (CONFIG_DB, "PORT|"),
    (CONFIG_DB, "NOPE|"),
    (COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP"),
    (COUNTERS_DB, "COUNTERS:"),
    (COUNTERS_DB, ""),
]


def _reads(store: Store) -> list[Any]:
    reads: list[Any] = [store.read_prefixed(db, prefix) for db, prefix in PREFIXES]
    reads += [store.read_hash(db, key) for db, changes in WRITES for key in changes]
    return reads


def test_indexed_reads_match_redis_after_every_write(redis_store: RedisStore) -> None:
    memory = MemoryStore()
    seed = SwitchSeed(hostname="leaf1", ports=default_ports(2))
    seed_store(memory, seed)
    seed_store(redis_store, seed)
    for db, changes in WRITES:
        memory.write_atomically(db, changes)
        redis_store.write_atomically(db, changes)
        assert _reads(memory) == _reads(redis_store), changes


def test_generation_moves_only_for_the_table_written() -> None:
    store = MemoryStore()
    store.write_atomically(CONFIG_DB, {"QUEUE|Ethernet0|3": {"a": "1"}})
    queue, other = store.generation(CONFIG_DB, "QUEUE"), store.generation(CONFIG_DB, "WRED")
    store.write_atomically(CONFIG_DB, {"WRED|w": {"a": "1"}})
    assert store.generation(CONFIG_DB, "QUEUE") == queue
    assert store.generation(CONFIG_DB, "WRED") > other
    store.write_atomically(CONFIG_DB, {"QUEUE|Ethernet0|3": None})  # a delete moves it too
    assert store.generation(CONFIG_DB, "QUEUE") > queue
    assert store.generation(CONFIG_DB, "QUEUE") != store.generation(COUNTERS_DB, "QUEUE")


def _set(kind: OpKind, table: str, key: str | None, value: Any = None) -> SetOp:
    return SetOp(kind, DbPath("CONFIG_DB", table, key), value)


SETS = [
    [_set(OpKind.UPDATE, "WRED_PROFILE", "w1", WRED)],
    [_set(OpKind.UPDATE, "WRED_PROFILE", "w0", {**WRED, "green_min_threshold": "10"})],
    [_set(OpKind.UPDATE, "SCHEDULER", "s", {"type": "DWRR", "weight": "9"})],
    [_set(OpKind.REPLACE, "WRED_PROFILE", "w1", {"green_min_threshold": "5"})],
    [_set(OpKind.DELETE, "WRED_PROFILE", "w0")],
    # A table's last entries go with the table (GCU refuses to leave a table empty).
    [_set(OpKind.DELETE, "WRED_PROFILE", None), _set(OpKind.DELETE, "SCHEDULER", None)],
]
TABLES = ["WRED_PROFILE", "SCHEDULER", "PORT", "DEVICE_METADATA", "FLEX_COUNTER_TABLE"]


def _answers(switch: Switch) -> list[tuple[str, bool, bytes]]:
    answers = []
    for table in TABLES:
        try:
            found, text = switch.json_for_get(DbPath("CONFIG_DB", table))
        except PathNotFoundError:
            answers.append((table, False, b"missing"))
            continue
        answers.append((table, found, text))
    return answers


def test_cached_get_answers_match_redis_through_sets_and_deletes(redis_store: RedisStore) -> None:
    seed = SwitchSeed(hostname="leaf1", ports=default_ports(2))
    memory_store = MemoryStore()
    seed_store(memory_store, seed)
    seed_store(redis_store, seed)
    memory, reference = Switch("leaf1", memory_store), Switch("leaf1", redis_store)
    for ops in SETS:
        memory.apply(ops)
        reference.apply(ops)
        first = _answers(memory)  # encodes every changed table
        assert first == _answers(reference), ops
        assert _answers(memory) == first  # the cached text, unchanged
        for table, found, text in first:
            if found:  # the cache holds exactly what encoding the read gives
                value = memory.read_for_get(DbPath("CONFIG_DB", table))[1]
                assert text == json_text(value), table
    # The last Set emptied both tables: the Get fails as sonic-gnmi's does, cache or not.
    assert ("WRED_PROFILE", False, b"missing") in _answers(memory)


# ---- over gRPC: a fleet server, stopped and started again over the same switches ----------


def _get(port: int, tls: TlsFiles, target: str, table: str) -> bytes:
    with tls_channel(port, tls) as channel:
        request = gnmi_pb2.GetRequest(
            prefix=gnmi_pb2.Path(target=target),
            path=[
                gnmi_pb2.Path(
                    origin="sonic-db",
                    elem=[gnmi_pb2.PathElem(name=n) for n in ("CONFIG_DB", "localhost", table)],
                )
            ],
            encoding=gnmi_pb2.Encoding.Value("JSON_IETF"),
        )
        metadata = [("username", CREDS.username), ("password", CREDS.password)]
        answer = gnmi_pb2_grpc.gNMIStub(channel).Get(request, metadata=metadata, timeout=10)
    text: bytes = answer.notification[0].update[0].val.json_ietf_val
    return text


def _grpc_set(
    port: int, tls: TlsFiles, target: str, table: str, key: str, fields: dict[str, str]
) -> None:
    with tls_channel(port, tls) as channel:
        update = gnmi_pb2.Update(
            path=gnmi_pb2.Path(
                origin="sonic-db",
                elem=[gnmi_pb2.PathElem(name=n) for n in ("CONFIG_DB", "localhost", table, key)],
            ),
            val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps(fields).encode()),
        )
        request = gnmi_pb2.SetRequest(prefix=gnmi_pb2.Path(target=target), update=[update])
        metadata = [("username", CREDS.username), ("password", CREDS.password)]
        gnmi_pb2_grpc.gNMIStub(channel).Set(request, metadata=metadata, timeout=10)


def test_fleet_get_after_set_is_the_same_answer_across_a_server_restart(
    switch_tls: TlsFiles,
) -> None:
    fleet = fleet_targets(["vs1", "vs2"], default_ports(2))
    running = start_server("127.0.0.1:0", GnmiService(fleet, Clock(), CREDS), switch_tls)
    try:
        _grpc_set(running.port, switch_tls, "vs1", "WRED_PROFILE", "w1", WRED)
        first = _get(running.port, switch_tls, "vs1", "WRED_PROFILE")
        assert json.loads(first) == {"w1": WRED}
        assert _get(running.port, switch_tls, "vs1", "WRED_PROFILE") == first  # from the cache
        _grpc_set(running.port, switch_tls, "vs1", "WRED_PROFILE", "w0", WRED)
        second = _get(running.port, switch_tls, "vs1", "WRED_PROFILE")
        assert list(json.loads(second)) == ["w0", "w1"]  # in key order, the new entry first
        port_table = _get(running.port, switch_tls, "vs2", "PORT")
    finally:
        running.stop(grace_s=0.5)
    restarted = start_server("127.0.0.1:0", GnmiService(fleet, Clock(), CREDS), switch_tls)
    try:
        assert _get(restarted.port, switch_tls, "vs1", "WRED_PROFILE") == second
        assert _get(restarted.port, switch_tls, "vs2", "PORT") == port_table
        changed = {**WRED, "green_min_threshold": "7"}
        _grpc_set(restarted.port, switch_tls, "vs1", "WRED_PROFILE", "w1", changed)
        assert json.loads(_get(restarted.port, switch_tls, "vs1", "WRED_PROFILE"))["w1"] == changed
    finally:
        restarted.stop(grace_s=0.5)


def test_table_reads_match_redis_for_tables_beside_a_name_map(redis_store: RedisStore) -> None:
    memory = MemoryStore()
    writes: dict[str, dict[str, str] | None] = {
        "MAP": {"Ethernet0:3": "oid:0x1"},  # a key-less hash named like the table
        "MAP:a": {"f": "1"},
        "MAP:": {"f": "empty key"},
        "MAPX:b": {"f": "2"},
    }
    memory.write_atomically(COUNTERS_DB, writes)
    redis_store.write_atomically(COUNTERS_DB, writes)
    for table in ("MAP", "MAPX", "MA", "NONE"):
        assert read_table(memory, COUNTERS_DB, table) == read_table(
            redis_store, COUNTERS_DB, table
        ), table
