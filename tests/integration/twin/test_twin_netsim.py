"""The twin end to end: the example intent translated and run by the real netsim
binary (``target/debug/netsim``; ``cargo build -p netsim``), a few hundred flows."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.intent.loader import load_intent_file
from controller.intent.models import Intent, Scheduling, SchedulingType
from controller.settings import TwinSettings
from controller.twin.results import compare
from controller.twin.runner import NetsimFailed, run_netsim, run_twin
from controller.twin.translate import Request

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
NETSIM = TwinSettings().netsim
# storage and best-effort share the load: both DWRR queues are backlogged at once on the
# host ports, where the weights decide who is served.
CONTENDED = Request(load=0.8, flows=400, seed=1, mix=(("storage", 0.5), ("best-effort", 0.5)))


@pytest.fixture(scope="module")
def intent() -> Intent:
    return load_intent_file(EXAMPLE)


def _run(intent: Intent, request: Request) -> dict[str, object]:
    return run_twin(intent, request, NETSIM, timeout_s=120)


def test_every_class_is_reported_and_a_seed_repeats(intent: Intent) -> None:
    lines: list[str] = []
    request = Request(flows=300, seed=7)
    first = run_twin(intent, request, NETSIM, timeout_s=120, on_progress=lines.append)
    names = [row["name"] for row in first["classes"]]
    assert names == ["control", "rpc", "storage", "analytics", "best-effort"]
    assert all(row["flows"] == 60 and row["mean_us"] > 0 for row in first["classes"])
    assert first["unfinished"] == 0
    # Every packet crosses a host NIC and, to reach a host, a leaf's port down to it, unless
    # a switch dropped it on the way (the agent's WRED steps drop what is not ECN-capable
    # past the threshold, pure ACKs included, as a switch's do).
    positions = {row["hop"]: row for row in first["queueing"]["positions"]}
    lost = positions["host_nic"]["packets"] - positions["leaf_down"]["packets"]
    assert positions["leaf_down"]["packets"] > 0
    assert 0 <= lost <= first["drops"]
    assert all(r["max_us"] >= r["p99_us"] >= 0 for r in positions.values())
    assert {row["name"] for row in first["queueing"]["classes"]} == set(names)
    assert lines
    assert lines[-1].startswith("netsim: ")
    assert _run(intent, request) == first
    assert _run(intent, Request(flows=300, seed=8)) != first


def test_more_weight_for_storage_speeds_storage_and_slows_best_effort(intent: Intent) -> None:
    # DWRR serves backlogged queues in proportion to their weights (Shreedhar & Varghese,
    # SIGCOMM 1995): raising storage's weight from 50 to 400 (normalised 50:30:20 ->
    # 89:5:4-ish) gives storage a larger share of every contended host port, so its flows
    # finish sooner, and best-effort, whose share shrinks, finishes later.
    heavier = tuple(
        c.model_copy(update={"scheduling": Scheduling(type=SchedulingType.DWRR, weight=400)})
        if c.name == "storage"
        else c
        for c in intent.service_classes
    )
    before = _run(intent, CONTENDED)
    after = _run(intent.model_copy(update={"service_classes": heavier}), CONTENDED)
    delta = {row["name"]: row for row in compare(before, after)["classes"]}
    assert delta["storage"]["mean_us"] < 0
    assert delta["best-effort"]["mean_us"] > 0


def test_switch_ports_run_the_agent_and_per_packet_mqecn_on_request(intent: Intent) -> None:
    # The example's agent polls every 100 ms, longer than this run; at 1 ms it steps
    # throughout. Its thresholds move between the compiled floor and K as the queues'
    # rates do, where vasic's MQ-ECN moves them per packet: a different run, as repeatable.
    agent = intent.fabric.agent.model_copy(update={"interval_ms": 1})
    fast = intent.model_copy(update={"fabric": intent.fabric.model_copy(update={"agent": agent})})
    request = Request(load=0.8, flows=300, seed=1, mix=CONTENDED.mix)
    polled = _run(fast, request)
    assert polled["unfinished"] == 0
    notes = polled["not_modelled"]
    assert isinstance(notes, list)
    assert any("qos-agent's loop" in n and "every 1 ms" in n for n in notes)
    assert _run(fast, request) == polled
    per_packet = _run(
        fast, Request(load=0.8, flows=300, seed=1, mix=CONTENDED.mix, per_packet=True)
    )
    assert per_packet["classes"] != polled["classes"]


def test_a_missing_binary_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(NetsimFailed, match="not found"):
        run_netsim(tmp_path / "netsim", {}, timeout_s=5)


def test_a_refused_config_is_a_typed_error() -> None:
    with pytest.raises(NetsimFailed, match="exited 1"):
        run_netsim(NETSIM, {"qos": {"scheme": "nonsense"}}, timeout_s=30)
