"""Switches, hosts, service classes and fabric: one entry at a time, each write a version."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import put_intent, small_intent, with_if_match

NEW_ENTRIES: dict[str, dict[str, Any]] = {
    "switches": {
        "name": "leaf2",
        "role": "leaf",
        "gnmi": {"address": "127.0.0.1", "port": 50053},
        "credential_ref": "env:SLUICE_GNMI_PASSWORD",
        "ports": [{"name": "Ethernet4", "speed_gbps": 25}],
    },
    "hosts": {"name": "host2", "address": "10.0.1.12", "nic_gbps": 25},
    "service-classes": {
        "name": "scavenger",
        "dscp": [8],
        "queue": 0,
        "scheduling": {"type": "DWRR", "weight": 10},
    },
}
# A change to an existing entry of each kind: (name, field, new value).
CHANGES: dict[str, tuple[str, str, Any]] = {
    "switches": ("spine1", "role", "leaf"),
    "hosts": ("host1", "nic_gbps", 100),
    "service-classes": ("web", "dscp", [20]),
}


@pytest.fixture
def seeded(client: TestClient, auth: Any) -> TestClient:
    assert put_intent(client, auth["operator"], small_intent(), 0).status_code == 201
    return client


@pytest.mark.parametrize("kind", sorted(NEW_ENTRIES))
def test_create_get_replace_delete_one_entry(seeded: TestClient, auth: Any, kind: str) -> None:
    base = f"/api/v1/{kind}"
    entry = NEW_ENTRIES[kind]
    created = seeded.post(base, json=entry, headers=with_if_match(auth["operator"], 1))
    assert created.status_code == 201, created.text
    assert created.headers["ETag"] == '"2"'
    assert created.headers["Location"] == f"{base}/{entry['name']}"

    listed = seeded.get(base, headers=auth["viewer"])
    assert listed.headers["ETag"] == '"2"'
    assert entry["name"] in [item["name"] for item in listed.json()["items"]]

    one = seeded.get(f"{base}/{entry['name']}", headers=auth["viewer"])
    assert one.status_code == 200
    assert one.headers["ETag"] == '"2"'

    name, field, value = CHANGES[kind]
    changed = {**seeded.get(f"{base}/{name}", headers=auth["viewer"]).json(), field: value}
    replaced = seeded.put(
        f"{base}/{name}", json=changed, headers=with_if_match(auth["operator"], 2)
    )
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()[field] == value
    assert replaced.headers["ETag"] == '"3"'

    gone = seeded.delete(f"{base}/{entry['name']}", headers=with_if_match(auth["operator"], 3))
    assert gone.status_code == 204
    assert gone.headers["ETag"] == '"4"'
    after = seeded.get(f"{base}/{entry['name']}", headers=auth["viewer"])
    assert after.status_code == 404
    assert after.headers["content-type"] == "application/problem+json"


def test_post_of_an_existing_name_is_a_conflict(seeded: TestClient, auth: Any) -> None:
    host = {"name": "host1", "address": "10.0.9.9", "nic_gbps": 25}
    again = seeded.post("/api/v1/hosts", json=host, headers=with_if_match(auth["operator"], 1))
    assert again.status_code == 409


def test_put_of_a_new_name_creates_it(seeded: TestClient, auth: Any) -> None:
    host = {"address": "10.0.1.13", "nic_gbps": 25}
    put = seeded.put("/api/v1/hosts/host3", json=host, headers=with_if_match(auth["operator"], 1))
    assert put.status_code == 201
    assert put.json()["name"] == "host3"


def test_resource_writes_need_if_match_and_a_current_one(seeded: TestClient, auth: Any) -> None:
    host = {"name": "host2", "address": "10.0.1.12", "nic_gbps": 25}
    missing = seeded.post("/api/v1/hosts", json=host, headers=auth["operator"])
    assert missing.status_code == 428
    stale = seeded.post("/api/v1/hosts", json=host, headers=with_if_match(auth["operator"], 0))
    assert stale.status_code == 412
    deleted = seeded.delete("/api/v1/hosts/host1", headers=with_if_match(auth["operator"], 7))
    assert deleted.status_code == 412


def test_lists_are_paged(seeded: TestClient, auth: Any) -> None:
    page = seeded.get("/api/v1/service-classes?limit=1&offset=2", headers=auth["viewer"]).json()
    # small_intent has three classes in the order bulk, web, ctrl: offset 2 is ctrl.
    assert page["total"] == 3
    assert [item["name"] for item in page["items"]] == ["ctrl"]


def test_lists_on_an_empty_store_are_empty_at_version_zero(client: TestClient, auth: Any) -> None:
    listed = client.get("/api/v1/switches", headers=auth["viewer"])
    assert listed.status_code == 200
    assert listed.headers["ETag"] == '"0"'
    assert listed.json() == {"items": [], "total": 0, "limit": 50, "offset": 0}


def test_fabric_can_start_an_intent_and_be_changed(client: TestClient, auth: Any) -> None:
    fabric = {"base_rtt_us": 40, "port_buffer_bytes": 2_000_000}
    first = client.put("/api/v1/fabric", json=fabric, headers=with_if_match(auth["operator"], 0))
    assert first.status_code == 201, first.text
    assert first.headers["ETag"] == '"1"'
    got = client.get("/api/v1/fabric", headers=auth["viewer"])
    assert got.json()["base_rtt_us"] == 40
    assert got.headers["ETag"] == '"1"'
    changed = client.put(
        "/api/v1/fabric",
        json={**fabric, "base_rtt_us": 80},
        headers=with_if_match(auth["operator"], 1),
    )
    assert changed.status_code == 200
    assert changed.json()["base_rtt_us"] == 80


def test_adding_to_an_empty_store_is_a_conflict(client: TestClient, auth: Any) -> None:
    host = {"name": "host1", "address": "10.0.1.11", "nic_gbps": 25}
    refused = client.post("/api/v1/hosts", json=host, headers=with_if_match(auth["operator"], 0))
    assert refused.status_code == 409


def test_every_write_leaves_an_audit_row_with_before_and_after(
    seeded: TestClient, auth: Any
) -> None:
    changed = {"name": "host1", "address": "10.0.1.11", "nic_gbps": 100}
    seeded.put("/api/v1/hosts/host1", json=changed, headers=with_if_match(auth["operator"], 1))
    seeded.delete("/api/v1/hosts/host1", headers=with_if_match(auth["operator"], 2))
    rows = seeded.get("/api/v1/audit", headers=auth["viewer"]).json()
    # Three token creations by the auth fixture, then: create intent, replace and delete host1.
    assert rows["total"] == 6
    delete, replace, create = rows["items"][:3]
    assert [row["resource_type"] for row in rows["items"][3:]] == ["token"] * 3
    assert (create["action"], create["resource_type"], create["version"]) == ("create", "intent", 1)
    assert create["before"] is None
    assert create["after"]["hosts"][0]["name"] == "host1"
    assert (replace["action"], replace["resource_id"], replace["version"]) == (
        "replace",
        "host1",
        2,
    )
    assert replace["before"]["nic_gbps"] == 25
    assert replace["after"]["nic_gbps"] == 100
    assert replace["actor"] == "t-operator"
    assert (delete["action"], delete["before"]["nic_gbps"], delete["after"]) == (
        "delete",
        100,
        None,
    )
    only_hosts = seeded.get(
        "/api/v1/audit?resource_type=host&limit=1", headers=auth["viewer"]
    ).json()
    assert only_hosts["total"] == 2
    assert [row["action"] for row in only_hosts["items"]] == ["delete"]


def test_request_id_is_echoed_and_audited(seeded: TestClient, auth: Any) -> None:
    headers = {**with_if_match(auth["operator"], 1), "X-Request-ID": "change-42"}
    host = {"name": "host2", "address": "10.0.1.12", "nic_gbps": 25}
    response = seeded.post("/api/v1/hosts", json=host, headers=headers)
    assert response.headers["X-Request-ID"] == "change-42"
    newest = seeded.get("/api/v1/audit?limit=1", headers=auth["viewer"]).json()["items"][0]
    assert newest["request_id"] == "change-42"
