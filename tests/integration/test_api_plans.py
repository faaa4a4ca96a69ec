"""Plans (recorded running state -> desired) and diffs between versions, over the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.intent.loader import parse_intent
from controller.services.plans import PlanService
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import apply_plan
from controller.sonic.discovery import SwitchRead, discover
from controller.sonic.model import Op, Plan, SwitchConfig
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import discoveries, intents
from controller.store.snapshots import decode_config, decode_fleet
from tests.integration.conftest import StepClock, put_intent, small_intent
from tests.support.lossless import SPECTRUM_2


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


# buffermgrd's lookup-table profile for leaf1's 25 Gb/s port with a 5 m cable: the row of
# SONiC's vs image (Force10-S6000) pg_profile_lookup.ini, its threshold as given.
LEAF1_LOOKUP = "pg_lossless_25000_5m_profile"


def _discovered_traditional(db_url: str, dynamic_th: str, at: datetime) -> None:
    """A finished discovery of leaf1 in SONiC's traditional buffer model with a 5 m cable,
    buffermgrd's profile for its port (``dynamic_th`` as given) and a started watchdog."""
    config: SwitchConfig = {
        ("PORT", "Ethernet0"): {"speed": "25000", "admin_status": "up"},
        ("DEVICE_METADATA", "localhost"): {"hostname": "leaf1", "buffer_model": "traditional"},
        ("CABLE_LENGTH", "AZURE"): {"Ethernet0": "5m"},
        ("PFC_WD", "GLOBAL"): {"POLL_INTERVAL": "200"},
        ("BUFFER_PROFILE", LEAF1_LOOKUP): {
            "pool": "ingress_lossless_pool",
            "xon": "18432",
            "xoff": "55120",
            "size": "56368",
            "dynamic_th": dynamic_th,
        },
    }
    found = discover("leaf1", SwitchRead(config, {}, {}, 3)).as_json()
    engine = make_engine(db_url, pool_size=1)
    try:
        with make_sessions(engine).begin() as session:
            row = discoveries.insert(
                session=session, request={}, requested_by="test", request_id="r", at=at
            )
            result = {"switches": [found]}
            discoveries.finish(session=session, discovery_id=row.id, result=result, at=at)
    finally:
        engine.dispose()


def _lossless_web() -> dict[str, Any]:
    """The small intent with its web class (queue 2) lossless on PFC priority 2, DCQCN's
    Kmax 200 000 B, Spectrum-2's headroom figures."""
    proposed = small_intent()
    proposed["fabric"]["lossless"] = dict(SPECTRUM_2)
    for service_class in proposed["service_classes"]:
        if service_class["name"] == "web":
            service_class |= {"ecn": "standard", "lossless": {"pfc_priority": 2}}
    return proposed


def test_kmax_above_the_xoff_point_of_buffermgrds_profile_is_a_422_naming_it(
    stored: TestClient, auth: Any, db_url: str
) -> None:
    # 2 000 000 B buffer, buffermgrd's size 56 368 B: shared pool 1 943 632 B. dynamic_th
    # -4 (alpha 1/16): XOFF point 1/17 of it, 114 331 B, below Kmax 200 000 B: refused.
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    _discovered_traditional(db_url, "-4", t0)
    request = {"intent": _lossless_web(), "switches": ["leaf1"]}
    refused = stored.post("/api/v1/plans", json=request, headers=auth["viewer"])
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["type"] == "urn:sluice:problem:ecn-kmax-above-buffermgrd-s-xoff-point"
    ((field, reason),) = [(e["field"], e["reason"]) for e in problem["errors"]]
    assert field == "service_classes[1].lossless.kmax_bytes"
    assert reason.startswith(
        "BuffermgrdKmaxAboveXoff: leaf1 Ethernet0 priority 2: Kmax 200000 B is not below the "
        f"XOFF point 114331 B that buffermgrd's {LEAF1_LOOKUP} gives"
    )
    # Stored, the intent's own figures accept it; a rollout of it is refused as the plan is.
    stored_lossless = put_intent(stored, auth["operator"], _lossless_web(), 1)
    assert stored_lossless.status_code == 200, stored_lossless.text
    started = stored.post(
        "/api/v1/rollouts", json={"allow_port_flaps": True}, headers=auth["operator"]
    )
    assert started.status_code == 422, started.text
    assert started.json()["type"] == problem["type"]
    assert started.json()["errors"] == problem["errors"]
    # Discovered again with the image's own row, dynamic_th -3 (1/9 of the pool, 215 959 B):
    # planned, and the port's note says whose figures were checked.
    _discovered_traditional(db_url, "-3", t0 + timedelta(minutes=1))
    body = _planned_request(stored, auth, request)
    notes = [
        w["reason"] for w in body["warnings"] if w["field"] == "switches.leaf1.ports.Ethernet0"
    ]
    assert len(notes) == 1
    assert notes[0].startswith(
        f"Ethernet0: headroom is buffermgrd's (BUFFER_PG|Ethernet0|2 on {LEAF1_LOOKUP}"
    )
    assert "the lossless invariants are checked with its figures" in notes[0]


def _planned_request(client: TestClient, auth: Any, request: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/api/v1/plans", json=request, headers=auth["viewer"])
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body
