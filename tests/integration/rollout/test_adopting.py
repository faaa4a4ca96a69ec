"""Adopting a running fabric, end to end on virtual switches: the API, the real worker
(``controller.worker.build_worker``) and PostgreSQL, with the example fabric's leaf1 already
carrying its operator's QoS config (SONiC's default for a Trident2 switch: two lossless
priorities with PFC, maps naming DSCPs the intent does not, the operator's schedulers,
``vsonic.seed.operator_qos_config``) and every switch its LLDP neighbours.

leaf1 is discovered, checked, adopted by a rollout, drift-repaired and released; its CONFIG_DB
then equals what the operator had, entry for entry and field for field. The refusals come
before anything is written: an intent that would make lossless traffic lossy, a declared
speed the switch does not run. Rolling back a first rollout restores the operator's config
too, and a released switch is adopted again by the next rollout, with a new record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from controller.cli import CliDeps, app
from controller.cli.exit_codes import ExitCode
from controller.intent.loader import dump_intent
from controller.intent.models import GnmiEndpoint
from controller.reconcile.access import GnmiAccess
from controller.services.tokens import AccessRole
from tests.integration.conftest import StepClock, issue_token, put_intent
from tests.integration.served import served
from tests.integration.southbound.conftest import USERNAME, Fabric, VirtualSwitch
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import (
    WATCHDOG_GLOBAL,
    WATCHDOG_INTERVAL,
    Neighbour,
    SwitchSeed,
    config_entries,
    default_ports,
    lossless_pools,
    operator_qos_config,
    seed_store,
)

from .conftest import ALL, load_neighbours, new_pool, resolver_for, wait_for, worker_for

WAIT_S = 120.0  # an upper bound for a loaded machine, never a pass/fail measure


def load_operator_config(switch: VirtualSwitch, ports: list[str]) -> None:
    """What ``config load`` of the operator's config_db.json would leave in CONFIG_DB."""
    switch.store.write_atomically(CONFIG_DB, dict(config_entries(operator_qos_config(ports))))


def brownfield(fabric: Fabric) -> dict[str, Any]:
    """The example intent with its storage class off queue 3, which the operator's config
    holds lossless on leaf1, onto queue 0."""
    data: dict[str, Any] = dump_intent(fabric.intent)
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["queue"] = 0
    return data


@pytest.fixture
def operated(fabric: Fabric) -> Fabric:
    """The fabric as its operator runs it: leaf1 with its QoS config, LLDP everywhere."""
    leaf1 = next(s for s in fabric.intent.switches if s.name == "leaf1")
    load_operator_config(fabric.switches["leaf1"], [p.name for p in leaf1.ports])
    load_neighbours(fabric)
    return fabric


@pytest.fixture
def api(operated: Fabric, db_url: str) -> Iterator[TestClient]:
    """The app, and beside it the real worker."""
    with (
        worker_for(operated, db_url) as settings,
        TestClient(create_app(settings, clock=StepClock())) as client,
    ):
        yield client


@pytest.fixture
def headers(db_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(db_url, AccessRole.OPERATOR)}"}


def store(api: TestClient, headers: dict[str, str], intent: dict[str, Any]) -> int:
    current = api.get("/api/v1/intent", headers=headers)
    version = int(current.headers["etag"].strip('"'))
    written = put_intent(api, headers, intent, version)
    assert written.status_code in (200, 201), written.text
    return int(written.json()["version"]["number"])


def roll_out(api: TestClient, headers: dict[str, str], **policy: Any) -> dict[str, Any]:
    started = api.post(
        "/api/v1/rollouts", json={"allow_port_flaps": True, **policy}, headers=headers
    )
    assert started.status_code == 201, started.text
    rollout_id = started.json()["id"]
    return finished(
        api, headers, f"/api/v1/rollouts/{rollout_id}", {"completed", "halted", "rolled_back"}
    )


