"""A lossless class compiled to SONiC's tables (docs/lossless.md, "The tables").

Worked by hand, on a Spectrum-2-like platform (cell 144 B, pipeline latency 18 KB, MAC/PHY
0.8 KB; peer response from IEEE 802.3's pause quanta), lossless MTU 1024 B, 100 % small
packets, as tests/unit/intent/test_lossless_intent.py works the headroom:

* 100 Gb/s, 5 m, MTU 1500: xoff 64 512 B, xon 18 432 B, size 82 944 B;
* 25 Gb/s, 5 m, MTU 1500: xoff 18 432 B, xon 18 432 B, size 36 864 B;
* 100 Gb/s, 5 m, MTU 9216: propagation 35 882.5 B, xoff 81 920 B, size 100 352 B.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.errors import CompiledConfigInvalid
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.sonic.compile import check_references, compile_fleet, compile_switch
from controller.sonic.tables.buffer_pg import pg_ranges
from tests.unit.intent.test_lossless_intent import lossless_data
from tests.unit.sonic.test_compile import only, split_by_table

LOSSLESS_TABLES = (
    "BUFFER_PG",
    "PFC_WD",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
)


def _intent(data: dict[str, Any]) -> Intent:
    return parse_intent(data)


def _leaf1(intent: Intent) -> dict[tuple[str, str], dict[str, str]]:
    return compile_switch(intent, intent.switches[0])


def test_a_lossless_class_gives_its_profiles_groups_maps_and_watchdog() -> None:
    # leaf1: Ethernet0 25 Gb/s, Ethernet4 100 Gb/s; the storage class (queue 3) on priority 3.
    config = _leaf1(_intent(lossless_data()))
    profiles = only(config, "BUFFER_PROFILE")
    assert profiles["SLUICE_pg_lossless_25000_5m_mtu1500_profile"] == {
        "pool": "ingress_lossless_pool",
        "xon": "18432",
        "xoff": "18432",
        "size": "36864",
        "dynamic_th": "0",
    }
    assert profiles["SLUICE_pg_lossless_100000_5m_mtu1500_profile"] == {
        "pool": "ingress_lossless_pool",
        "xon": "18432",
        "xoff": "64512",
        "size": "82944",
        "dynamic_th": "0",
    }
    assert only(config, "BUFFER_PG") == {
        "Ethernet0|3": {"profile": "SLUICE_pg_lossless_25000_5m_mtu1500_profile"},
        "Ethernet4|3": {"profile": "SLUICE_pg_lossless_100000_5m_mtu1500_profile"},
    }
    assert only(config, "TC_TO_PRIORITY_GROUP_MAP") == {"SLUICE": {"3": "3"}}
    assert only(config, "MAP_PFC_PRIORITY_TO_QUEUE") == {"SLUICE": {"3": "3"}}
    assert only(config, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP") == {"SLUICE": {"3": "3"}}
    for port in ("Ethernet0", "Ethernet4"):
        assert only(config, "PORT_QOS_MAP")[port] == {
            "dscp_to_tc_map": "SLUICE",
            "tc_to_queue_map": "SLUICE",
            "pfc_enable": "3",
            "pfcwd_sw_enable": "3",
            "tc_to_pg_map": "SLUICE",
            "pfc_to_queue_map": "SLUICE",
            "pfc_to_pg_map": "SLUICE",
        }
        # sonic-utilities pfcwd start_default: 200 ms, 200 ms, drop.
        assert only(config, "PFC_WD")[port] == {
            "action": "drop",
            "detection_time": "200",
            "restoration_time": "200",
        }
    check_references(split_by_table(config))


def test_the_lossless_queue_marks_with_dcqcns_ramp() -> None:
    config = _leaf1(_intent(lossless_data(kmin_bytes=10_000, kmax_bytes=150_000, pmax_pct=5)))
    wred = only(config, "WRED_PROFILE")["SLUICE_DCQCN_Q3"]
    for colour in ("green", "yellow", "red"):
        assert wred[f"{colour}_min_threshold"] == "10000"
        assert wred[f"{colour}_max_threshold"] == "150000"
        assert wred[f"{colour}_drop_probability"] == "5"
    assert wred["ecn"] == "ecn_all"
    queues = only(config, "QUEUE")
    assert queues["Ethernet0|3"]["wred_profile"] == "SLUICE_DCQCN_Q3"
    assert queues["Ethernet4|3"]["wred_profile"] == "SLUICE_DCQCN_Q3"


def test_the_lossless_queue_gets_a_static_egress_profile_on_the_lossless_pool() -> None:
    # leaf1's two ports have the fabric's 2 000 000 B each: 4 000 000 B, 3906.25 KiB, rounded
    # up to 3907 KiB = 4 000 768 B, which no queue fed by those ports' groups can reach.
    config = _leaf1(_intent(lossless_data()))
    profiles = only(config, "BUFFER_PROFILE")
    assert profiles["SLUICE_egress_lossless_3907K"] == {
        "pool": "egress_lossless_pool",
        "size": "0",
        "static_th": "4000768",
    }
    queues = only(config, "BUFFER_QUEUE")
    for port in ("Ethernet0", "Ethernet4"):
        assert queues[f"{port}|3"] == {"profile": "SLUICE_egress_lossless_3907K"}
        lossy = {queues[f"{port}|{q}"]["profile"] for q in (1, 5, 6, 7)}
        assert len(lossy) == 1
        assert "dynamic_th" in profiles[lossy.pop()]  # the lossy queues keep theirs


def test_the_egress_profile_follows_the_switchs_buffers_and_pool() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["egress_pool"] = "egress_lossless_pool_hbm"
    data["switches"][0]["ports"][1]["buffer_bytes"] = 3_000_000
    config = _leaf1(_intent(data))
    # 2 000 000 + 3 000 000 B = 4882.8 KiB: 4883 KiB, a new profile (GCU would refuse a new
    # static_th on the profile in use).
    assert only(config, "BUFFER_PROFILE")["SLUICE_egress_lossless_4883K"] == {
        "pool": "egress_lossless_pool_hbm",
        "size": "0",
        "static_th": str(4883 * 1024),
    }
    assert only(config, "BUFFER_QUEUE")["Ethernet4|3"] == {
        "profile": "SLUICE_egress_lossless_4883K"
    }


def test_a_lossless_class_with_ecn_off_has_no_wred_profile() -> None:
    data = lossless_data()
    data["service_classes"][2]["ecn"] = "off"
    config = _leaf1(_intent(data))
    assert "SLUICE_DCQCN_Q3" not in only(config, "WRED_PROFILE")
    assert "wred_profile" not in only(config, "QUEUE")["Ethernet0|3"]
    assert only(config, "BUFFER_PG")  # still lossless


def test_the_ports_cable_and_mtu_name_and_size_its_profile() -> None:
    data = lossless_data()
    port = data["switches"][0]["ports"][1]
    port |= {"mtu_bytes": 9100, "cable_length_m": 40}
    data["switches"][0]["ports"].append({"name": "Ethernet8", "speed_gbps": 100, "mtu_bytes": 9216})
    config = _leaf1(_intent(data))
    groups = only(config, "BUFFER_PG")
    # SONiC's default MTU 9100 is left out of the name, as buffermgrd names its profiles.
    assert groups["Ethernet4|3"] == {"profile": "SLUICE_pg_lossless_100000_40m_profile"}
    assert groups["Ethernet8|3"] == {"profile": "SLUICE_pg_lossless_100000_5m_mtu9216_profile"}
    profiles = only(config, "BUFFER_PROFILE")
    assert profiles["SLUICE_pg_lossless_100000_5m_mtu9216_profile"]["xoff"] == "81920"
    assert profiles["SLUICE_pg_lossless_100000_5m_mtu9216_profile"]["size"] == "100352"
    # 40 m holds more on the cable than 5 m: a larger xoff than at 5 m with MTU 9216.
    assert int(profiles["SLUICE_pg_lossless_100000_40m_profile"]["xoff"]) > 81920


def test_two_lossless_classes_share_one_group_range_and_list_both_priorities() -> None:
    data = lossless_data()
    data["service_classes"][3]["ecn"] = "standard"
    data["service_classes"][3]["lossless"] = {"pfc_priority": 4}
    intent = _intent(data)
    queue = intent.service_classes[3].queue
    config = _leaf1(intent)
    assert set(only(config, "BUFFER_PG")) == {"Ethernet0|3-4", "Ethernet4|3-4"}
    qos = only(config, "PORT_QOS_MAP")["Ethernet4"]
    assert (qos["pfc_enable"], qos["pfcwd_sw_enable"]) == ("3,4", "3,4")
    assert only(config, "TC_TO_PRIORITY_GROUP_MAP")["SLUICE"] == {"3": "3", str(queue): "4"}
    assert only(config, "MAP_PFC_PRIORITY_TO_QUEUE")["SLUICE"] == {"3": "3", "4": str(queue)}
    # Priority 4 (on queue ``queue``) is its own group: its pauses come from group 4.
    assert only(config, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP")["SLUICE"] == {"3": "3", "4": "4"}


def test_the_watchdog_takes_the_intents_values() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["watchdog"] = {
        "detection_time_ms": 400,
        "restoration_time_ms": 2000,
        "action": "forward",
    }
    config = _leaf1(_intent(data))
    assert only(config, "PFC_WD")["Ethernet0"] == {
        "action": "forward",
        "detection_time": "400",
        "restoration_time": "2000",
    }


def test_a_lossy_intent_writes_no_lossless_table_and_keeps_its_version() -> None:
    data = lossless_data()
    del data["service_classes"][2]["lossless"]
    lossy = compile_fleet(_intent(data))
    config = lossy["leaf1"]
    assert not {table for table, _ in config} & set(LOSSLESS_TABLES)
    assert "pfc_enable" not in only(config, "PORT_QOS_MAP")["Ethernet0"]
    # The fabric's lossless platform alone changes nothing: the same entries as without it.
    del data["fabric"]["lossless"]
    assert compile_fleet(_intent(data)) == lossy


def test_the_lossless_class_moves_the_switch_version() -> None:
    lossless = _leaf1(_intent(lossless_data()))[("SLUICE_AGENT", "global")]["version"]
    other = _leaf1(_intent(lossless_data(kmax_bytes=300_000)))[("SLUICE_AGENT", "global")]
    assert other["version"] != lossless


def test_switches_alike_but_for_a_cable_get_their_own_profiles() -> None:
    data = lossless_data()
    data["switches"][1]["ports"][1]["cable_length_m"] = 100
    configs = compile_fleet(_intent(data))
    # The shape a switch shares its entries by includes its cables: as if built alone.
    assert configs == compile_fleet(_intent(data), share_shapes=False)
    assert only(configs["leaf2"], "BUFFER_PG")["Ethernet4|3"] == {
        "profile": "SLUICE_pg_lossless_100000_100m_mtu1500_profile"
    }
    assert only(configs["leaf1"], "BUFFER_PG")["Ethernet4|3"] == {
        "profile": "SLUICE_pg_lossless_100000_5m_mtu1500_profile"
    }


@pytest.mark.parametrize(
    ("groups", "ranges"),
    [((3,), ["3"]), ((3, 4), ["3-4"]), ((4, 3, 6), ["3-4", "6"]), ((0, 1, 2, 7), ["0-2", "7"])],
)
def test_neighbouring_groups_are_one_range(groups: tuple[int, ...], ranges: list[str]) -> None:
    assert pg_ranges(groups) == ranges


def test_a_dangling_lossless_profile_is_refused() -> None:
    config = _leaf1(_intent(lossless_data()))
    del config[("BUFFER_PROFILE", "SLUICE_pg_lossless_25000_5m_mtu1500_profile")]
    with pytest.raises(CompiledConfigInvalid, match=r"BUFFER_PG\.profile names BUFFER_PROFILE"):
        check_references(split_by_table(config))
