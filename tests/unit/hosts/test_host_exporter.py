"""The host exporter's pure parts: the daemon's netlink parsing and accounting
(``roles/host_exporter/files/sluice_host_exporter.py``), its config and nftables table
(``module_utils/hostexporter.py``), the DSCP rules' ct mark, and what the controller renders.
The e2e test (tests/e2e/test_host_exporter.py) runs the same code against a live kernel."""

from __future__ import annotations

import importlib
import importlib.util
import socket
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from controller.hosts.compile import compile_hosts, exporter_targets
from controller.intent.loader import parse_intent
from tests.unit.intent.helpers import assert_has_problem, problems_of
from tests.unit.intent.intents import intent_data

COLLECTION = Path(__file__).resolve().parents[3] / "ansible_collections/sluice/fabric"
DAEMON_FILE = COLLECTION / "roles/host_exporter/files/sluice_host_exporter.py"


def _daemon() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sluice_host_exporter", DAEMON_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


daemon = _daemon()
config_utils = importlib.import_module(
    "ansible_collections.sluice.fabric.plugins.module_utils.hostexporter"
)
nftrules = importlib.import_module(
    "ansible_collections.sluice.fabric.plugins.module_utils.nftrules"
)
qos = importlib.import_module("ansible_collections.sluice.fabric.plugins.module_utils.hostqos")

# A ctnetlink DESTROY message as a 6.18 kernel sent it (read on the event socket in a
# namespace): 10.9.0.1:49240 -> 10.9.0.2:5000 TCP, 100 000 B of payload sent, with
# nf_conntrack_acct on and ct mark 5.
DESTROY = bytes.fromhex(
    "020000003400018014000180080001000a090001080002000a0900021c000280050001000600000006000200"
    "c058000006000300138800003400028014000180080001000a090002080002000a0900011c00028005000100"
    "06000000060002001388000006000300c058000008000c0037e16842080003000000020e1c0009800c000100"
    "000000000000000a0c00020000000000000188b01c000a800c00010000000000000000080c00020000000000"
    "000001a8100004800c000180050001000700000008000800"
    "00000005"
)

# A ctnetlink update event as the same kernel sent it when a loopback connection
# 127.0.0.1:52886 -> 127.0.0.1:5000 entered TIME_WAIT: tuples, status, timeout, id 0x4f019c62,
# TCP protoinfo (state 7); no counters.
TIME_WAIT_UPDATE = bytes.fromhex(
    "020000003400018014000180080001007f000001080002007f0000011c000280050001000600000006000200"
    "ce96000006000300138800003400028014000180080001007f000001080002007f0000011c00028005000100"
    "06000000060002001388000006000300ce96000008000c004f019c62080003000000000e0800070000000078"
    "300004802c0001800500010007000000050002000a000000050003000a000000060004002700000006000500"
    "23000000"
)


def test_a_destroy_event_gives_the_opener_both_directions_bytes_and_the_mark() -> None:
    flow = daemon.parse_flow(DESTROY)
    assert flow == daemon.FinishedFlow("10.9.0.1", 100_528, 424, 5)
    # the opener sent the larger direction: it counts the flow; the peer does not
    assert daemon.sent_size(flow, opened_here=True) == 100_528
    assert daemon.sent_size(flow, opened_here=False) is None


def test_the_answering_host_counts_a_larger_reply() -> None:
    reply = daemon.FinishedFlow("10.0.0.3", 300, 20_900, 1)
    assert daemon.sent_size(reply, opened_here=False) == 20_900
    assert daemon.sent_size(reply, opened_here=True) is None
    tie = daemon.FinishedFlow("10.0.0.3", 500, 500, 0)
    assert (daemon.sent_size(tie, True), daemon.sent_size(tie, False)) == (500, None)


def test_an_event_without_counters_is_no_flow() -> None:
    # the same message cut before its counters (accounting was off)
    assert daemon.parse_flow(DESTROY[: 4 + 0x34]) is None


def test_a_tcp_connection_ends_at_its_time_wait_update_which_names_the_entry() -> None:
    end = daemon.parse_tcp_end(TIME_WAIT_UPDATE)
    assert end is not None
    assert (end.conntrack_id, end.family) == (0x4F019C62, socket.AF_INET)
    # the GET names the entry by the event's own original tuple, attribute and all
    assert end.lookup == TIME_WAIT_UPDATE[4 : 4 + 0x34]
    request = daemon.get_request(end, seq=7)
    length, kind, flags, seq, _pid = struct.unpack_from("=IHHII", request)
    assert (length, kind, seq) == (len(request), (1 << 8) | 1, 7)
    assert flags == 0x1 | 0x4  # a request, acknowledged (a GET answers once, with no done)
    assert request[16:] == bytes([socket.AF_INET, 0, 0, 0]) + end.lookup
    # the same connection still established is no end; a DESTROY is read by its own rule
    state = TIME_WAIT_UPDATE.index(bytes.fromhex("0500010007000000"))
    established = bytearray(TIME_WAIT_UPDATE)
    established[state + 4] = 3
    assert daemon.parse_tcp_end(bytes(established)) is None
    assert daemon.conntrack_id(DESTROY) == 0x37E16842


