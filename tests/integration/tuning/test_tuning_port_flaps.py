"""Auto mode never takes a switch port down: a proposal whose plan repoints a queue (a QUEUE
change: SONiC's config updater flaps the port, controller/sonic/gcu.py) waits for an
operator; a lambda or weight proposal (profiles changed in place) is approved at once.
Real PostgreSQL (migrated); the telemetry summary is given by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.tuning import TuningService
from controller.store.db import make_engine, make_sessions
from controller.tuning.summary import QueueSummary, TelemetrySummary
from tests.integration.conftest import small_intent
from tests.integration.tuning.history import HandClock

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")
LINE = 25e9 / 8
START = datetime(2026, 12, 1, tzinfo=UTC)


def static_fabric() -> dict[str, Any]:
    """The small intent (leaf1's one 25 Gb/s port) with two static-ECN classes, the tuner in
    auto mode."""
    intent = small_intent()
    intent["fabric"]["tuning"] = {"mode": "auto"}
    intent["switches"] = intent["switches"][:1]
    intent["hosts"] = []
    intent["service_classes"] = [
        {"name": "rpc", "dscp": [46], "queue": 6, "scheduling": {"type": "STRICT"}},
        {"name": "bulk", "dscp": [10], "queue": 1, "scheduling": {"type": "DWRR", "weight": 30}},
    ]
    for service_class in intent["service_classes"]:
        service_class["ecn"] = "standard"
    return intent


def queue(name: str, marks: float, drops: float, tx: float) -> QueueSummary:
    return QueueSummary(
        "leaf1", "Ethernet0", name, 25, utilisation=0.6, mark_fraction=marks,
        dropped_packets_per_s=drops, tx_bytes_per_s=tx, occupancy_p95_bytes=40_000,
        occupancy_p50_bytes=20_000, offered_utilisation=1.0,
    )  # fmt: skip


# rpc marks while its queue underflows with unmet demand: a larger lambda (in place).
LAMBDA = TelemetrySummary(0, 600, queues=(queue("rpc", 0.2, 0.0, 0.5 * LINE),))
# bulk never marks but drops: its senders ignore ECN, DynaQ fits (a queue of its own
# profile, SLUICE_Q_Ethernet0_1: the queue is repointed, the port taken down).
DYNAQ = TelemetrySummary(0, 600, queues=(queue("bulk", 0.0, 3.0, 0.3 * LINE),))


def test_auto_mode_approves_in_place_changes_and_leaves_port_flaps_to_an_operator(
    db_url: str,
) -> None:
    engine = make_engine(db_url, pool_size=2)
    try:
        sessions = make_sessions(engine)
        clock = HandClock(START)
        intents = IntentService(sessions, clock=clock)
        intents.replace(static_fabric(), expected=0, actor=ACTOR, reason="auto")
        summaries = [LAMBDA, DYNAQ]
        service = TuningService(
            sessions, intents, lambda _at, _window: summaries.pop(0), clock=clock
        )

        tuned = service.run(ACTOR)
        assert [c["parameter"] for c in tuned.changes] == ["ecn_lambda/rpc/25gbps"]
        assert (tuned.state, tuned.new_version, tuned.decided_by) == ("approved", 2, "tuner")
        assert all(plan["ports_down"] == [] for plan in tuned.plans)

        held = service.run(ACTOR)
        assert [c["parameter"] for c in held.changes] == ["algorithm/bulk"]
        assert held.state == "pending"  # an operator's to approve
        assert held.new_version is None
        (plan,) = held.plans
        assert plan["ports_down"] == ["Ethernet0"]
        assert "auto mode left it for an operator" in held.reason
        assert "leaf1 (Ethernet0)" in held.reason
        assert intents.head() == 2
    finally:
        engine.dispose()
