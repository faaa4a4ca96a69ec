"""Plans (recorded running state -> desired) and diffs between versions, over the API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.intent.loader import parse_intent
from controller.services.plans import PlanService
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import apply_plan
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import intents
from controller.store.snapshots import decode_config, decode_fleet
from tests.integration.conftest import StepClock, put_intent, small_intent


@pytest.fixture
def plan_service(db_url: str) -> Iterator[PlanService]:
    engine = make_engine(db_url, pool_size=1)
    yield PlanService(make_sessions(engine), clock=StepClock())
    engine.dispose()


def _desired(db_url: str, version: int) -> dict[str, SwitchConfig]:
    engine = make_engine(db_url, pool_size=1)
    try:
        with make_sessions(engine)() as session:
            return decode_fleet(intents.desired_states(session=session, version=version))
    finally:
        engine.dispose()


def _plan_of(body: dict[str, Any]) -> Plan:
    """Rebuild a Plan from its JSON so the diff's own apply_plan can replay it."""
    ops = tuple(
        Op(o["kind"], o["table"], o["key"], o["fields"], o["old_fields"], o["whole_entry"])
        for o in body["ops"]
    )
    return Plan(body["switch"], ops)


def _without_bulk() -> dict[str, Any]:
    intent = small_intent()
    intent["service_classes"] = [c for c in intent["service_classes"] if c["name"] != "bulk"]
    return intent


@pytest.fixture
def stored(client: TestClient, auth: Any) -> TestClient:
    assert put_intent(client, auth["operator"], small_intent(), 0).status_code == 201
    return client


PORT_CRITICAL = {"QUEUE", "BUFFER_QUEUE", "PORT_QOS_MAP"}


def test_with_nothing_recorded_the_plan_adds_every_desired_entry(
    stored: TestClient, auth: Any, db_url: str
) -> None:
    body = stored.post("/api/v1/plans", json={}, headers=auth["viewer"]).json()
    assert (body["base_version"], body["proposed"]) == (1, False)
    desired = _desired(db_url, 1)
    assert [p["switch"] for p in body["plans"]] == sorted(desired)
    for plan in body["plans"]:
        assert {op["kind"] for op in plan["ops"]} == {"add"}
        added = {(op["table"], op["key"]): op["fields"] for op in plan["ops"]}
        assert added == desired[plan["switch"]]
        assert plan["counts"]["add"] == len(desired[plan["switch"]])
        # Every QUEUE, BUFFER_QUEUE and PORT_QOS_MAP entry added takes its port down on a
        # SONiC switch: the plan names each, with its port.
        critical = [op for op in plan["ops"] if op["table"] in PORT_CRITICAL]
        assert critical
        assert [(f["table"], f["key"]) for f in plan["port_flaps"]] == [
            (op["table"], op["key"]) for op in critical
        ]
        ports = {op["key"].split("|")[0] for op in critical}
        assert sorted(plan["ports_down"]) == sorted(ports)  # each port once
        assert plan["gcu_changes"] >= len(critical) + 2 * len(plan["ports_down"])


def test_a_switch_running_its_desired_state_has_an_empty_plan(
    stored: TestClient, auth: Any, db_url: str, plan_service: PlanService
) -> None:
    leaf1 = _desired(db_url, 1)["leaf1"]
    plan_service.record_running_state(switch="leaf1", config=leaf1, source="test")
    body = stored.post("/api/v1/plans", json={}, headers=auth["viewer"]).json()
    by_switch = {p["switch"]: p for p in body["plans"]}
    assert by_switch["leaf1"]["ops"] == []
    assert by_switch["spine1"]["ops"] != []


def test_a_proposed_intent_is_planned_against_the_running_state(
    stored: TestClient, auth: Any, db_url: str, plan_service: PlanService
) -> None:
    plan_service.record_running_state(
        switch="leaf1", config=_desired(db_url, 1)["leaf1"], source="test"
    )
    body = stored.post(
        "/api/v1/plans",
        json={"intent": _without_bulk(), "switches": ["leaf1"]},
        headers=auth["viewer"],
    ).json()
    assert body["proposed"] is True
    [plan] = body["plans"]
    ops = {(op["table"], op["key"]): op for op in plan["ops"]}
    # Class "bulk" owned queue 1: sluice's fields on QUEUE|Ethernet0|1 go, none are written.
    assert ops[("QUEUE", "Ethernet0|1")]["kind"] == "delete"
    assert not [op for op in plan["ops"] if op["key"] == "Ethernet0|1" and op["kind"] != "delete"]
    # Replaying the plan on what leaf1 runs gives the proposal's desired state.
    proposal = compile_fleet(parse_intent(_without_bulk()))["leaf1"]
    assert apply_plan(_desired(db_url, 1)["leaf1"], _plan_of(plan)) == proposal
    # Nothing was stored: the head is still version 1.
    assert stored.get("/api/v1/intent", headers=auth["viewer"]).headers["ETag"] == '"1"'


def test_unknown_switches_and_bad_proposals_are_refused(stored: TestClient, auth: Any) -> None:
    missing = stored.post("/api/v1/plans", json={"switches": ["nope"]}, headers=auth["viewer"])
    assert missing.status_code == 404
    bad = small_intent()
    bad["service_classes"][0]["queue"] = 9
    refused = stored.post("/api/v1/plans", json={"intent": bad}, headers=auth["viewer"])
    assert refused.status_code == 422
    assert "service_classes[0].queue" in [e["field"] for e in refused.json()["errors"]]


