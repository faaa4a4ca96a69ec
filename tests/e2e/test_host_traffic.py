"""Behaviour, not just configuration: after the roles run (real Ansible over SSH), traffic
inside the namespaces is held to its QJUMP level's rate, carries its class's DSCP, lands in
the HTB class its priority names, and a long flow's DSCP changes after the first PIAS
threshold. Packets are captured at the receiver with an AF_PACKET socket."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import netns
from tests.e2e.playbook import htb_classes, run_site
from vsonic.tether import start_tethered

pytestmark = pytest.mark.e2e

TRAFFIC = Path(__file__).with_name("traffic.py")
LEVEL3_RATE = 20_000_000  # bit/s
LEVEL7_RATE = 4_000_000
PIAS_THRESHOLD = 100_000  # bytes
SENDER_VARS: dict[str, Any] = {
    "sluice_qjump": {
        "device": "eth0",
        "line_rate_bps": 1_000_000_000,
        "levels": [
            {"level": 0, "rate_bps": 1_000_000_000, "burst_bytes": 30000},
            {"level": 3, "rate_bps": LEVEL3_RATE, "burst_bytes": 3000},
            {"level": 7, "rate_bps": LEVEL7_RATE, "burst_bytes": 1500},
        ],
    },
    "sluice_dscp": [
        {"name": "bulk", "dscp": 46, "match": {"protocol": "tcp", "dports": [5001]}},
        {
            "name": "ctrl",
            "dscp": 48,
            "priority": 0x10017,
            "match": {"protocol": "tcp", "dports": [5002]},
        },
    ],
    "sluice_pias": {
        "thresholds_bytes": [PIAS_THRESHOLD],
        "dscp": [40, 8],
        "match": {"protocol": "tcp", "dports": [7001]},
    },
}


@pytest.fixture(scope="module")
def fabric() -> Iterator[netns.Fabric]:
    with netns.running(2, names=["sender", "receiver"]) as made:
        run = run_site(made, {"sender": SENDER_VARS})
        assert run.returncode == 0, run.stdout[-3000:]
        yield made


def transfer(
    fabric: netns.Fabric, port: int, send_args: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One TCP flow sender -> receiver; returns (sink report, sender report)."""
    receiver = fabric.host("receiver").address
    sink = start_tethered(
        fabric.host_exec(
            "receiver",
            [sys.executable, str(TRAFFIC), "sink", "--bind", receiver, "--port", str(port)],
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sink.stdout is not None
        assert sink.stdout.readline().strip() == "ready"
        sent = subprocess.run(
            fabric.host_exec(
                "sender",
                [
                    sys.executable,
                    str(TRAFFIC),
                    "send",
                    "--dst",
                    receiver,
                    "--port",
                    str(port),
                    *send_args,
                ],
            ),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        out, _ = sink.communicate(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    return json.loads(out.splitlines()[-1]), json.loads(sent.stdout.splitlines()[-1])


def class_bytes(fabric: netns.Fabric, classid: str) -> int:
    return int(htb_classes(fabric, "sender")[classid]["sent_bytes"])


def data_packets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Captured data packets in sequence order, with offsets relative to the first data byte."""
    syn = next(p for p in report["packets"] if p["syn"])
    packets = [dict(p) for p in report["packets"] if p["payload"] > 0]
    for packet in packets:
        packet["start"] = (packet["seq"] - syn["seq"] - 1) % 2**32
        packet["end"] = packet["start"] + packet["payload"]
    return sorted(packets, key=lambda p: p["start"])


def test_level_rate_holds_and_packets_carry_the_class_dscp(fabric: netns.Fabric) -> None:
    before = class_bytes(fabric, "1:13")
    # SO_PRIORITY 0x10013 = class 1:13 = QJUMP level 3 (0x10 + 3).
    sink, sender = transfer(fabric, 5001, ["--priority", "0x10013", "--seconds", "3"])
    # Goodput over the last two seconds (the first one holds slow start and the HTB burst).
    window = [(t, n) for t, n in sink["timeline"] if t >= 1.0]
    elapsed = window[-1][0] - window[0][0]
    goodput = sum(n for _, n in window[1:]) / elapsed  # bytes/s
    # HTB meters whole frames: payload mss plus 12 B TCP timestamps, 20 B TCP, 20 B IPv4 and
    # 14 B Ethernet headers. At 20 Mbit/s: 2.5e6 B/s x 1448/1514 = 2.39e6 B/s for mss 1448.
    mss = sender["mss"]
    expected = LEVEL3_RATE / 8 * mss / (mss + 66)
    assert abs(goodput - expected) <= 0.10 * expected, (goodput, expected)
    packets = data_packets(sink)
    assert len(packets) > 100
    assert {p["dscp"] for p in packets} == {46}
    # The whole flow went through level 3's class (plus headers), not another level.
    moved = class_bytes(fabric, "1:13") - before
    assert sender["sent"] <= moved <= 1.10 * sender["sent"]


def test_class_priority_set_by_nftables_selects_the_level(fabric: netns.Fabric) -> None:
    before7, before0 = class_bytes(fabric, "1:17"), class_bytes(fabric, "1:10")
    # No SO_PRIORITY on this socket: the ctrl class rule sets skb->priority 1:17 itself.
    sink, sender = transfer(fabric, 5002, ["--bytes", "200000"])
    assert {p["dscp"] for p in data_packets(sink)} == {48}
    moved7 = class_bytes(fabric, "1:17") - before7
    assert sender["sent"] <= moved7 <= 1.10 * sender["sent"]
    # The default class (level 0) saw none of it: only SSH-sized chatter, if anything.
    assert class_bytes(fabric, "1:10") - before0 < 0.05 * sender["sent"]


def test_long_flow_is_demoted_after_the_first_pias_threshold(fabric: netns.Fabric) -> None:
    # Level 3's rate keeps segments small, so the switch point is sharp in the capture.
    sink, sender = transfer(
        fabric, 7001, ["--priority", "0x10013", "--bytes", str(4 * PIAS_THRESHOLD)]
    )
    packets = data_packets(sink)
    assert packets[-1]["end"] == sender["sent"] == 4 * PIAS_THRESHOLD
    early = [p["dscp"] for p in packets if p["end"] <= PIAS_THRESHOLD // 2]
    late = [p["dscp"] for p in packets if p["start"] >= PIAS_THRESHOLD]
    assert early
    assert late
    assert set(early) == {40}  # stage 0
    assert set(late) == {8}  # stage 1: ct bytes count headers too, so past T is surely demoted
    # Demotion is one-way: once a packet carries stage 1, no later one carries stage 0.
    stages = [p["dscp"] for p in packets]
    first_demoted = stages.index(8)
    assert set(stages[first_demoted:]) == {8}
    assert packets[first_demoted]["end"] > PIAS_THRESHOLD // 2
