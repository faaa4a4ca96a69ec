"""vsonic answers as sonic-gnmi does where gNMI leaves room (sonic-net/sonic-gnmi:
gnmi_server/server.go, sonic_data_client/mixed_db_client.go), and applies a Set as GCU does
(pacing, the YANG-model check). Real gRPC against a virtual switch on real Redis."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import tls_channel
from vsonic.db import CONFIG_DB, RedisStore
from vsonic.gcu import SCOPE_REFUSAL, GcuBehaviour
from vsonic.gnmi_server import (
    Clock,
    Credentials,
    GnmiService,
    RunningServer,
    TlsFiles,
    start_server,
)
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.switch import Switch, Targets

JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
PROTO = gnmi_pb2.Encoding.Value("PROTO")
AGENT = {
    "algorithm": "static",
    "interval_ms": "100",
    "rtt_us": "10",
    "lambda": "1",
    "hysteresis_pct": "5",
    "hdcq_k": "0.5",
    "stale_after_ms": "1000",
    "queues": "",
    "version": "abc123",
}
SCHED = {"type": "DWRR", "weight": "40"}


class Served:
    """A switch on real Redis behind vsonic's real gNMI service; raw stub calls."""

    def __init__(self, store: RedisStore, gcu: GcuBehaviour, tls: TlsFiles) -> None:
        self.store = store
        self.switch = Switch("vs1", store, gcu=gcu)
        self.credentials = Credentials("admin", secrets.token_hex(8))
        service = GnmiService(Targets([self.switch], fleet=False), Clock(), self.credentials)
        self.server: RunningServer = start_server("127.0.0.1:0", service, tls)
        self.channel = tls_channel(self.server.port, tls)
        self.stub = gnmi_pb2_grpc.gNMIStub(self.channel)

    def metadata(self) -> list[tuple[str, str]]:
        return [("username", "admin"), ("password", self.credentials.password)]

    def get(self, *paths: tuple[str, ...], encoding: int = JSON_IETF) -> Any:
        request = gnmi_pb2.GetRequest(path=[path(*p) for p in paths], encoding=encoding)
        return self.stub.Get(request, metadata=self.metadata(), timeout=10)

    def set(self, updates: dict[tuple[str, ...], Any]) -> Any:
        request = gnmi_pb2.SetRequest(
            update=[
                gnmi_pb2.Update(
                    path=path(*p), val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps(v).encode())
                )
                for p, v in updates.items()
            ]
        )
        return self.stub.Set(request, metadata=self.metadata(), timeout=10)

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace_s=0.2)


def path(*elems: str) -> Any:
    return gnmi_pb2.Path(
        origin="sonic-db",
        elem=[gnmi_pb2.PathElem(name=e) for e in ("CONFIG_DB", "localhost", *elems)],
    )


@pytest.fixture
def served(
    redis_store: RedisStore, switch_tls: TlsFiles, request: pytest.FixtureRequest
) -> Iterator[Served]:
    seed_store(redis_store, SwitchSeed(hostname="vs1", ports=default_ports(2)))
    gcu = getattr(request, "param", GcuBehaviour())
    running = Served(redis_store, gcu, switch_tls)
    try:
        yield running
    finally:
        running.close()


def test_a_get_naming_an_absent_table_fails_whole_with_not_found(served: Served) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        served.get(("PORT",), ("SCHEDULER",))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "Failed to find CONFIG_DB" in caught.value.details()
    assert "SCHEDULER" in caught.value.details()


def test_an_absent_table_that_prefixes_another_is_left_out_of_the_answer(
    served: Served,
) -> None:
    # sonic-gnmi looks for keys matching TABLE*: SLUICE_AGENT_QUEUE|... matches SLUICE_AGENT,
    # so SLUICE_AGENT passes that check, reads no data, and its path is skipped.
    served.store.client(CONFIG_DB).hset("SLUICE_AGENT_QUEUE|Ethernet0|3", "mode", "x")
    reply = served.get(("SLUICE_AGENT",), ("DEVICE_METADATA",))
    paths = [[e.name for e in n.update[0].path.elem] for n in reply.notification]
    assert paths == [["CONFIG_DB", "localhost", "DEVICE_METADATA"]]


def test_the_database_root_answers_every_table_in_one_get(served: Served) -> None:
    reply = served.get(())
    tables = json.loads(reply.notification[0].update[0].val.json_ietf_val)
    assert {"PORT", "DEVICE_METADATA"} <= set(tables)
    assert tables["DEVICE_METADATA"]["localhost"]["hostname"] == "vs1"


def test_proto_encoding_answers_the_pb_field_and_not_found_without_one(served: Served) -> None:
    served.store.client(CONFIG_DB).hset("DASH_THING|x", "pb", "\x08\x01")
    reply = served.get(("DASH_THING", "x"), encoding=PROTO)
    assert reply.notification[0].update[0].val.proto_bytes == b"\x08\x01"
    with pytest.raises(grpc.RpcError) as caught:
        served.get(("DEVICE_METADATA", "localhost"), encoding=PROTO)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "No proto bytes found" in caught.value.details()


