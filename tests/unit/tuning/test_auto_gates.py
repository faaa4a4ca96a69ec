"""Auto mode's gate policy (controller/services/auto_rollout.py) from the intent and what the
hosts reported: which classes get a small-flow FCT gate, and how each is judged."""

from __future__ import annotations

from controller.intent.loader import parse_intent
from controller.intent.models import TunerRollout
from controller.services.auto_rollout import auto_gates, fct_classes, small_flows_finished
from tests.unit.intent.intents import intent_data


def test_only_classes_whose_small_flows_finished_get_an_fct_gate_with_their_objective() -> None:
    data = intent_data()
    data["fabric"]["host_exporter"] = {}
    data["fabric"]["tuning"] = {"mode": "auto", "window_s": 300}
    for service_class in data["service_classes"]:
        if service_class["name"] == "rpc":
            service_class["objective"] = {"p99_fct_us_small": 800}
    intent = parse_intent(data)
    # The hosts saw rpc and storage finish small flows in the last window; bulk and control
    # none (no gate: it could only read no value, and a gate with no value fails).
    finished = {
        small_flows_finished("rpc", 300): 120.0,
        small_flows_finished("storage", 300): 4.0,
        small_flows_finished("bulk", 300): 0.0,
    }
    classes = fct_classes(intent, finished.get)
    assert classes == {"rpc": 800.0, "storage": None}
    policy = auto_gates(TunerRollout(fct_max_increase_pct=30, soak_s=60), classes)
    assert [(g.name, g.comparison, g.threshold, g.service_class) for g in policy.gates] == [
        ("drops", "max_increase_pct", 50.0, None),
        ("agent_fallback", "absolute", 0.0, None),
        ("fct_p99_small.rpc", "objective", 800.0, "rpc"),
        ("fct_p99_small.storage", "max_increase_pct", 30.0, "storage"),
    ]
    assert small_flows_finished("rpc", 300) == (
        'sum(increase(sluice_host_flow_completion_seconds_count{class="rpc",size="small"}[300s]))'
    )


def test_without_the_host_exporter_there_is_no_fct_gate() -> None:
    intent = parse_intent(intent_data())
    assert fct_classes(intent, lambda _: 50.0) == {}
    assert [g.name for g in auto_gates(TunerRollout()).gates] == ["drops", "agent_fallback"]