def test_diff_replays_one_version_into_the_next(stored: TestClient, auth: Any, db_url: str) -> None:
    assert put_intent(stored, auth["operator"], _without_bulk(), 1).status_code == 200
    v1, v2 = _desired(db_url, 1), _desired(db_url, 2)
    forward = stored.get("/api/v1/diff", headers=auth["viewer"]).json()
    assert (forward["from_version"], forward["to_version"]) == (1, 2)
    for body in forward["plans"]:
        switch = body["switch"]
        assert apply_plan(v1[switch], _plan_of(body)) == v2[switch]
    back = stored.get("/api/v1/diff?from=2&to=1&switch=leaf1", headers=auth["viewer"]).json()
    [body] = back["plans"]
    assert apply_plan(v2["leaf1"], _plan_of(body)) == v1["leaf1"]


def test_diff_from_zero_adds_everything_and_unknown_versions_are_404(
    stored: TestClient, auth: Any, db_url: str
) -> None:
    first = stored.get("/api/v1/diff?from=0&to=1", headers=auth["viewer"]).json()
    desired = _desired(db_url, 1)
    assert {p["switch"]: p["counts"]["add"] for p in first["plans"]} == {
        name: len(config) for name, config in desired.items()
    }
    assert stored.get("/api/v1/diff?to=5", headers=auth["viewer"]).status_code == 404


def test_snapshot_encoding_splits_on_the_first_bar_only() -> None:
    stored = {"QUEUE|Ethernet0|3": {"scheduler": "S"}, "SLUICE_AGENT|global": {"x": "1"}}
    assert decode_config(stored) == {
        ("QUEUE", "Ethernet0|3"): {"scheduler": "S"},
        ("SLUICE_AGENT", "global"): {"x": "1"},
    }


def _dynamic(ecn: str) -> dict[str, Any]:
    """The small intent with its DWRR classes on a dynamic ECN algorithm."""
    proposed = small_intent()
    for service_class in proposed["service_classes"]:
        if service_class["scheduling"]["type"] == "DWRR":
            service_class["ecn"] = ecn
    return proposed


def _planned(client: TestClient, auth: Any, proposed: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/api/v1/plans", json={"intent": proposed}, headers=auth["viewer"])
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_a_plan_warns_where_the_agent_will_do_no_good(stored: TestClient, auth: Any) -> None:
    # The stored intent runs no agent: no warning. A proposed DynaQ at the default 100 ms
    # is accepted and planned, with the agent's own refusal named (SONiC polls watermarks
    # every 1 s at the fastest, controller.sonic.agent_advice).
    body = stored.post("/api/v1/plans", json={}, headers=auth["viewer"]).json()
    assert body["warnings"] == []
    body = _planned(stored, auth, _dynamic("dynaq"))
    assert body["proposed"] is True
    assert body["plans"]
    (warning,) = body["warnings"]
    assert warning["field"] == "fabric.agent.interval_ms"
    assert "QUEUE_WATERMARK" in warning["reason"]


def test_an_openconfig_switch_is_planned_in_its_dialect_and_warned_of_static_thresholds(
    stored: TestClient, auth: Any
) -> None:
    proposed = _dynamic("mqecn")
    proposed["switches"][1]["dialect"] = "openconfig"
    body = _planned(stored, auth, proposed)
    openconfig = proposed["switches"][1]["name"]
    by_switch = {p["switch"]: p for p in body["plans"]}
    tables = {op["table"] for op in by_switch[openconfig]["ops"]}
    assert "/qos/queues/queue" in tables
    assert not [t for t in tables if not t.startswith("/qos/")]  # no CONFIG_DB table
    assert by_switch[openconfig]["ports_down"] == []
    sonic = {op["table"] for op in by_switch[proposed["switches"][0]["name"]]["ops"]}
    assert "QUEUE" in sonic
    static = [w for w in body["warnings"] if w["field"] == "switches[1].dialect"]
    assert len(static) == 1
    assert "static thresholds the controller computes" in static[0]["reason"]


def test_a_platforms_approximations_are_in_the_plan_and_what_it_cannot_take_is_refused(
    stored: TestClient, auth: Any
) -> None:
    proposed = _dynamic("mqecn")
    proposed["switches"][1].update(dialect="openconfig", platform="cisco_8000")
    body = _planned(stored, auth, proposed)
    platform = [w for w in body["warnings"] if w["field"] == "switches[1].platform"]
    assert ["ecn_same_min_max_threshold_unsupported" in w["reason"] for w in platform] == [
        True,
        False,
        False,
    ]
    assert all("cisco_8000" in w["reason"] for w in platform)
    refused = _dynamic("dynaq")
    refused["switches"][1].update(dialect="openconfig", platform="cisco_8000")
    answer = stored.post("/api/v1/plans", json={"intent": refused}, headers=auth["viewer"])
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert [e["field"] for e in problem["errors"]] == ["switches[1].platform"]
    assert "drop_weight_leaves_unsupported" in problem["errors"][0]["reason"]