def test_a_connection_reported_at_its_end_is_not_counted_at_its_destroy() -> None:
    reported = daemon.Reported(limit=2)
    reported.add(1)
    assert reported.take(1)
    assert not reported.take(1)  # its entry is gone: a later id 1 is another connection
    assert not reported.take(None)
    for conntrack in (2, 3, 4):
        reported.add(conntrack)
    assert (reported.take(2), reported.take(3), reported.take(4)) == (False, True, True)


def test_the_class_is_the_marks_low_byte() -> None:
    classes = ["rpc", "bulk"]
    assert daemon.class_of(0x2, classes) == "bulk"
    assert daemon.class_of(0xABCD0001, classes) == "rpc"  # upper bits belong to others
    assert daemon.class_of(0, classes) == ""
    assert daemon.class_of(3, classes) == ""


def test_band_tops_stand_for_the_packets_on_the_wire() -> None:
    assert daemon.band_top(5, protocol_tcp=False, packet_cap=512, mtu=1500) == 384
    # a TCP band above P is a GSO super-packet whose segments the MSS clamp holds at P
    assert daemon.band_top(24, protocol_tcp=True, packet_cap=512, mtu=1500) == 512
    assert daemon.band_top(24, protocol_tcp=True, packet_cap=None, mtu=1500) == 1500
    assert daemon.band_top(16, protocol_tcp=False, packet_cap=512, mtu=1500) == 1088


def _exporter() -> Any:
    levels = {7: {"level": 7, "dscp": [46], "packet_bytes": None}}
    return daemon.Exporter(host="h1", classes=["rpc"], levels=levels, mtu=1500)


def _lines(page: str, name: str) -> dict[str, float]:
    found = {}
    for line in page.splitlines():
        if line.startswith(name):
            key, value = line.rsplit(" ", 1)
            found[key] = float(value)
    return found


def test_the_page_has_cumulative_buckets_and_per_scrape_level_gauges() -> None:
    exporter = _exporter()
    first = exporter.render({})
    # every class is on the page from the start, at zero (increase() needs a first sample)
    assert _lines(first, "sluice_host_flow_size_bytes_count") == {
        'sluice_host_flow_size_bytes_count{host="h1",class="rpc"}': 0
    }
    exporter.record_flow("rpc", 3_300)
    exporter.record_flow("rpc", 52_000)
    exporter.record_fan_in(7, 2)
    exporter.record_fan_in(7, 3)
    exporter.record_fan_in(7, 1)
    page = exporter.render({7: {(False, 5): 10, (True, 3): 4}})
    buckets = _lines(page, "sluice_host_flow_size_bytes_bucket")
    label = 'sluice_host_flow_size_bytes_bucket{host="h1",class="rpc",le="%s"}'
    assert [buckets[label % le] for le in ("2000", "4000", "32000", "64000", "+Inf")] == [
        0,
        1,
        1,
        2,
        2,
    ]
    assert (
        _lines(page, "sluice_host_flow_size_bytes_sum")[
            'sluice_host_flow_size_bytes_sum{host="h1",class="rpc"}'
        ]
        == 55_300
    )
    assert _lines(page, "sluice_host_qjump_fan_in") == {
        'sluice_host_qjump_fan_in{host="h1",level="7"}': 3
    }
    assert _lines(page, "sluice_host_qjump_max_packet_bytes") == {
        'sluice_host_qjump_max_packet_bytes{host="h1",level="7"}': 384
    }
    # nothing new since that scrape: both gauges start again from zero
    again = exporter.render({7: {(False, 5): 10, (True, 3): 4}})
    assert (
        _lines(again, "sluice_host_qjump_fan_in")['sluice_host_qjump_fan_in{host="h1",level="7"}']
        == 0
    )
    assert (
        _lines(again, "sluice_host_qjump_max_packet_bytes")[
            'sluice_host_qjump_max_packet_bytes{host="h1",level="7"}'
        ]
        == 0
    )


def test_the_largest_packet_counts_only_what_was_sent_since_the_last_scrape() -> None:
    exporter = _exporter()
    exporter.prime({7: {(False, 20): 5}})  # sent before a restart: not this scrape's
    first = exporter.render({7: {(False, 20): 5, (False, 2): 1}})
    assert 'sluice_host_qjump_max_packet_bytes{host="h1",level="7"} 192\n' in first
    # the table was reloaded (counters from zero) and one packet sent since
    reloaded = exporter.render({7: {(False, 2): 1}})
    assert 'sluice_host_qjump_max_packet_bytes{host="h1",level="7"} 0\n' in reloaded
    after = exporter.render({7: {(False, 4): 1}})
    assert 'sluice_host_qjump_max_packet_bytes{host="h1",level="7"} 320\n' in after


