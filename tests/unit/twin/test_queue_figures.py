"""The twin's per-queue figures (what a switch's counters of a class's queue would read, per
port kind) from netsim's per-hop rows, with worked numbers; and each intent port's kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.intent.loader import load_intent_file
from controller.twin.results import queue_figures, result
from controller.twin.translate import Request, port_kinds, translate

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
# 2 leaves x 2 hosts at 25 Gb/s (4 host-facing ports), 1 spine at 100 Gb/s (2 up, 2 spine).
TOPOLOGY = {
    "leaves": 2,
    "spines": 1,
    "hosts_per_leaf": 2,
    "host_link_bps": 25e9,
    "fabric_link_bps": 100e9,
}


def row(hop: str, klass: int, byte_count: float, **extra: float) -> dict[str, float | str]:
    base: dict[str, float | str] = {
        "hop": hop,
        "class": klass,
        "packets": 1000,
        "bytes": byte_count,
        "marked_packets": 0,
        "dropped_packets": 0,
        "p50_us": 0.0,
        "p95_us": 0.0,
    }
    return {**base, **extra}


def test_rates_are_over_the_arrival_span_and_per_port_of_the_kind() -> None:
    # Arrivals over 2 s, the drain to 3 s not counted. Class 0 at leaf_down: 4 ports x 2 s x
    # 0.5 x 25e9 / 8 B/s = 12.5e9 B; class 1: 0.1 of the line, 2.5e9 B. Class 0 at leaf_up:
    # 2 ports x 2 s x 0.2 x 100e9 / 8 = 10e9 B.
    summary = {
        "arrivals_ns": [1e9, 3e9],
        "simulated_ns": 4e9,
        "hops": {
            "by_class": [
                row("host_nic", 0, 99e9),  # a host's NIC is no switch queue
                row("leaf_down", 0, 12.5e9, marked_packets=50, dropped_packets=8, p95_us=8.0),
                row("leaf_down", 1, 2.5e9, p50_us=0.48),
                row("leaf_up", 0, 10e9),
            ]
        },
    }
    figures = {(f["name"], f["kind"]): f for f in queue_figures(summary, ("bulk", "rpc"), TOPOLOGY)}
    # Every class on every kind: rpc crossed no uplink and no spine, so zeros there.
    assert set(figures) == {
        (c, k) for c in ("bulk", "rpc") for k in ("leaf_down", "leaf_up", "spine")
    }
    assert figures["rpc", "spine"]["class_utilisation"] == 0.0
    assert figures["rpc", "spine"]["mark_fraction"] == 0.0
    bulk = figures["bulk", "leaf_down"]
    assert bulk["utilisation"] == pytest.approx(0.6)  # both classes' bytes on the port
    assert bulk["class_utilisation"] == pytest.approx(0.5)
    assert bulk["tx_bytes_per_s"] == pytest.approx(12.5e9 / 2 / 4)
    assert bulk["mark_fraction"] == pytest.approx(0.05)  # 50 of 1000 sent
    assert bulk["dropped_packets_per_s"] == pytest.approx(1.0)  # 8 / 2 s / 4 ports
    # 8 us of queueing at 25 Gb/s is 25 000 B ahead of the packet.
    assert bulk["occupancy_p95_bytes"] == pytest.approx(25_000.0)
    assert figures["rpc", "leaf_down"]["occupancy_p50_bytes"] == pytest.approx(1_500.0)
    assert figures["bulk", "leaf_up"]["utilisation"] == pytest.approx(0.2)
    # A result carries them only when it knows the topology.
    assert result(summary, ("bulk", "rpc"), ())["queues"] == []
    assert len(result(summary, ("bulk", "rpc"), (), topology=TOPOLOGY)["queues"]) == 6


def test_without_arrivals_the_simulated_time_is_the_span() -> None:
    summary = {"simulated_ns": 2e9, "hops": {"by_class": [row("leaf_down", 0, 12.5e9)]}}
    down = next(f for f in queue_figures(summary, ("bulk",), TOPOLOGY) if f["kind"] == "leaf_down")
    assert down["class_utilisation"] == pytest.approx(0.5)
    assert queue_figures({"hops": {"by_class": [row("leaf_down", 0, 1.0)]}}, ("b",), TOPOLOGY) == []


def test_each_intent_port_has_the_kind_the_twin_runs_it_as() -> None:
    intent = load_intent_file(EXAMPLE)
    kinds = port_kinds(intent)
    # leaf1: its two 100 Gb/s ports face the two spines, the 25 Gb/s ones the hosts.
    assert kinds["leaf1", "Ethernet0"] == "leaf_down"
    assert kinds["leaf1", "Ethernet48"] == "leaf_up"
    spine = next(s for s in intent.switches if s.role.value == "spine")
    assert {kinds[spine.name, p.name] for p in spine.ports} == {"spine"}
    assert len(kinds) == sum(len(s.ports) for s in intent.switches)
    # The twin's topology has as many ports of each kind as the intent where hosts fill
    # the leaves.
    topology = translate(intent, Request(flows=10)).config["topology"]
    downs = sum(1 for kind in kinds.values() if kind == "leaf_down")
    assert downs >= topology["leaves"] * topology["hosts_per_leaf"]
