"""Subscribe requests and answers without a server: paths, modes, one database per
Subscribe, decoding, the collector's map handling, objects without counters, and shards."""

from __future__ import annotations

import json
import threading

import pytest
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.reconcile.shard import StaticShard
from controller.southbound.subscribe import (
    COUNTERS,
    SYNC,
    Change,
    ListMode,
    Notification,
    StreamPolicy,
    SubMode,
    counter_hashes,
    counters_path,
    decode,
    objects_without_counters,
    paths_text,
    stream_subscriptions,
    subscribe_request,
)
from controller.telemetry.ingest import SwitchHandler
from controller.telemetry.state import QueueId, SwitchTelemetry


def test_a_counter_path_names_an_oid_never_a_port_name() -> None:
    assert counters_path("oid:0x15") == ("COUNTERS_DB", "localhost", "COUNTERS", "oid:0x15")
    with pytest.raises(ValueError, match="resolve names through the maps"):
        counters_path("Ethernet0")


def test_stream_request_samples_the_counters_table_at_the_interval_and_maps_on_change() -> None:
    policy = StreamPolicy(counter_mode=SubMode.SAMPLE, sample_interval_s=2.0)
    request = subscribe_request(
        stream_subscriptions(policy), ListMode.STREAM, prefix_target="leaf1"
    )
    sub_list = request.subscribe
    assert sub_list.prefix.target == "leaf1"
    assert sub_list.encoding == gnmi_pb2.Encoding.Value("JSON_IETF")
    modes = [(s.path.elem[2].name, s.mode, s.sample_interval) for s in sub_list.subscription]
    on_change, sample = (
        gnmi_pb2.SubscriptionMode.Value("ON_CHANGE"),
        gnmi_pb2.SubscriptionMode.Value("SAMPLE"),
    )
    assert modes == [
        ("COUNTERS_QUEUE_NAME_MAP", on_change, 0),
        ("COUNTERS_PORT_NAME_MAP", on_change, 0),
        ("COUNTERS_PG_NAME_MAP", on_change, 0),
        ("COUNTERS", sample, 2_000_000_000),
    ]
    # The whole table, not an object: one message a tick, one redis connection on the switch.
    assert [len(s.path.elem) for s in sub_list.subscription] == [3, 3, 3, 3]
    assert all(s.path.origin == "sonic-db" for s in sub_list.subscription)
    # Before the switch holds counters: the maps alone (sonic-gnmi refuses an absent table).
    maps_only = stream_subscriptions(policy, counters=False)
    assert [s.elems[2] for s in maps_only] == [
        "COUNTERS_QUEUE_NAME_MAP",
        "COUNTERS_PORT_NAME_MAP",
        "COUNTERS_PG_NAME_MAP",
    ]


def test_every_subscribe_of_the_collector_names_one_database() -> None:
    """sonic-gnmi refuses a Subscribe that mixes databases ("Target conflict in path")."""
    counters = stream_subscriptions(StreamPolicy())
    assert {s.elems[0] for s in counters} == {"COUNTERS_DB"}
    assert paths_text(counters) == (
        "COUNTERS_DB/localhost/"
        "{COUNTERS_QUEUE_NAME_MAP,COUNTERS_PORT_NAME_MAP,COUNTERS_PG_NAME_MAP,COUNTERS}"
    )


def test_decode_joins_prefix_and_path_and_reads_json_and_deletes() -> None:
    def path(*names: str) -> object:
        return gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=n) for n in names])

    note = gnmi_pb2.Notification(
        timestamp=7,
        prefix=path("STATE_DB", "localhost"),
        update=[
            gnmi_pb2.Update(
                path=path("SLUICE_AGENT_STATE", "Ethernet0|3"),
                val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps({"basis": "kept"}).encode()),
            )
        ],
        delete=[path("SLUICE_AGENT_STATE", "Ethernet0|4")],
    )
    decoded = decode(gnmi_pb2.SubscribeResponse(update=note))
    assert decoded is not None
    assert decoded.timestamp_ns == 7
    assert [(c.elems[-1], c.value) for c in decoded.changes] == [
        ("Ethernet0|3", {"basis": "kept"}),
        ("Ethernet0|4", None),
    ]
    assert decode(gnmi_pb2.SubscribeResponse(sync_response=True)) is SYNC


def test_a_changed_name_map_moves_the_objects_without_a_new_stream() -> None:
    handler = SwitchHandler(SwitchTelemetry("leaf1", {}, {}), threading.Lock())
    handler.notification(decode_map({"Ethernet0:3": "oid:0x3"}))
    assert handler.counter_oids() == ["oid:0x3"]
    handler.notification(decode_map({"Ethernet0:3": "oid:0x99"}))
    assert handler.telemetry.queue_oids == {"oid:0x99": QueueId("Ethernet0", "3")}


def decode_map(mapping: dict[str, str]) -> Notification:
    path = gnmi_pb2.Path(
        elem=[
            gnmi_pb2.PathElem(name=n)
            for n in ("COUNTERS_DB", "localhost", "COUNTERS_QUEUE_NAME_MAP")
        ]
    )
    value = gnmi_pb2.TypedValue(json_ietf_val=json.dumps(mapping).encode())
    note = gnmi_pb2.Notification(timestamp=1, update=[gnmi_pb2.Update(path=path, val=value)])
    decoded = decode(gnmi_pb2.SubscribeResponse(update=note))
    assert decoded is not None
    return decoded


def test_shards_split_switches_stably_and_completely() -> None:
    names = [f"leaf{i}" for i in range(200)]
    shards = [StaticShard.parse(f"{i}/4") for i in range(4)]
    owners = [[s.index for s in shards if s.holds(n)] for n in names]
    assert all(len(o) == 1 for o in owners)  # every switch in exactly one shard
    assert all(sum(1 for o in owners if o == [i]) > 20 for i in range(4))  # none starved
    assert StaticShard.parse("0/1").holds("anything")
    for bad in ("4/4", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="--shard"):
            StaticShard.parse(bad)


def test_objects_without_counters_are_the_named_oids_no_hash_was_delivered_for() -> None:
    named = ["oid:0x1", "oid:0x2"]
    assert objects_without_counters(named, [counters_path("oid:0x1")]) == [counters_path("oid:0x2")]
    assert objects_without_counters(named, [counters_path(o) for o in named]) == []


def test_counter_hashes_come_by_object_path_or_as_a_whole_table() -> None:
    one = Change(counters_path("oid:0x1"), {"SAI_QUEUE_STAT_PACKETS": "5"})
    assert counter_hashes(one) == [("oid:0x1", {"SAI_QUEUE_STAT_PACKETS": "5"})]
    table = Change(COUNTERS, {"oid:0x1": {"A": "1"}, "oid:0x2": {}})
    assert counter_hashes(table) == [("oid:0x1", {"A": "1"}), ("oid:0x2", {})]
    assert counter_hashes(Change(COUNTERS, None)) == []  # sonic-gnmi's table delete
    assert counter_hashes(Change(("STATE_DB", "localhost", "X"), {"k": {}})) == []