def test_large_counts_are_written_whole() -> None:
    exporter = _exporter()
    for _ in range(3):
        exporter.record_flow("rpc", 1_500)
    exporter.flows["rpc"].buckets[-1] = 12_345_678  # a long-lived host's count
    page = exporter.render({})
    assert 'le="1048576000"} 12345678\n' in page


def test_a_level_without_a_dscp_reports_no_fan_in() -> None:
    levels = {0: {"level": 0, "dscp": [], "packet_bytes": None}}
    exporter = daemon.Exporter(host="h1", classes=[], levels=levels, mtu=1500)
    page = exporter.render({})
    assert "sluice_host_qjump_fan_in{" not in page
    assert 'sluice_host_qjump_max_packet_bytes{host="h1",level="0"} 0' in page


def test_lost_events_are_counted() -> None:
    exporter = _exporter()
    exporter.lost = 3
    page = exporter.render({})
    assert _lines(page, "sluice_host_flow_events_lost_total") == {
        'sluice_host_flow_events_lost_total{host="h1"}': 3
    }


DSCP = [
    {"name": "rpc", "dscp": 10, "match": {"protocol": "tcp", "dports": [7000]}},
    {"name": "voice", "dscp": 46, "priority": 0x10017, "match": {"protocol": "udp"}},
]


def test_the_config_names_classes_by_mark_and_levels_by_priority() -> None:
    qjump = {"packet_bytes": 512, "levels": [{"level": 0}, {"level": 7}]}
    config = config_utils.exporter_config({"listen_address": "10.0.0.1"}, DSCP, qjump, "h1")
    assert config["classes"] == ["rpc", "voice"]
    assert config["levels"] == [
        {"level": 0, "dscp": [], "packet_bytes": 512},
        {"level": 7, "dscp": [46], "packet_bytes": 512},
    ]
    assert (config["port"], config["fan_in_window_ms"], config["reap_interval_s"]) == (
        9140,
        10,
        5.0,
    )
    table = config_utils.render_exporter_table(config)
    assert "set l7_senders_v4 { type ipv4_addr; flags dynamic,timeout; timeout 10ms;" in table
    assert "ip dscp { 46 } update @l7_senders_v4 { ip saddr }" in table
    assert "meta priority 1:17 meta l4proto tcp counter name meta length map" in table
    assert '1536-65535 : "l7_other_24"' in table
    assert "l0_senders_v4" in table
    assert "ip dscp { } " not in table  # level 0: no class's DSCP, no input rule


@pytest.mark.parametrize(
    ("exporter", "path", "fragment"),
    [
        ({"listen_address": "h1.example"}, "sluice_host_exporter.listen_address", "not an IP"),
        ({}, "sluice_host_exporter", "listen_address"),
        ({"listen_address": "10.0.0.1", "port": 0}, "sluice_host_exporter.port", "0"),
        (
            {"listen_address": "10.0.0.1", "state_dir": "x/../y"},
            "sluice_host_exporter.state_dir",
            "absolute",
        ),
        (
            {"listen_address": "10.0.0.1", "reap_interval_s": 0},
            "sluice_host_exporter.reap_interval_s",
            "0.1",
        ),
    ],
)
def test_a_bad_exporter_variable_names_its_field(exporter: Any, path: str, fragment: str) -> None:
    with pytest.raises(qos.SchemaError) as caught:
        config_utils.exporter_config(exporter, DSCP, None, "h1")
    assert str(caught.value).startswith(path)
    assert fragment in str(caught.value)


def test_dscp_rules_mark_connections_with_the_class_index_only_when_asked() -> None:
    marked = nftrules.render_dscp_table("sluice_dscp", DSCP, conntrack_marks=True)
    assert "ct mark set ct mark and 0xffffff00 or 1 accept" in marked
    assert "meta priority set 1:17 ct mark set ct mark and 0xffffff00 or 2 accept" in marked
    assert "ct mark" not in nftrules.render_dscp_table("sluice_dscp", DSCP)


def _with_exporter(**exporter: Any) -> dict[str, Any]:
    data = intent_data()
    data["fabric"]["host_exporter"] = exporter
    return data


def test_hosts_get_an_exporter_only_when_the_fabric_runs_one() -> None:
    plain = compile_hosts(parse_intent(intent_data()))
    assert all("sluice_host_exporter" not in v for v in plain.host_vars.values())
    compiled = compile_hosts(parse_intent(_with_exporter(port=9200)))
    assert compiled.host_vars["host2"]["sluice_host_exporter"] == {
        "listen_address": "10.0.0.2",
        "port": 9200,
        "fan_in_window_ms": 10,
        "reap_interval_s": 5.0,
        "mtu_bytes": 1500,
    }
    assert exporter_targets(parse_intent(_with_exporter(port=9200))) == [
        {"targets": ["10.0.0.1:9200"], "labels": {"host": "host1"}},
        {"targets": ["10.0.0.2:9200"], "labels": {"host": "host2"}},
    ]


def test_an_exporter_needs_ip_addresses() -> None:
    data = _with_exporter()
    data["hosts"][0]["address"] = "host1.example"
    assert_has_problem(problems_of(data), "hosts[0].address", "must be an IP address")
