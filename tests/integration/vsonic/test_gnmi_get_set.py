"""Get, Set and Capabilities over real gRPC against a virtual switch on real Redis."""

from __future__ import annotations

from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis
from pygnmi.client import gNMIException  # type: ignore[import-untyped]
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import RunningSwitch, call_with_timeout, status_code
from vsonic.db import CONFIG_DB

CFG = "/sonic-db:CONFIG_DB/localhost"
WRED = {
    "green_min_threshold": "1048576",
    "green_max_threshold": "2097152",
    "green_drop_probability": "5",
    "wred_green_enable": "true",
    "ecn": "ecn_all",
}
SCHED = {"type": "DWRR", "weight": "40"}


def _raw(vswitch: RunningSwitch) -> redis.Redis[str]:
    return vswitch.store.client(CONFIG_DB)


def _set(vswitch: RunningSwitch, encoding: str = "json_ietf", **ops: Any) -> object:
    with vswitch.client() as client:
        return call_with_timeout(client.set, encoding=encoding, **ops)


def _get_val(vswitch: RunningSwitch, path: str) -> object:
    with vswitch.client() as client:
        reply = call_with_timeout(client.get, path=[path], encoding="json_ietf")
    return reply["notification"][0]["update"][0]["val"]


def test_capabilities_advertise_sonic_gnmis_encodings_for_sonic_db(vswitch: RunningSwitch) -> None:
    # sonic-gnmi:gnmi_server/server.go supportedEncodings: JSON, JSON_IETF, PROTO.
    with vswitch.client() as client:
        caps = call_with_timeout(client.capabilities)
    assert set(caps["supported_encodings"]) == {"json", "json_ietf", "proto"}
    assert [m["name"] for m in caps["supported_models"]] == ["sonic-db"]


def test_get_returns_what_set_wrote(vswitch: RunningSwitch) -> None:
    _set(
        vswitch,
        update=[
            (f"{CFG}/WRED_PROFILE/SLUICE_gold", WRED),
            (f"{CFG}/SCHEDULER/SLUICE.gold", SCHED),
            (
                f"{CFG}/QUEUE/Ethernet0|3",
                {"wred_profile": "SLUICE_gold", "scheduler": "SLUICE.gold"},
            ),
        ],
    )
    # Redis holds it in SONiC's layout, read without going through vsonic.
    assert _raw(vswitch).hgetall("QUEUE|Ethernet0|3") == {
        "wred_profile": "SLUICE_gold",
        "scheduler": "SLUICE.gold",
    }
    assert _get_val(vswitch, f"{CFG}/WRED_PROFILE/SLUICE_gold") == WRED
    assert _get_val(vswitch, f"{CFG}/QUEUE/Ethernet0|3/wred_profile") == "SLUICE_gold"
    assert _get_val(vswitch, f"{CFG}/SCHEDULER") == {"SLUICE.gold": SCHED}


def test_plain_json_value_is_refused_as_sonic_gnmi_refuses_it(vswitch: RunningSwitch) -> None:
    # pygnmi's default (encoding="json") sends json_val; SONiC's CONFIG_DB writer reads only
    # json_ietf_val, so it parses empty text (tests/realsonic: probe set-json-val).
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, encoding="json", update=[(f"{CFG}/WRED_PROFILE/w", WRED)])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert str(caught.value).endswith("Error: Fail to parse ")
    assert _raw(vswitch).exists("WRED_PROFILE|w") == 0


def test_missing_reference_is_refused_naming_the_field(vswitch: RunningSwitch) -> None:
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, update=[(f"{CFG}/QUEUE/Ethernet0|3", {"wred_profile": "ABSENT"})])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert "QUEUE|Ethernet0|3: field 'wred_profile': references WRED_PROFILE 'ABSENT'" in str(
        caught.value
    )
    assert _raw(vswitch).exists("QUEUE|Ethernet0|3") == 0


def test_unknown_field_is_refused_naming_it(vswitch: RunningSwitch) -> None:
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, update=[(f"{CFG}/SCHEDULER/s1", {"type": "DWRR", "wieght": "5"})])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert "SCHEDULER|s1: field 'wieght': unknown field in SCHEDULER" in str(caught.value)


def test_a_request_with_one_bad_update_changes_nothing(vswitch: RunningSwitch) -> None:
    before = {k: _raw(vswitch).hgetall(k) for k in _raw(vswitch).keys("*")}
    with pytest.raises(gNMIException) as caught:
        _set(
            vswitch,
            update=[
                (f"{CFG}/WRED_PROFILE/good", WRED),
                (f"{CFG}/SCHEDULER/good", SCHED),
                (f"{CFG}/SCHEDULER/bad", {"type": "DWRR", "weight": "101"}),
            ],
            delete=[f"{CFG}/FLEX_COUNTER_TABLE/QUEUE"],
        )
    assert "SCHEDULER|bad: field 'weight': 101 is out of range 1..100" in str(caught.value)
    after = {k: _raw(vswitch).hgetall(k) for k in _raw(vswitch).keys("*")}
    assert after == before