def test_a_refused_set_is_unknown_with_the_switch_message(served: Served) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        served.set({("SCHEDULER", "s1"): {"type": "DWRR", "weight": "101"}})
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert "SCHEDULER|s1: field 'weight': 101 is out of range 1..100" in caught.value.details()


NO_EXTENSION = GcuBehaviour(yang_extension=False)


@pytest.mark.parametrize("served", [NO_EXTENSION], indirect=True)
def test_without_the_yang_extension_a_patch_touching_agent_tables_is_refused_whole(
    served: Served,
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        served.set({("SCHEDULER", "s1"): SCHED, ("SLUICE_AGENT", "global"): AGENT})
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert SCOPE_REFUSAL in caught.value.details()
    raw = served.store.client(CONFIG_DB)
    assert raw.exists("SCHEDULER|s1", "SLUICE_AGENT|global") == 0
    served.set({("SCHEDULER", "s1"): SCHED})  # QoS tables alone are fine
    assert raw.hgetall("SCHEDULER|s1") == SCHED


def test_the_extension_makes_agent_tables_acceptable(served: Served) -> None:
    served.set({("SLUICE_AGENT", "global"): AGENT})
    assert served.store.client(CONFIG_DB).hgetall("SLUICE_AGENT|global") == AGENT


def test_a_set_takes_the_gcu_time_for_its_size_and_counts_each_op(
    redis_store: RedisStore, switch_tls: TlsFiles
) -> None:
    seed_store(redis_store, SwitchSeed(hostname="vs1", ports=default_ports(2)))
    slept: list[float] = []
    gcu = GcuBehaviour(per_set_s=2.0, per_op_s=0.25, sleep=slept.append)
    running = Served(redis_store, gcu, switch_tls)
    try:
        running.set({("SCHEDULER", "a"): SCHED, ("SCHEDULER", "b"): SCHED})
        running.set({("SCHEDULER", "c"): SCHED})
    finally:
        running.close()
    assert slept == [2.5, 2.25]
    assert set(running.switch.applied.values()) == {1}
    assert len(running.switch.applied) == 3


def test_a_port_critical_change_takes_its_port_down_and_up_and_nothing_else_does(
    redis_store: RedisStore, switch_tls: TlsFiles
) -> None:
    # GCU's PatchSorter (sonic-utilities patch_sorter.py, RequiredValueIdentifier): a QUEUE
    # change needs PORT admin down; the port is taken down, the change made, the port up.
    seed_store(redis_store, SwitchSeed(hostname="vs1", ports=default_ports(3)))
    db = redis_store.client(CONFIG_DB)
    db.hset("PORT|Ethernet8", "admin_status", "down")  # already down: GCU leaves it alone
    seen: list[tuple[float, str | None]] = []

    def sleep(seconds: float) -> None:  # what the port is while GCU works
        seen.append((seconds, db.hget("PORT|Ethernet0", "admin_status")))

    gcu = GcuBehaviour(per_set_s=2.0, per_op_s=0.25, sleep=sleep)
    running = Served(redis_store, gcu, switch_tls)
    try:
        running.set({("SCHEDULER", "a"): SCHED})
        assert not running.switch.port_flaps
        running.set(
            {
                ("QUEUE", "Ethernet0|3"): {"scheduler": "a"},
                ("QUEUE", "Ethernet0|4"): {"scheduler": "a"},
                ("QUEUE", "Ethernet8|3"): {"scheduler": "a"},
            }
        )
        running.set({("SCHEDULER", "a"): {"type": "DWRR", "weight": "60"}})
    finally:
        running.close()
    # Checkpoint and patch while the port is up, then its admin down and up (two changes)
    # while it is down; the scheduler changes touch no port.
    assert seen == [(2.25, "up"), (2.75, "up"), (0.5, "down"), (2.25, "up")]
    assert running.switch.port_flaps == {"Ethernet0": 1}
    assert db.hget("PORT|Ethernet0", "admin_status") == "up"
    assert db.hget("PORT|Ethernet4", "admin_status") == "up"
    assert db.hget("PORT|Ethernet8", "admin_status") == "down"
    assert db.hgetall("QUEUE|Ethernet8|3") == {"scheduler": "a"}


def test_a_refused_port_critical_change_takes_no_port_down(served: Served) -> None:
    with pytest.raises(grpc.RpcError):
        served.set({("QUEUE", "Ethernet0|3"): {"scheduler": "missing"}})
    assert not served.switch.port_flaps
    assert served.store.client(CONFIG_DB).hget("PORT|Ethernet0", "admin_status") == "up"
