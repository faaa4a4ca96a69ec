"""The switch demo's intent: the example with a short reconcile interval, each switch on a
free gNMI port."""

from __future__ import annotations

from pathlib import Path

from controller.intent.loader import parse_intent
from lab.demo_switches import demo_intent

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


def test_taken_ports_are_replaced_and_the_loop_runs_often() -> None:
    taken = {50052, 50054}
    document = demo_intent(EXAMPLE, 3.0, lambda port: port not in taken)
    ports = {s["name"]: s["gnmi"]["port"] for s in document["switches"]}
    assert ports["leaf1"] == 50051
    assert ports["spine1"] == 50053
    assert ports["leaf2"] not in taken
    assert ports["spine2"] not in taken
    assert len(set(ports.values())) == 4
    intent = parse_intent(document)  # still a valid intent
    assert intent.fabric.reconcile.interval_s == 3.0
    assert intent.fabric.reconcile.mode.value == "correct"