def test_delete_of_a_referenced_profile_is_refused(vswitch: RunningSwitch) -> None:
    _set(
        vswitch,
        update=[
            (f"{CFG}/WRED_PROFILE/keep", WRED),  # GCU refuses a patch that empties a table
            (f"{CFG}/WRED_PROFILE/p", WRED),
            (f"{CFG}/QUEUE/Ethernet4|3", {"wred_profile": "p"}),
        ],
    )
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, delete=[f"{CFG}/WRED_PROFILE/p"])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert "WRED_PROFILE|p: cannot delete, still referenced by QUEUE|Ethernet4|3" in str(
        caught.value
    )
    assert _raw(vswitch).hgetall("WRED_PROFILE|p") == WRED
    # Deleting the user in the same request makes the delete legal (GCU orders the patch);
    # the user is QUEUE's last entry, which goes with its table (GCU leaves no table empty).
    _set(vswitch, delete=[f"{CFG}/WRED_PROFILE/p", f"{CFG}/QUEUE"])
    assert _raw(vswitch).exists("WRED_PROFILE|p", "QUEUE|Ethernet4|3") == 0


def test_update_of_an_entry_overwrites_it_but_a_field_update_keeps_the_rest(
    vswitch: RunningSwitch,
) -> None:
    _set(vswitch, update=[(f"{CFG}/WRED_PROFILE/p", WRED)])
    # JSON Patch "add" of a field: the other fields stay. pygnmi sends the str "7" unquoted,
    # as the JSON number 7, which SONiC's server refuses for a field ("Invalid field 7"):
    # a field's value goes as a JSON string.
    with pytest.raises(gNMIException, match="Invalid field 7"):
        _set(vswitch, update=[(f"{CFG}/WRED_PROFILE/p/green_drop_probability", "7")])
    _set(vswitch, update=[(f"{CFG}/WRED_PROFILE/p/green_drop_probability", '"7"')])
    assert _raw(vswitch).hgetall("WRED_PROFILE|p") == {
        **WRED,
        "green_drop_probability": "7",
    }
    # JSON Patch "add" of an existing entry replaces it whole, as sonic-gnmi's GCU path does.
    _set(vswitch, update=[(f"{CFG}/WRED_PROFILE/p", {"ecn": "ecn_none"})])
    assert _raw(vswitch).hgetall("WRED_PROFILE|p") == {"ecn": "ecn_none"}


def test_set_on_counters_db_is_refused_as_unknown(vswitch: RunningSwitch) -> None:
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, update=[("/sonic-db:COUNTERS_DB/localhost/COUNTERS/oid:0x1", {"a": "1"})])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert "Set RPC does not support COUNTERS_DB" in str(caught.value)


def test_counters_are_read_through_the_name_map(vswitch: RunningSwitch) -> None:
    counters = "/sonic-db:COUNTERS_DB/localhost"
    oid = _get_val(vswitch, f"{counters}/COUNTERS_QUEUE_NAME_MAP/Ethernet4:3")
    # Ethernet4 is port 1: queue oid 0x15000000000000 + 1*8 + 3.
    assert oid == "oid:0x1500000000000b"
    stats = _get_val(vswitch, f"{counters}/COUNTERS/{oid}")
    assert isinstance(stats, dict)
    assert stats["SAI_QUEUE_STAT_PACKETS"] == "0"


def test_get_of_a_missing_entry_is_not_found(vswitch: RunningSwitch) -> None:
    with pytest.raises(gNMIException) as caught, vswitch.client() as client:
        call_with_timeout(client.get, path=[f"{CFG}/WRED_PROFILE/nope"], encoding="json_ietf")
    assert status_code(caught.value) == grpc.StatusCode.NOT_FOUND


def test_wrong_password_is_unauthenticated_and_not_echoed(vswitch: RunningSwitch) -> None:
    stub = gnmi_pb2_grpc.gNMIStub(vswitch.channel())
    bad = [("username", "admin"), ("password", "wrong-secret")]
    with pytest.raises(grpc.RpcError) as caught:
        stub.Capabilities(gnmi_pb2.CapabilityRequest(), metadata=bad, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "wrong-secret" not in caught.value.details()
    # The right credentials on the same channel work.
    reply = stub.Capabilities(gnmi_pb2.CapabilityRequest(), metadata=vswitch.metadata(), timeout=10)
    assert reply.gNMI_version == "0.7.0"  # what sonic-gnmi answers


def test_a_boolean_leaf_value_is_refused_naming_the_field(vswitch: RunningSwitch) -> None:
    # GCU writes a JSON true as Python's "True", which the model refuses.
    with pytest.raises(gNMIException) as caught:
        _set(vswitch, update=[(f"{CFG}/WRED_PROFILE/p", {**WRED, "wred_green_enable": True})])
    assert status_code(caught.value) == grpc.StatusCode.UNKNOWN
    assert "WRED_PROFILE|p: field 'wred_green_enable': 'True' is not one of" in str(caught.value)
    assert _raw(vswitch).exists("WRED_PROFILE|p") == 0
