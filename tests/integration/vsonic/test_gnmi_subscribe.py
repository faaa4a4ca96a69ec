"""Subscribe over real gRPC (the grpc stub, since pygnmi's threads swallow stream errors)."""

from __future__ import annotations

import json
import logging
import queue
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import RunningSwitch
from vsonic.changes import KEYSPACE_EVENTS
from vsonic.db import CONFIG_DB

MODE = gnmi_pb2.SubscriptionList.Mode
SUB = gnmi_pb2.SubscriptionMode
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
WRED = {"green_min_threshold": "1000", "green_max_threshold": "2000"}
SCHEDULER_PATH = ["CONFIG_DB", "localhost", "SCHEDULER"]


def _path(*elems: str) -> Any:
    return gnmi_pb2.Path(origin="sonic-db", elem=[gnmi_pb2.PathElem(name=e) for e in elems])


def _names(path: Any) -> list[str]:
    return [e.name for e in path.elem]


class Stream:
    """One Subscribe RPC: requests go in through a queue, responses come out in order."""

    def __init__(self, vswitch: RunningSwitch, sub_list: Any) -> None:
        self._requests: queue.Queue[Any] = queue.Queue()
        self._requests.put(gnmi_pb2.SubscribeRequest(subscribe=sub_list))
        stub = gnmi_pb2_grpc.gNMIStub(vswitch.channel())
        # The deadline bounds a hang; no assertion depends on timing.
        self._call = stub.Subscribe(self._outgoing(), metadata=vswitch.metadata(), timeout=30)

    def _outgoing(self) -> Iterator[Any]:
        while (request := self._requests.get()) is not None:
            yield request

    def poll(self) -> None:
        self._requests.put(gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll()))

    def next(self) -> Any:
        return next(self._call)

    def until_sync(self) -> list[Any]:
        """Notifications up to (not including) the next sync_response."""
        notes = []
        while not (response := self.next()).sync_response:
            notes.append(response.update)
        return notes

    def rest(self) -> list[Any]:
        return list(self._call)

    def half_close(self) -> None:
        self._requests.put(None)

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()


def _sub_list(mode: int, *subs: Any, updates_only: bool = False, target: str = "") -> Any:
    return gnmi_pb2.SubscriptionList(
        prefix=gnmi_pb2.Path(target=target),
        mode=mode,
        subscription=list(subs),
        encoding=JSON_IETF,
        updates_only=updates_only,
    )


def _set_entry(vswitch: RunningSwitch, table: str, key: str, fields: dict[str, str]) -> None:
    stub = gnmi_pb2_grpc.gNMIStub(vswitch.channel())
    update = gnmi_pb2.Update(
        path=_path("CONFIG_DB", "localhost", table, key),
        val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps(fields).encode()),
    )
    stub.Set(gnmi_pb2.SetRequest(update=[update]), metadata=vswitch.metadata(), timeout=10)


def test_target_defined_is_refused_like_sonic_gnmi(vswitch: RunningSwitch) -> None:
    sub = gnmi_pb2.Subscription(path=_path("CONFIG_DB", "localhost", "QUEUE"), mode=SUB.Value(
        "TARGET_DEFINED"))  # fmt: skip
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    with pytest.raises(grpc.RpcError) as caught:
        stream.next()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unsupported subscription mode, TARGET_DEFINED" in caught.value.details()


def test_sample_interval_under_one_second_is_refused(vswitch: RunningSwitch) -> None:
    half_second_ns = 500_000_000
    sub = gnmi_pb2.Subscription(
        path=_path("COUNTERS_DB", "localhost", "COUNTERS_QUEUE_NAME_MAP"),
        mode=SUB.Value("SAMPLE"),
        sample_interval=half_second_ns,
    )
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    with pytest.raises(grpc.RpcError) as caught:
        stream.next()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "invalid interval: 500ms. It cannot be less than 1s"


def test_on_change_of_an_absent_table_fails_as_sonic_gnmi_does(vswitch: RunningSwitch) -> None:
    sub = gnmi_pb2.Subscription(
        path=_path("CONFIG_DB", "localhost", "WRED_PROFILE"), mode=SUB.Value("ON_CHANGE")
    )
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    with pytest.raises(grpc.RpcError) as caught:
        stream.until_sync()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == (
        "streamOnChangeSubscription error:  Failed to find CONFIG_DB WRED_PROFILE <nil> []"
    )


def test_on_change_reports_each_written_entry_and_a_delete_at_the_table(
    vswitch: RunningSwitch,
) -> None:
    _set_entry(vswitch, "WRED_PROFILE", "keep", WRED)
    table = ["CONFIG_DB", "localhost", "WRED_PROFILE"]
    sub = gnmi_pb2.Subscription(path=_path(*table), mode=SUB.Value("ON_CHANGE"))
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    try:
        initial = stream.until_sync()
        assert [json.loads(n.update[0].val.json_ietf_val) for n in initial] == [{"keep": WRED}]
        _set_entry(vswitch, "WRED_PROFILE", "p", WRED)
        # As sonic-gnmi: the written entry, keyed, at the table path.
        note = stream.next().update
        assert [_names(u.path) for u in note.update] == [table]
        assert json.loads(note.update[0].val.json_ietf_val) == {"p": WRED}
        # A change behind the server's back (straight into Redis) is seen too; a delete
        # names the table path, not the key.
        vswitch.store.client(CONFIG_DB).delete("WRED_PROFILE|p")
        note = stream.next().update
        assert [_names(d) for d in note.delete] == [table]
    finally:
        stream.close()


