"""The tuner's proposals never take a switch port down: a lambda or weight it proposes is a
field change on profiles the queues already use (stable names, controller/sonic/), and a
repoint of QUEUE or BUFFER_QUEUE would flap the port on a SONiC switch
(controller/sonic/gcu.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.intent.loader import dump_intent, load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.services.tuning import ports_taken_down, switch_plans
from controller.tuning.apply import apply_changes
from controller.tuning.summary import QueueSummary, TelemetrySummary
from controller.tuning.tune import propose
from tests.support.lossless import with_lossless_storage

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
LINE = 25e9 / 8
# The demo's weight ranges (lab/demo_tuner.py): the tenants may move.
RANGES = {"storage": (20, 70), "analytics": (15, 75), "best-effort": (10, 40)}


def example_with_ranges() -> Intent:
    data: dict[str, Any] = dump_intent(load_intent_file(EXAMPLE))
    for service_class in data["service_classes"]:
        if service_class["name"] in RANGES:
            low, high = RANGES[service_class["name"]]
            service_class["scheduling"] |= {"weight_min": low, "weight_max": high}
    return parse_intent(data)


def summary() -> TelemetrySummary:
    """leaf1 Ethernet0 as in the demo's tuner step: storage backlogged and marking,
    analytics a light stream, best-effort idle; rpc (standard ECN) marks while its queue
    underflows below K/2 with unmet demand, which asks for a larger lambda."""

    def q(name: str, tx: float, marks: float, p50: float) -> QueueSummary:
        return QueueSummary(
            "leaf1", "Ethernet0", name, 25, utilisation=0.6, mark_fraction=marks,
            dropped_packets_per_s=0.0, tx_bytes_per_s=tx, occupancy_p95_bytes=2 * p50,
            occupancy_p50_bytes=p50, offered_utilisation=1.0,
        )  # fmt: skip

    return TelemetrySummary(
        0,
        600,
        queues=(
            q("storage", 0.5 * LINE, 0.12, 20_000),
            q("analytics", 0.02 * LINE, 0.0, 0),
            q("best-effort", 0.0, 0.0, 0),
            q("rpc", 0.05 * LINE, 0.2, 20_000),
        ),
    )


def test_a_tuner_proposal_of_lambdas_and_weights_takes_no_port_down() -> None:
    intent = example_with_ranges()
    changes = propose(intent, summary(), now_s=10_000, last_changed={})
    applied = apply_changes(intent, changes).applied
    kinds = {c.parameter.split("/")[0] for c in applied}
    assert {"weight", "ecn_lambda"} <= kinds, [c.parameter for c in changes]
    tuned = apply_changes(intent, changes).intent
    plans = switch_plans(intent, tuned)
    assert plans, "the proposal changes the switches"
    for plan in plans:
        tables = {op["table"] for op in plan["ops"]}
        assert tables & {"WRED_PROFILE", "SCHEDULER"}, plan["switch"]
        assert not tables & {"QUEUE", "BUFFER_QUEUE", "PORT_QOS_MAP"}, plan["switch"]
        assert plan["port_flaps"] == [], plan["switch"]
        assert plan["ports_down"] == [], plan["switch"]
    assert ports_taken_down(plans) == ""


def test_a_dcqcn_ramp_proposal_takes_no_port_down() -> None:
    # The example intent's storage made lossless (tests/support/lossless.py); its ports sent
    # PFC pauses: the rule marks earlier, a field change of the lossless queue's
    # WRED_PROFILE|SLUICE_DCQCN_Q3, which no queue is repointed for.
    intent = with_lossless_storage(load_intent_file(EXAMPLE))
    paused = QueueSummary(
        "leaf1", "Ethernet0", "storage", 25, utilisation=0.9, mark_fraction=0.2,
        pfc_tx_pause_per_s=4.0, pfc_rx_pause_per_s=0.0,
    )  # fmt: skip
    changes = propose(intent, TelemetrySummary(0, 600, queues=(paused,)), now_s=10_000,
                      last_changed={})  # fmt: skip
    applied = apply_changes(intent, changes).applied
    assert [c.parameter for c in applied] == ["dcqcn/storage"]
    plans = switch_plans(intent, apply_changes(intent, changes).intent)
    assert plans, "the proposal changes the switches"
    for plan in plans:
        keys = {(op["table"], op["key"]) for op in plan["ops"]}
        assert ("WRED_PROFILE", "SLUICE_DCQCN_Q3") in keys, plan["switch"]
        # Beside the ramp only the agent's orders' version moves (every compile change does).
        assert {t for t, _ in keys} == {"WRED_PROFILE", "SLUICE_AGENT"}, plan["switch"]
        assert plan["port_flaps"] == [], plan["switch"]
        assert plan["ports_down"] == [], plan["switch"]
