"""Subscribe requests and answers without a server: paths by oid, modes, decoding, the
collector's map handling and shards."""

from __future__ import annotations

import json
import threading

import pytest
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.southbound.subscribe import (
    SYNC,
    ListMode,
    Notification,
    StreamPolicy,
    SubMode,
    counters_path,
    decode,
    stream_subscriptions,
    subscribe_request,
)
from controller.telemetry.collector import Shard, SwitchHandler
from controller.telemetry.state import QueueId, SwitchTelemetry


def test_a_counter_path_names_an_oid_never_a_port_name() -> None:
    assert counters_path("oid:0x15") == ("COUNTERS_DB", "localhost", "COUNTERS", "oid:0x15")
    with pytest.raises(ValueError, match="resolve names through the maps"):
        counters_path("Ethernet0")


def test_stream_request_samples_counters_at_the_interval_and_maps_on_change() -> None:
    policy = StreamPolicy(counter_mode=SubMode.SAMPLE, sample_interval_s=2.0)
    request = subscribe_request(
        stream_subscriptions(["oid:0x1"], policy), ListMode.STREAM, prefix_target="leaf1"
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
        ("SLUICE_AGENT_STATE", on_change, 0),
        ("COUNTERS", sample, 2_000_000_000),
    ]
    assert all(s.path.origin == "sonic-db" for s in sub_list.subscription)


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


def test_a_changed_name_map_asks_for_a_new_stream_an_unchanged_one_does_not() -> None:
    handler = SwitchHandler(SwitchTelemetry("leaf1", {}, {}), threading.Lock())
    oids = handler.name_maps({"Ethernet0:3": "oid:0x3"}, {"Ethernet0": "oid:0x1"})
    assert oids == ["oid:0x3", "oid:0x1"]
    same = decode_map({"Ethernet0:3": "oid:0x3"})
    assert handler.notification(same) is False
    moved = decode_map({"Ethernet0:3": "oid:0x99"})
    assert handler.notification(moved) is True
    assert handler.telemetry.queue_oids == {"oid:0x3": QueueId("Ethernet0", "3")}


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
    shards = [Shard.parse(f"{i}/4") for i in range(4)]
    owners = [[s.index for s in shards if s.holds(n)] for n in names]
    assert all(len(o) == 1 for o in owners)  # every switch in exactly one shard
    assert all(sum(1 for o in owners if o == [i]) > 20 for i in range(4))  # none starved
    assert Shard.parse("0/1").holds("anything")
    for bad in ("4/4", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="--shard"):
            Shard.parse(bad)