def test_a_stream_the_client_cancels_ends_without_a_servicer_error(
    vswitch: RunningSwitch, caplog: pytest.LogCaptureFixture
) -> None:
    # The collector cancels a stream to subscribe again with other paths; the server's
    # handler must end cleanly (once it raised "aclose(): asynchronous generator is already
    # running" at every cancelled stream and left its reader running).
    table = ["CONFIG_DB", "localhost", "WRED_PROFILE"]
    sub = gnmi_pb2.Subscription(path=_path(*table), mode=SUB.Value("ON_CHANGE"))
    _set_entry(vswitch, "WRED_PROFILE", "keep", WRED)
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    stream.until_sync()
    stream.close()
    # A change the cancelled stream would have read, then another stream's whole round trip:
    # the server has handled the cancel by the time a later stream has synced and changed.
    _set_entry(vswitch, "WRED_PROFILE", "p", WRED)
    later = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    try:
        later.until_sync()
        _set_entry(vswitch, "WRED_PROFILE", "q", WRED)
        later.next()
    finally:
        later.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_on_change_of_a_field_sends_string_values(vswitch: RunningSwitch) -> None:
    _set_entry(vswitch, "WRED_PROFILE", "p", WRED)
    sub = gnmi_pb2.Subscription(
        path=_path("CONFIG_DB", "localhost", "WRED_PROFILE", "p", "green_max_threshold"),
        mode=SUB.Value("ON_CHANGE"),
    )
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
    try:
        assert [n.update[0].val.string_val for n in stream.until_sync()] == ["2000"]
        _set_entry(vswitch, "WRED_PROFILE", "p", {**WRED, "green_max_threshold": "3000"})
        assert stream.next().update.update[0].val.string_val == "3000"
    finally:
        stream.close()


def test_once_sends_current_values_then_waits_for_the_client(vswitch: RunningSwitch) -> None:
    sub = gnmi_pb2.Subscription(path=_path("CONFIG_DB", "localhost", "PORT", "Ethernet4"))
    stream = Stream(vswitch, _sub_list(MODE.Value("ONCE"), sub))
    try:
        notes = stream.until_sync()
        assert len(notes) == 1
        # Seeded port: 100 Gb/s written as Mb/s, 100 x 1000.
        assert json.loads(notes[0].update[0].val.json_ietf_val)["speed"] == "100000"
        # As sonic-gnmi: the stream stays open after its sync, and a client that half-closes
        # its side ends it with "queue: disposed" (a client cancels instead).
        stream.half_close()
        with pytest.raises(grpc.RpcError) as caught:
            stream.rest()
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details() == "queue: disposed"
    finally:
        stream.close()


def test_poll_answers_each_poll_with_fresh_values(vswitch: RunningSwitch) -> None:
    first = {"type": "DWRR", "weight": "5"}
    _set_entry(vswitch, "SCHEDULER", "a", first)
    sub = gnmi_pb2.Subscription(path=_path("CONFIG_DB", "localhost", "SCHEDULER"))
    stream = Stream(vswitch, _sub_list(MODE.Value("POLL"), sub))
    try:
        initial = [json.loads(n.update[0].val.json_ietf_val) for n in stream.until_sync()]
        assert initial == [{"a": first}]
        _set_entry(vswitch, "SCHEDULER", "s", {"type": "DWRR", "weight": "9"})
        stream.poll()
        polled = [json.loads(n.update[0].val.json_ietf_val) for n in stream.until_sync()]
        assert polled == [{"a": first, "s": {"type": "DWRR", "weight": "9"}}]
    finally:
        stream.close()


def test_sample_sends_the_value_again_each_interval(vswitch: RunningSwitch) -> None:
    sub = gnmi_pb2.Subscription(
        path=_path("COUNTERS_DB", "localhost", "COUNTERS_QUEUE_NAME_MAP", "Ethernet0:0"),
        mode=SUB.Value("SAMPLE"),
        sample_interval=0,  # 0 means the minimum, 1 s
    )
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub, updates_only=True))
    try:
        # sonic-gnmi sends a STREAM's initial values even with updates_only.
        initial = stream.until_sync()
        # Ethernet0 queue 0 is the first queue oid.
        assert [n.update[0].val.string_val for n in initial] == ["oid:0x15000000000000"]
        sample = stream.next().update
        assert sample.update[0].val.string_val == "oid:0x15000000000000"
        assert sample.timestamp > initial[0].timestamp
    finally:
        stream.close()


