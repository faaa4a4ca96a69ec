"""The controller side end to end: intent in PostgreSQL -> rendered inventory -> real
ansible-playbook over real SSH to three namespaced hosts, driven through the REST API.

One story, run once per module: store an intent whose hosts are the fabric's namespaces;
plan (check mode: would-be changes, nothing changes); apply in batches (the namespaces now
hold what the intent says, read back inside them, not through Ansible); apply again (no
changes); stop one host's sshd and apply (that host unreachable, the others fine). Every
run's per-host results are read both from the API and straight from PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, pool, select

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import Settings
from controller.store.models import HostRunResult
from lab import netns
from tests.e2e.playbook import htb_classes, in_namespace, root_qdisc, sysctl
from tests.integration.conftest import StepClock, issue_token, put_intent
from tests.support.host_runs import finished
from tests.support.namespaced_hosts import e2e_intent, hosts_settings
from tests.support.worker import running_worker

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2", "h3"]
# Named DSCP values nft prints instead of numbers (RFC 2474 class selectors, RFC 3246 EF,
# RFC 2597 AF41 = 34).
NFT_DSCP_NAMES = {"cs6": 48, "ef": 46, "af41": 34, "cs1": 8}
TC_UNITS = {"bit": 1, "Kbit": 10**3, "Mbit": 10**6, "Gbit": 10**9}


def snapshot(fabric: netns.Fabric, host: str) -> dict[str, Any]:
    tables = in_namespace(fabric, host, ["nft", "list", "tables"])
    return {
        "tcp_ecn": sysctl(fabric, host, "net.ipv4.tcp_ecn"),
        "cc": sysctl(fabric, host, "net.ipv4.tcp_congestion_control"),
        "qdisc": root_qdisc(fabric, host)["kind"],
        "tables": sorted(tables.split("\n")),
    }


def tc_rate_bps(text: str) -> float:
    match = re.fullmatch(r"([0-9.]+)([KMG]?bit)", text)
    assert match, text
    return float(match.group(1)) * TC_UNITS[match.group(2)]


def apply(client: TestClient, auth: dict[str, dict[str, str]], **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/hosts/apply", json=body, headers=auth["operator"])
    assert response.status_code == 202, response.text
    return finished(client, auth["viewer"], response.json()["id"], hang_guard_s=600)


def statuses(run: dict[str, Any]) -> dict[str, str]:
    return {r["host"]: r["status"] for r in run["results"]}


@pytest.fixture(scope="module")
def story(
    fabric: netns.Fabric, module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    config = hosts_settings(fabric, tmp_path_factory.mktemp("host-runs"))
    auth = {
        role.value: {"Authorization": f"Bearer {issue_token(module_db_url, role)}"}
        for role in AccessRole
    }
    settings = Settings.for_database(module_db_url, hosts=config)
    app = create_app(settings, clock=StepClock())
    with running_worker(settings), TestClient(app) as client:
        assert put_intent(client, auth["operator"], e2e_intent(fabric), 0).status_code == 201
        before = {h: snapshot(fabric, h) for h in HOSTS}
        planned = client.post("/api/v1/hosts/plan", headers=auth["operator"])
        after_plan = {h: snapshot(fabric, h) for h in HOSTS}
        first = apply(client, auth, batch_size=2, failure_budget=0)
        applied = {h: snapshot(fabric, h) for h in HOSTS}
        second = apply(client, auth)
        fabric.stop_sshd("h2")
        third = apply(client, auth, batch_size=3, failure_budget=1)
        listing = client.get("/api/v1/hosts/runs", headers=auth["viewer"]).json()
        yield {
            "client": client,
            "auth": auth,
            "before": before,
            "plan": planned,
            "after_plan": after_plan,
            "first": first,
            "applied": applied,
            "second": second,
            "third": third,
            "listing": listing,
        }


def test_plan_reports_would_be_changes_with_diffs_and_changes_nothing(
    story: dict[str, Any],
) -> None:
    assert story["plan"].status_code == 200, story["plan"].text
    plan = story["plan"].json()
    assert (plan["mode"], plan["state"]) == ("plan", "completed")
    assert statuses(plan) == dict.fromkeys(HOSTS, "changed")
    for result in plan["results"]:
        roles = {t["role"]: t for t in result["changed_tasks"]}
        assert set(roles) == {"ecn", "qjump", "dscp", "pias"}
        assert "class 1:17" in roles["qjump"]["diff"]["after"]
    assert story["after_plan"] == story["before"]


def test_apply_makes_each_namespace_what_the_intent_says(
    story: dict[str, Any], fabric: netns.Fabric
) -> None:
    first = story["first"]
    assert first["state"] == "completed", first
    assert statuses(first) == dict.fromkeys(HOSTS, "changed")
    # Batches of 2: [h1, h2] then [h3].
    assert {r["host"]: r["batch"] for r in first["results"]} == {"h1": 1, "h2": 1, "h3": 2}
    for host in HOSTS:
        state = story["applied"][host]
        # A class marks ECN (storage: standard) -> tcp_ecn 1; the fabric asks for reno.
        assert (state["tcp_ecn"], state["cc"], state["qdisc"]) == ("1", "reno", "htb")
        classes = htb_classes(fabric, host)
        assert tc_rate_bps(classes["1:17"]["rate"]) == pytest.approx(50e6, rel=2e-3)
        assert tc_rate_bps(classes["1:14"]["rate"]) == pytest.approx(100e6, rel=2e-3)
        assert tc_rate_bps(classes["1:10"]["rate"]) == pytest.approx(1e9, rel=2e-3)
        assert "table inet sluice_dscp" in state["tables"]
        assert "table inet sluice_pias" in state["tables"]


def _rules(fabric: netns.Fabric, host: str, table: str) -> list[dict[str, Any]]:
    listing = json.loads(in_namespace(fabric, host, ["nft", "-j", "list", "table", "inet", table]))
    return [item["rule"] for item in listing["nftables"] if "rule" in item]


def _dscp_set(rule: dict[str, Any]) -> int:
    for expr in rule["expr"]:
        mangle = expr.get("mangle")
        if mangle and mangle["key"].get("payload", {}).get("field") == "dscp":
            value = mangle["value"]
            return NFT_DSCP_NAMES[value] if isinstance(value, str) else int(value)
    raise AssertionError(f"no DSCP rewrite in {rule}")


def test_dscp_and_pias_tables_carry_the_intents_classes(
    story: dict[str, Any], fabric: netns.Fabric
) -> None:
    for host in HOSTS:
        rules = _rules(fabric, host, "sluice_dscp")
        # QJUMP classes also clamp the TCP MSS so no packet exceeds P = 250 B (250 - 54 = 196)
        clamps = [r for r in rules if r["comment"].endswith("B packets")]
        assert {r["comment"] for r in clamps} == {"class bulk mss for 250 B packets"}
        marking = [r for r in rules if r not in clamps]
        marks = {(r["comment"], _dscp_set(r)) for r in marking}
        assert marks == {("class control", 48), ("class rpc", 46), ("class bulk", 8)}
        stages = {(r["comment"], _dscp_set(r)) for r in _rules(fabric, host, "sluice_pias")}
        assert stages == {("rpc stage 0", 46), ("rpc stage 1", 34)}
        # bulk is QJUMP level 4: its packets get skb->priority 0x10014 (HTB class 1:14).
        listing = in_namespace(fabric, host, ["nft", "list", "table", "inet", "sluice_dscp"])
        bulk = next(line for line in listing.splitlines() if '"class bulk"' in line)
        assert "skuid 4242" in bulk
        assert "meta priority set 1:14" in bulk


def test_a_second_apply_changes_nothing(story: dict[str, Any]) -> None:
    second = story["second"]
    assert second["state"] == "completed"
    assert statuses(second) == dict.fromkeys(HOSTS, "ok")
    assert all(r["changed_tasks"] == [] for r in second["results"])


def test_a_host_with_sshd_down_fails_alone_and_is_recorded(
    story: dict[str, Any], module_db_url: str
) -> None:
    third = story["third"]
    assert statuses(third) == {"h1": "ok", "h2": "unreachable", "h3": "ok"}
    # One failure is within the budget of 1: the run completed, with the failure counted.
    assert (third["state"], third["failures"]) == ("completed", 1)
    h2 = next(r for r in third["results"] if r["host"] == "h2")
    assert h2["message"]
    # The same, straight from PostgreSQL.
    engine = create_engine(module_db_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(HostRunResult.host_name, HostRunResult.status)
                .where(HostRunResult.run_id == third["id"])
                .order_by(HostRunResult.host_name)
            ).all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in rows] == [("h1", "ok"), ("h2", "unreachable"), ("h3", "ok")]
    listing = story["listing"]
    assert listing["total"] == 4  # plan, apply, apply, apply
    ids = [item["id"] for item in listing["items"]]
    assert ids[0] == third["id"]
    assert ids == sorted(ids, reverse=True)  # newest first


def test_a_level_above_line_rate_is_refused_before_ansible_runs(
    story: dict[str, Any], fabric: netns.Fabric
) -> None:
    client, auth = story["client"], story["auth"]
    too_fast = e2e_intent(fabric)
    # f = 40: 40 x 2000 bit / 40 us = 2 Gbit/s, above the 1 Gb/s NICs.
    too_fast["fabric"]["qjump"]["factors"] = {7: 1, 4: 40}
    refused = put_intent(client, auth["operator"], too_fast, 1)
    assert refused.status_code == 422
    assert "fabric.qjump.factors.4" in refused.text
    runs = client.get("/api/v1/hosts/runs", headers=auth["viewer"]).json()
    assert runs["total"] == story["listing"]["total"]