def finished(api: TestClient, headers: dict[str, str], path: str, ends: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(api.get(path, headers=headers).json())
        return found["state"] in ends

    wait_for(path, done, within_s=WAIT_S)
    return found


def release_switch(api: TestClient, headers: dict[str, str], switch: str) -> None:
    """Ask for the switch's release (ports may flap) and wait until it is released."""
    asked = api.post(
        "/api/v1/releases", json={"switch": switch, "allow_port_flaps": True}, headers=headers
    )
    assert asked.status_code == 201, asked.text
    release = finished(
        api,
        headers,
        f"/api/v1/releases/{asked.json()['id']}",
        {"released", "failed", "unreachable", "unknown"},
    )
    assert release["state"] == "released", release


def config_db(switch: VirtualSwitch) -> dict[str, dict[str, str]]:
    return switch.config_db()


def test_a_running_switch_is_discovered_adopted_repaired_and_released(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    leaf1 = operated.switches["leaf1"]
    original = config_db(leaf1)
    store(api, headers, brownfield(operated))

    # Discover: one Get per database, whatever the port count, counted by the switch.
    gets_before = leaf1.gets.count
    found = api.post("/api/v1/discoveries", json={"switches": list(ALL)}, headers=headers)
    assert found.status_code == 201, found.text
    discovery = found.json()
    assert leaf1.gets.count - gets_before == 3
    by_name = {s["switch"]: s for s in discovery["switches"]}
    assert set(by_name) == set(ALL)
    assert by_name["leaf1"]["lossless"] == {
        p: [3, 4] for p in ("Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52")
    }
    assert by_name["leaf2"]["lossless"] == {}
    assert len(discovery["topology"]["links"]) == 4
    assert discovery["rtt"]["path"] == ["host", "leaf1", "spine1", "leaf2", "host"]
    assert discovery["problems"] == []
    assert [s["name"] for s in discovery["inventory"]["switches"]] == list(ALL)

    # Dry run: the merged map and who owns what.
    plans = api.post("/api/v1/plans", json={"switches": ["leaf1"]}, headers=headers).json()
    port_map = next(
        o
        for o in plans["plans"][0]["ops"]
        if o["key"] == "Ethernet0" and o["table"] == "PORT_QOS_MAP"
    )
    owners = {o["field"]: o for o in port_map["ownership"]}
    assert owners["dscp_to_tc_map"]["owner"] == "operator_overwritten"
    assert owners["dscp_to_tc_map"]["saved"] == "AZURE"
    assert owners["pfc_enable"]["owner"] == "operator_kept"
    assert config_db(leaf1) == original

    # Adopt with a canary: leaf1 first.
    rollout = roll_out(api, headers, canary=["leaf1"])
    assert rollout["state"] == "completed", rollout
    adopted = api.get("/api/v1/adoptions", params={"switch": "leaf1"}, headers=headers).json()
    assert adopted["total"] == 1
    assert adopted["items"][0]["released_at"] is None
    running = config_db(leaf1)
    assert running["PORT_QOS_MAP|Ethernet0"]["dscp_to_tc_map"] == "SLUICE_AZURE"
    merged = running["DSCP_TO_TC_MAP|SLUICE_AZURE"]
    assert (merged["3"], merged["4"], merged["8"], merged["46"], merged["10"]) == (
        "3",
        "4",
        "0",
        "6",
        "0",
    )
    for port in ("Ethernet0", "Ethernet48"):
        assert running[f"QUEUE|{port}|3"] == original[f"QUEUE|{port}|3"]
        assert running[f"BUFFER_QUEUE|{port}|3-4"] == original[f"BUFFER_QUEUE|{port}|3-4"]
        assert running[f"PORT_QOS_MAP|{port}"]["pfc_enable"] == "3,4"

    # Drift behind sluice's back: lossless DSCP 3 made lossy in sluice's merged map.
    leaf1.store.client(CONFIG_DB).hset("DSCP_TO_TC_MAP|SLUICE_AZURE", "3", "1")
    runs = api.post("/api/v1/reconcile/run", headers=headers)
    assert runs.status_code == 200, runs.text
    leaf1_run = next(r for r in runs.json()["items"] if r["switch"] == "leaf1")
    assert (leaf1_run["status"], leaf1_run["drift_count"]) == ("corrected", 1)
    assert config_db(leaf1)["DSCP_TO_TC_MAP|SLUICE_AZURE"]["3"] == "3"

    # Release: a dry run first, then the worker gives the config back.
    dry = api.post("/api/v1/releases", json={"switch": "leaf1", "dry_run": True}, headers=headers)
    assert dry.status_code == 200, dry.text
    restores = [o for o in dry.json()["plan"]["ops"] if o["kind"] == "change"]
    assert {"table": "PORT_QOS_MAP", "key": "Ethernet0"} in [
        {"table": o["table"], "key": o["key"]} for o in restores
    ]
    refused = api.post("/api/v1/releases", json={"switch": "leaf1"}, headers=headers)
    assert refused.status_code == 409  # it takes ports down: allow_port_flaps
    assert refused.json()["title"] == "port flaps not allowed"
    release_switch(api, headers, "leaf1")
    assert config_db(leaf1) == original

    # Released: the loop leaves it alone, and the next rollout adopts it again.
    api.post("/api/v1/reconcile/run", headers=headers)
    assert config_db(leaf1) == original
    again = roll_out(api, headers)
    assert again["state"] == "completed", again
    records = api.get("/api/v1/adoptions", params={"switch": "leaf1"}, headers=headers).json()
    assert records["total"] == 2
    assert [r["released_at"] is None for r in records["items"]] == [True, False]
    assert config_db(leaf1)["PORT_QOS_MAP|Ethernet0"]["dscp_to_tc_map"] == "SLUICE_AZURE"


def test_intents_that_would_harm_the_switch_are_refused_before_anything_is_written(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    leaf1 = operated.switches["leaf1"]
    original = config_db(leaf1)
    sets_before = leaf1.sets.count

    # Before any discovery, the worker's own read refuses a declared speed the switch
    # does not run, naming the port; nothing is written.
    wrong = brownfield(operated)
    wrong["switches"][0]["ports"][0]["speed_gbps"] = 100
    wrong_version = store(api, headers, wrong)
    failed = roll_out(api, headers, canary=["leaf1"])
    leaf1_result = next(r for r in failed["results"] if r["switch"] == "leaf1")
    assert leaf1_result["status"] == "failed"
    assert (
        "switches.leaf1.ports.Ethernet0.speed_gbps: declared 100 Gb/s, the switch runs 25 Gb/s"
        in leaf1_result["reason"]
    )
    assert leaf1.sets.count == sets_before
    assert config_db(leaf1) == original
    assert failed["state"] == "halted"
    api.post(f"/api/v1/rollouts/{failed['id']}/rollback", headers=headers)
    finished(api, headers, f"/api/v1/rollouts/{failed['id']}", {"rolled_back"})
    assert config_db(leaf1) == original

    # Once discovered, the API refuses the same intent at the start: 409, the port named.
    discovered = api.post("/api/v1/discoveries", json={"switches": ["leaf1"]}, headers=headers)
    assert discovered.json()["problems"][0]["field"] == "switches.leaf1.ports.Ethernet0.speed_gbps"
    # (naming the version: the rollback rejected it, and a plain start would refuse that)
    body = {"allow_port_flaps": True, "to_version": wrong_version}
    refused = api.post("/api/v1/rollouts", json=body, headers=headers)
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["title"] == "inventory mismatch", refused.text
    assert refused.json()["errors"][0]["field"] == "switches.leaf1.ports.Ethernet0.speed_gbps"

    # The example intent's storage class sits on queue 3, lossless on leaf1: refused, each
    # field named, before anything is written.
    store(api, headers, dump_intent(operated.intent))
    lossless = api.post("/api/v1/rollouts", json={"allow_port_flaps": True}, headers=headers)
    assert lossless.status_code == 409, lossless.text
    assert lossless.json()["title"] == "lossless traffic would be changed"
    fields = {e["field"] for e in lossless.json()["errors"]}
    assert "leaf1: QUEUE|Ethernet0|3.wred_profile" in fields
    assert "leaf1: QUEUE|Ethernet0|3.scheduler" in fields
    assert "leaf1: DSCP_TO_TC_MAP|SLUICE_AZURE.10" in fields  # lossy DSCP 10 onto priority 3
    assert leaf1.sets.count == sets_before
    assert config_db(leaf1) == original


def test_rolling_back_a_first_rollout_gives_the_operator_config_back(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    leaf1 = operated.switches["leaf1"]
    original = config_db(leaf1)
    store(api, headers, brownfield(operated))
    rollout = roll_out(api, headers, canary=["leaf1"])
    assert rollout["state"] == "completed", rollout
    assert config_db(leaf1) != original
    rolled = api.post(f"/api/v1/rollouts/{rollout['id']}/rollback", headers=headers)
    assert rolled.status_code == 200, rolled.text
    back = finished(api, headers, f"/api/v1/rollouts/{rollout['id']}", {"rolled_back"})
    assert all(
        r["status"] == "applied_verified" for r in back["results"] if r["phase"] == "rollback"
    ), back
    assert config_db(leaf1) == original
    records = api.get("/api/v1/adoptions", params={"switch": "leaf1"}, headers=headers).json()
    assert records["items"][0]["released_by"] == f"rollout {rollout['id']} rollback"


def test_discovering_a_64_port_switch_takes_one_get_per_database(fabric: Fabric) -> None:
    """A 64-port switch with its operator's QoS on every port and a neighbour on each is read
    with the same three Gets as a 4-port one: CONFIG_DB, STATE_DB and APPL_DB, whatever the
    port count (SONiC's gNMI server takes one database per GetRequest)."""
    spine2 = fabric.switches["spine2"]
    seed = SwitchSeed(
        hostname="big",
        ports=default_ports(64),
        neighbours=tuple(Neighbour(f"Ethernet{4 * i}", f"host{i}", "eth0") for i in range(64)),
    )
    spine2.store.client(0).flushall()
    seed_store(spine2.store, seed)
    load_operator_config(spine2, [p.name for p in seed.ports])
    access = GnmiAccess(
        new_pool(), resolver_for(fabric), username=USERNAME, batch_size=20, tls=fabric.tls
    )
    endpoint = GnmiEndpoint(address="127.0.0.1", port=spine2.port)
    try:
        before = spine2.gets.count
        found = access.discover("big", endpoint, "env:SLUICE_GNMI_PASSWORD")
        assert spine2.gets.count - before == 3
    finally:
        access.pool.close()
    assert len(found.ports) == 64
    assert {p.speed_gbps for p in found.ports} == {100}
    assert len(found.neighbours) == 64
    assert set(found.lossless()) == {p.name for p in seed.ports}
    assert ("PORT_QOS_MAP", "Ethernet252") in found.qos


def with_class(fabric: Fabric, name: str, **changes: Any) -> dict[str, Any]:
    """``brownfield``'s intent with service class ``name`` changed."""
    data = brownfield(fabric)
    for service_class in data["service_classes"]:
        if service_class["name"] == name:
            service_class.update(changes)
    return data


# The three ways an intent could make the operator's lossless traffic (priorities 3 and 4 on
# leaf1) lossy, and the CONFIG_DB field each refusal must name.
LOSSLESS_CASES: dict[str, tuple[dict[str, Any], str]] = {
    # lossless DSCP 3 taken by the lossy best-effort class (queue 1)
    "remap": ({"name": "best-effort", "dscp": [0, 3]}, "DSCP_TO_TC_MAP|SLUICE_AZURE.3"),
    # a class on lossless queue 4, with its own DSCP 4 and no ECN: only the scheduler changes
    "scheduler": (
        {"name": "storage", "dscp": [4], "queue": 4, "ecn": "off"},
        "QUEUE|Ethernet0|4.scheduler",
    ),
    # a class with ECN on lossless queue 3: its WRED profile replaces AZURE_LOSSLESS
    "wred": (
        {"name": "storage", "dscp": [3], "queue": 3, "ecn": "standard"},
        "QUEUE|Ethernet0|3.wred_profile",
    ),
}


def test_each_way_of_making_lossless_traffic_lossy_is_refused_before_anything_is_written(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    leaf1 = operated.switches["leaf1"]
    original = config_db(leaf1)
    sets_before = leaf1.sets.count

    # Never discovered: the API cannot know, the worker's own read refuses it per switch.
    changes, field = LOSSLESS_CASES["remap"]
    store(api, headers, with_class(operated, **changes))
    failed = roll_out(api, headers, canary=["leaf1"])
    leaf1_result = next(r for r in failed["results"] if r["switch"] == "leaf1")
    assert leaf1_result["status"] == "failed"
    assert f"{field}: DSCP 3 is lossless" in leaf1_result["reason"]
    assert failed["state"] == "halted"
    api.post(f"/api/v1/rollouts/{failed['id']}/rollback", headers=headers)
    finished(api, headers, f"/api/v1/rollouts/{failed['id']}", {"rolled_back"})

    # Discovered: every case is refused when the rollout is asked for, the field named.
    api.post("/api/v1/discoveries", json={"switches": ["leaf1"]}, headers=headers)
    for case, (changes, field) in LOSSLESS_CASES.items():
        # (naming the version: the remap case's is the one the rollback rejected)
        body = {
            "allow_port_flaps": True,
            "to_version": store(api, headers, with_class(operated, **changes)),
        }
        refused = api.post("/api/v1/rollouts", json=body, headers=headers)
        assert refused.status_code == 409, (case, refused.text)
        assert refused.json()["title"] == "lossless traffic would be changed", case
        assert f"leaf1: {field}" in {e["field"] for e in refused.json()["errors"]}, case
        plan = api.post("/api/v1/plans", json={"switches": ["leaf1"]}, headers=headers)
        assert plan.status_code == 409, (case, plan.text)
    assert leaf1.sets.count == sets_before
    assert config_db(leaf1) == original


@pytest.fixture
def served_api(operated: Fabric, db_url: str) -> Iterator[str]:
    """The app served on 127.0.0.1 for the command line, the real worker beside it."""
    with (
        worker_for(operated, db_url) as settings,
        served(create_app(settings, clock=StepClock())) as url,
    ):
        yield url


def test_the_runbook_from_the_command_line(
    operated: Fabric, served_api: str, db_url: str, tmp_path: Path
) -> None:
    """docs/adopting.md step by step: discover (with the inventory written), plan, first
    rollout, adoptions, release (dry run, refused without --allow-port-flaps, then done)."""
    env = {
        "SLUICE_API_URL": served_api,
        "SLUICE_API_TOKEN": issue_token(db_url, AccessRole.OPERATOR, "cli"),
        "COLUMNS": "250",
    }

    def sluice(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, list(args), env=env, obj=CliDeps())
        return result.exit_code, result.stdout + result.stderr

    leaf1 = operated.switches["leaf1"]
    original = config_db(leaf1)
    intent_file = tmp_path / "intent.yaml"
    intent_file.write_text(yaml.safe_dump(brownfield(operated)))
    assert sluice("apply", "-f", str(intent_file))[0] == ExitCode.OK

    inventory_file = tmp_path / "found.yaml"
    code, shown = sluice("discover", *ALL, "--inventory", str(inventory_file), "--check")
    assert code == ExitCode.OK, shown
    assert "lossless priorities 3,4 on 4 port(s)" in shown, shown
    assert "host-leaf1-spine1-leaf2-host" in shown
    found = yaml.safe_load(inventory_file.read_text())
    assert [s["name"] for s in found["switches"]] == list(ALL)
    ports = {s["name"]: {p["name"]: p for p in s["ports"]} for s in found["switches"]}
    # Each port with the cable its lossless headroom is sized for: leaf1's own CABLE_LENGTH
    # (the operator's 5 m), and at spine1 the other end of leaf1's uplink, which spine1
    # itself does not know (docs/adopting.md, "1. Discover").
    assert ports["leaf1"]["Ethernet0"] == {
        "name": "Ethernet0",
        "speed_gbps": 25,
        "cable_length_m": 5,
    }
    assert ports["spine1"]["Ethernet0"]["cable_length_m"] == 5
    assert "cable_length_m" not in ports["spine1"]["Ethernet4"]  # neither end knows it

    code, shown = sluice("plan", "--switch", "leaf1")
    assert code == ExitCode.OK, shown
    assert "operator's, overwritten (saved): dscp_to_tc_map=AZURE" in shown
    assert "operator's, kept from AZURE:" in shown

    code, shown = sluice("rollout", "start", "--canary", "leaf1", "--allow-port-flaps", "--watch")
    assert code == ExitCode.OK, shown
    code, shown = sluice("adoptions", "--switch", "leaf1", "-o", "json")
    assert code == ExitCode.OK, shown
    (record,) = json.loads(shown)
    assert record["released_at"] is None
    assert config_db(leaf1) != original

    code, shown = sluice("release", "leaf1", "--dry-run")
    assert code == ExitCode.OK, shown
    assert "dscp_to_tc_map: SLUICE_AZURE -> AZURE" in shown
    assert config_db(leaf1) != original
    code, shown = sluice("release", "leaf1")
    assert code == ExitCode.CONFLICT, shown
    assert "--allow-port-flaps" in shown or "allow_port_flaps" in shown
    code, shown = sluice("release", "leaf1", "--allow-port-flaps", "--wait", "--interval", "0.1")
    assert code == ExitCode.OK, shown
    assert ": released" in shown
    assert config_db(leaf1) == original
    code, shown = sluice("release", "leaf1", "--dry-run")
    assert code == ExitCode.CONFLICT, shown  # released: nothing left to give back


# sonic-utilities ``pfcwd start_default`` on a switch of up to 32 ports (pfcwd/main.py).
STOCK_WATCHDOG = {"action": "drop", "detection_time": "200", "restoration_time": "200"}
SPECTRUM_2 = {"cell_bytes": 144, "pipeline_latency_bytes": 18432, "mac_phy_delay_bytes": 819.2}


OPERATOR_PG_COUNTERS = {
    redis_key(CONFIG_DB, "FLEX_COUNTER_TABLE", "PG_DROP"): {"POLL_INTERVAL": "5000"},
    redis_key(CONFIG_DB, "FLEX_COUNTER_TABLE", "PG_WATERMARK"): {"FLEX_COUNTER_STATUS": "disable"},
}


def lossless_intent(fabric: Fabric, **storage: Any) -> dict[str, Any]:
    """``brownfield``'s intent with analytics (queue 2) lossless on PFC priority 2, a priority
    the operator's config leaves lossy; ``storage``: changes to the storage class."""
    data = brownfield(fabric)
    data["fabric"]["lossless"] = dict(SPECTRUM_2)
    for service_class in data["service_classes"]:
        if service_class["name"] == "analytics":
            service_class |= {"ecn": "standard", "lossless": {"pfc_priority": 2}}
        if service_class["name"] == "storage":
            service_class |= storage
    return data


def test_a_lossless_class_is_added_beside_the_operators_and_released(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    """leaf1 runs the operator's lossless priorities 3 and 4 with a watchdog on every port;
    the rollout adds priority 2 beside them (its own priority group, headroom and DCQCN
    marking), leaves theirs as they were, and the release gives their config back. The
    priority group counters the class reads are enabled where the operator set no status
    (their interval kept), and left off where the operator disabled them, which the plan
    says."""
    leaf1 = operated.switches["leaf1"]
    ports = [p.name for p in next(s for s in operated.intent.switches if s.name == "leaf1").ports]
    leaf1.store.write_atomically(
        CONFIG_DB, {redis_key(CONFIG_DB, "PFC_WD", p): dict(STOCK_WATCHDOG) for p in ports}
    )
    # The operator's counter groups: PG_DROP's interval set (counterpoll pg-drop interval)
    # but never enabled, PG_WATERMARK disabled (counterpoll watermark disable).
    leaf1.store.write_atomically(CONFIG_DB, dict(OPERATOR_PG_COUNTERS))
    for name, switch in operated.switches.items():
        if name != "leaf1":  # the image's lossless pools, which leaf1's operator config has,
            # and the watchdog started (GCU adds a port's watchdog only beside others)
            pools = lossless_pools().items()
            entries = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in pools}
            entries[redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL)] = dict(WATCHDOG_INTERVAL)
            switch.store.write_atomically(CONFIG_DB, entries)
    original = config_db(leaf1)

    # A class on the operator's priority 3 without taking it over: refused at the start,
    # the collision named, nothing written.
    on_3 = {"queue": 3, "ecn": "standard", "lossless": {"pfc_priority": 3}}
    body = {
        "allow_port_flaps": True,
        "to_version": store(api, headers, lossless_intent(operated, **on_3)),
    }
    found = api.post("/api/v1/discoveries", json={"switches": ["leaf1"]}, headers=headers)
    assert found.status_code == 201, found.text
    refused = api.post("/api/v1/rollouts", json=body, headers=headers)
    assert refused.status_code == 409, refused.text
    fields = {e["field"]: e["reason"] for e in refused.json()["errors"]}
    assert "lossless.take_over: true" in fields["leaf1: PORT_QOS_MAP|Ethernet0.pfc_enable"]
    assert "leaf1: QUEUE|Ethernet0|3.wred_profile" in fields
    assert config_db(leaf1) == original

    store(api, headers, lossless_intent(operated))
    planned = api.post("/api/v1/plans", json={"switches": ["leaf1"]}, headers=headers)
    assert planned.status_code == 200, planned.text
    said = {w["field"]: w["reason"] for w in planned.json()["warnings"]}
    assert said["switches.leaf1"].startswith("FLEX_COUNTER_TABLE|PG_WATERMARK: disabled")
    rollout = roll_out(api, headers, canary=["leaf1"])
    assert rollout["state"] == "completed", rollout
    running = config_db(leaf1)
    for port in ports:
        qos = running[f"PORT_QOS_MAP|{port}"]
        assert (qos["pfc_enable"], qos["pfcwd_sw_enable"]) == ("2,3,4", "2,3,4")
        assert running[f"BUFFER_PG|{port}|2"]["profile"].startswith("SLUICE_pg_lossless_")
        assert running[f"PFC_WD|{port}"] == STOCK_WATCHDOG
        assert running[f"QUEUE|{port}|3"] == original[f"QUEUE|{port}|3"]
        assert running[f"QUEUE|{port}|2"]["wred_profile"] == "SLUICE_DCQCN_Q2"
    tc_to_pg = running["TC_TO_PRIORITY_GROUP_MAP|SLUICE_AZURE"]
    assert (tc_to_pg["2"], tc_to_pg["3"], tc_to_pg["4"]) == ("2", "3", "4")
    # 25 Gb/s, 5 m, MTU 9100 (SONiC's default: no _mtu in the name).
    profile = running["BUFFER_PROFILE|SLUICE_pg_lossless_25000_5m_profile"]
    assert profile["pool"] == "ingress_lossless_pool"
    assert int(profile["size"]) == int(profile["xon"]) + int(profile["xoff"])
    assert running["FLEX_COUNTER_TABLE|PG_DROP"] == {
        "FLEX_COUNTER_STATUS": "enable",
        "POLL_INTERVAL": "5000",
    }
    assert running["FLEX_COUNTER_TABLE|PG_WATERMARK"] == {"FLEX_COUNTER_STATUS": "disable"}
    leaf2 = config_db(operated.switches["leaf2"])
    assert leaf2["PORT_QOS_MAP|Ethernet0"]["pfc_enable"] == "2"
    assert leaf2["PFC_WD|Ethernet0"] == STOCK_WATCHDOG
    # A fresh switch: PG_DROP enabled by sluice, PG_WATERMARK already on (SONiC's init_cfg).
    assert leaf2["FLEX_COUNTER_TABLE|PG_DROP"] == {"FLEX_COUNTER_STATUS": "enable"}
    assert leaf2["FLEX_COUNTER_TABLE|PG_WATERMARK"] == {"FLEX_COUNTER_STATUS": "enable"}

    release_switch(api, headers, "leaf1")
    assert config_db(leaf1) == original