QUEUE_MAP = ("COUNTERS_DB", "localhost", "COUNTERS_QUEUE_NAME_MAP")
QUEUE_NAMES = [f"Ethernet0:{q}" for q in range(8)]


def _queue_samples() -> list[Any]:
    """Every queue of Ethernet0 by its oid, as the collector subscribes."""
    return [
        gnmi_pb2.Subscription(path=_path(*QUEUE_MAP, name), mode=SUB.Value("SAMPLE"))
        for name in QUEUE_NAMES
    ]


def test_a_standalone_switch_sends_each_path_in_a_message_of_its_own(
    vswitch: RunningSwitch,
) -> None:
    # As sonic-gnmi, which runs a goroutine per subscription.
    stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), *_queue_samples()))
    try:
        initial = stream.until_sync()
        assert sorted(_names(n.update[0].path)[-1] for n in initial) == QUEUE_NAMES
        assert all(len(n.update) == 1 for n in initial)
        ticks = [stream.next().update for _ in QUEUE_NAMES]
        assert sorted(_names(n.update[0].path)[-1] for n in ticks) == QUEUE_NAMES
    finally:
        stream.close()


def test_a_fleet_server_batches_samples_due_together_and_initial_values(
    fleet_vswitch: RunningSwitch,
) -> None:
    # The initial values come in one notification, and each tick's samples in one more,
    # under one timestamp: what lets one process serve a few hundred switches' counters.
    names = QUEUE_NAMES
    request = _sub_list(MODE.Value("STREAM"), *_queue_samples(), target="vs1")
    stream = Stream(fleet_vswitch, request)
    try:
        initial = stream.until_sync()
        assert len(initial) == 1
        assert [_names(u.path)[-1] for u in initial[0].update] == names
        sampled = stream.next().update
        assert [_names(u.path)[-1] for u in sampled.update] == names
        assert sampled.update[0].val.string_val == "oid:0x15000000000000"
        assert sampled.timestamp > initial[0].timestamp
    finally:
        stream.close()


def test_subscribe_without_credentials_is_unauthenticated(vswitch: RunningSwitch) -> None:
    stub = gnmi_pb2_grpc.gNMIStub(vswitch.channel())
    sub = gnmi_pb2.Subscription(path=_path("CONFIG_DB", "localhost", "PORT"))
    request = gnmi_pb2.SubscribeRequest(subscribe=_sub_list(MODE.Value("ONCE"), sub))
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.Subscribe(iter([request]), timeout=10))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_seventy_streams_on_one_server_all_see_a_change_and_get_still_answers(
    vswitch: RunningSwitch,
) -> None:
    # The threaded server held one of 32 worker threads per open stream, so the 33rd starved.
    sub = gnmi_pb2.Subscription(
        path=_path("CONFIG_DB", "localhost", "SCHEDULER"), mode=SUB.Value("ON_CHANGE")
    )
    _set_entry(vswitch, "SCHEDULER", "a", {"type": "STRICT"})
    streams = [Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub)) for _ in range(70)]
    try:
        for stream in streams:
            initial = [json.loads(n.update[0].val.json_ietf_val) for n in stream.until_sync()]
            assert initial == [{"a": {"type": "STRICT"}}]
        stub = gnmi_pb2_grpc.gNMIStub(vswitch.channel())
        reply = stub.Get(
            gnmi_pb2.GetRequest(path=[_path("CONFIG_DB", "localhost", "PORT")], encoding=JSON_IETF),
            metadata=vswitch.metadata(),
            timeout=10,
        )
        assert "Ethernet0" in json.loads(reply.notification[0].update[0].val.json_ietf_val)
        # Written straight into Redis: the keyspace notification drives every stream.
        vswitch.store.client(CONFIG_DB).hset("SCHEDULER|s", mapping={"type": "STRICT"})
        for stream in streams:
            note = stream.next().update
            assert [_names(u.path) for u in note.update] == [SCHEDULER_PATH]
            assert json.loads(note.update[0].val.json_ietf_val) == {"s": {"type": "STRICT"}}
    finally:
        for stream in streams:
            stream.close()


def test_on_change_without_keyspace_events_falls_back_to_re_reading(
    vswitch: RunningSwitch,
) -> None:
    config = vswitch.store.client(CONFIG_DB)
    config.config_set("notify-keyspace-events", "")  # a Redis vsonic did not start
    config.hset("SCHEDULER|a", mapping={"type": "STRICT"})
    try:
        sub = gnmi_pb2.Subscription(
            path=_path("CONFIG_DB", "localhost", "SCHEDULER"), mode=SUB.Value("ON_CHANGE")
        )
        stream = Stream(vswitch, _sub_list(MODE.Value("STREAM"), sub))
        try:
            stream.until_sync()
            config.hset("SCHEDULER|s", mapping={"type": "STRICT"})
            note = stream.next().update
            assert [_names(u.path) for u in note.update] == [SCHEDULER_PATH]
            assert json.loads(note.update[0].val.json_ietf_val) == {"s": {"type": "STRICT"}}
        finally:
            stream.close()
    finally:
        config.config_set("notify-keyspace-events", KEYSPACE_EVENTS)
