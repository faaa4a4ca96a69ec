"""One tuning pass over a whole intent: every rule is reached, with the intent's parameters."""

from __future__ import annotations

import math

from controller.intent.loader import parse_intent
from controller.tuning.evidence import Change
from controller.tuning.summary import (
    FlowSizeSample,
    QjumpLevelSummary,
    QueueSummary,
    TelemetrySummary,
)
from controller.tuning.tune import propose
from tests.unit.intent.intents import intent_data

LINE = 25e9 / 8


def summary() -> TelemetrySummary:
    # The port carries 0.6 of an offered 1.0 and its queue underflows (p50 20 000 B below
    # K/2 = 62 500 B): the ECN rule's evidence that K limits it (controller/tuning/ecn.py).
    def q(name: str, tx: float, marks: float, drops: float = 0.0) -> QueueSummary:
        return QueueSummary(
            "leaf1", "Ethernet0", name, 25, utilisation=0.6, mark_fraction=marks,
            dropped_packets_per_s=drops, tx_bytes_per_s=tx, occupancy_p95_bytes=50_000,
            occupancy_p50_bytes=20_000, offered_utilisation=1.0,
        )  # fmt: skip

    return TelemetrySummary(
        0,
        600,
        queues=(q("storage", 0.5 * LINE, 0.12), q("bulk", 0.02 * LINE, 0.0, drops=3.0)),
        qjump_levels=(QjumpLevelSummary(7, 3, 200),),
        flow_sizes={
            "rpc": FlowSizeSample(
                "rpc", ((10_000, 500), (50_000, 900), (2_000_000, 1000), (math.inf, 1000))
            )
        },
    )


def test_every_rule_speaks_with_the_intents_values() -> None:
    data = intent_data()
    data["service_classes"][2]["scheduling"] |= {"weight_min": 30, "weight_max": 90}
    data["service_classes"][3]["scheduling"] |= {"weight_min": 10, "weight_max": 60}
    intent = parse_intent(data)
    found = {c.parameter: c for c in propose(intent, summary(), now_s=10_000, last_changed={})}
    # ECN: storage marks at 0.6 < 0.9, K-limited -> lambda 1.0 -> 1.25 (25 % step); RTT 40 us.
    assert found["ecn_lambda/storage/25gbps"].proposed == 1.25
    # bulk never marks but drops 3/s: its MQ-ECN queue should run DynaQ.
    assert found["algorithm/bulk"].proposed == "dynaq"
    # Weights: bulk sends only 2 % but drops 3/s, so it counts as backlogged (a lender must
    # neither mark nor drop); storage marks. Both borrow, and split all of the port by their
    # current weights, 60 : 40: no weight changes.
    assert not found["weight/bulk"].applies
    assert not found["weight/storage"].applies
    # QJUMP: n 8 -> 6 (fan-in 3, step), P stays 256.
    assert found["qjump/hosts"].proposed == 6
    # PIAS: rpc's measured flows drifted from websearch.
    assert found["pias/rpc"].applies
    # The off class (control) has no ECN verdict.
    assert not any(key.startswith("ecn_lambda/control") for key in found)


def test_a_class_lambda_keeps_one_interval_for_its_speeds_only() -> None:
    # storage/100gbps changed storage's lambda 60 s ago: storage/25gbps is held as well,
    # although its own key never changed (900 s interval by default). bulk's lambda is its own:
    # its change 60 s ago holds nothing of storage's.
    intent = parse_intent(intent_data())

    def storage_after(last_changed: dict[str, float]) -> Change:
        found = {
            c.parameter: c
            for c in propose(intent, summary(), now_s=10_000, last_changed=last_changed)
        }
        return found["ecn_lambda/storage/25gbps"]

    held = storage_after({"ecn_lambda/storage/100gbps": 9_940})
    assert not held.applies
    assert "minimum interval" in (held.held or "")
    free = storage_after({"ecn_lambda/bulk/100gbps": 9_940})
    assert free.applies
    assert free.proposed == 1.25


def test_a_class_with_its_own_lambda_is_tuned_from_it() -> None:
    # storage already runs lambda 1.25 (its own): the same telemetry asks 1.25 -> 1.5625
    # (0.9 / 0.6 x 1.25 = 1.875 wanted, the 25 % step), not 1.0 -> 1.25.
    data = intent_data()
    storage = next(c for c in data["service_classes"] if c["name"] == "storage")
    storage["ecn_lambda"] = 1.25
    found = {
        c.parameter: c
        for c in propose(parse_intent(data), summary(), now_s=10_000, last_changed={})
    }
    change = found["ecn_lambda/storage/25gbps"]
    assert (change.current, change.proposed) == (1.25, 1.5625)
