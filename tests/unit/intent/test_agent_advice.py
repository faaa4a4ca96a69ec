"""Warnings about the agent at the intent's interval: where the switches' agent refuses its
orders for want of fresh counters, and where its measured benefit is nil."""

from __future__ import annotations

from typing import Any

from controller.intent.loader import parse_intent
from controller.intent.models import EcnMode
from controller.sonic.agent_advice import NIL_FROM_MS, agent_warnings

from .intents import intent_data


def _with(ecn: str, interval_ms: int, **counters: Any) -> list[tuple[str, str]]:
    data = intent_data()
    for service_class in data["service_classes"]:
        if service_class.get("ecn") == "mqecn":
            service_class["ecn"] = ecn
    data["fabric"]["agent"] = {"interval_ms": interval_ms, "stale_after_ms": 3 * interval_ms}
    data["fabric"]["counters"] = counters
    return [(w.path, w.reason) for w in agent_warnings(parse_intent(data))]


def test_no_dynamic_class_no_warning() -> None:
    data = intent_data()
    for service_class in data["service_classes"]:
        if service_class.get("ecn") == "mqecn":
            service_class["ecn"] = "per-queue-minimum"
    assert agent_warnings(parse_intent(data)) == []


def test_dynaq_faster_than_the_watermarks_is_refused_by_the_agent() -> None:
    # SONiC polls queue watermarks every 1 s at the fastest (fabric.counters
    # watermark_floor_ms): at 100 ms the agent refuses DynaQ's orders.
    ((path, reason),) = _with("dynaq", 100)
    assert path == "fabric.agent.interval_ms"
    assert "refuse" in reason
    assert "QUEUE_WATERMARK, polled every 1000 ms" in reason
    # A platform that polls watermarks at 100 ms runs it, where DynaQ still helps.
    assert _with("dynaq", 100, watermark_floor_ms=100) == []


def test_hdcq_on_a_platform_without_wred_ecn_counters_is_refused_by_the_agent() -> None:
    ((path, reason),) = _with("hdcq", 100)
    assert path == "fabric.agent.interval_ms"
    assert "WRED_ECN_QUEUE" in reason
    assert "wred_ecn_queue is false" in reason


def test_from_the_measured_interval_on_the_benefit_is_nil() -> None:
    # DynaQ's measured benefit is nil from 1 s on; just under that it runs without warning
    # (on a platform whose watermarks keep up).
    nil_from = NIL_FROM_MS[EcnMode.DYNAQ]
    assert _with("dynaq", nil_from - 1, watermark_floor_ms=100) == []
    ((path, reason),) = _with("dynaq", nil_from)
    assert path == "fabric.agent.interval_ms"
    assert f"measured no benefit over its static fallback from {nil_from} ms on" in reason
    assert len(_with("dynaq", 10_000)) == 1
    # MQ-ECN's is nil at every interval SONiC allows.
    assert NIL_FROM_MS[EcnMode.MQECN] <= 100
    ((_, reason),) = _with("mqecn", 100)
    assert "mqecn at 100 ms" in reason
    # HDCQ's (on a platform publishing WRED/ECN counters) from 1 s on; at 100 ms it helps.
    assert _with("hdcq", 100, wred_ecn_queue=True) == []
    assert len(_with("hdcq", NIL_FROM_MS[EcnMode.HDCQ], wred_ecn_queue=True)) == 1


def test_an_openconfig_switch_is_told_its_dynamic_queues_are_static() -> None:
    data = intent_data()
    data["switches"][1]["dialect"] = "openconfig"
    warnings = [(w.path, w.reason) for w in agent_warnings(parse_intent(data))]
    dialect = [(path, reason) for path, reason in warnings if path.startswith("switches")]
    assert [path for path, _ in dialect] == ["switches[1].dialect"]
    assert "mqecn queues keep the static thresholds the controller computes" in dialect[0][1]
    data["switches"][1]["dialect"] = "sonic"
    assert all(not w.path.startswith("switches") for w in agent_warnings(parse_intent(data)))
