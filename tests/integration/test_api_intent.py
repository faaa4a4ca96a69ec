"""The whole intent over the API: versions, ETags, If-Match, validation, history, snapshots."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import create_engine, pool, text

from tests.integration.conftest import put_intent, small_intent, with_if_match

PROBLEM = "application/problem+json"


def test_empty_store_answers_404_with_etag_zero(client: TestClient, auth: Any) -> None:
    response = client.get("/api/v1/intent", headers=auth["viewer"])
    assert response.status_code == 404
    assert response.headers["content-type"] == PROBLEM
    assert response.headers["ETag"] == '"0"'
    assert response.json()["status"] == 404


def test_first_put_creates_version_one_and_get_returns_it(client: TestClient, auth: Any) -> None:
    created = put_intent(client, auth["operator"], small_intent(), 0)
    assert created.status_code == 201, created.text
    assert created.headers["ETag"] == '"1"'
    assert created.json()["version"]["number"] == 1
    assert created.json()["version"]["author"] == "t-operator"

    got = client.get("/api/v1/intent", headers=auth["viewer"])
    assert got.status_code == 200
    assert got.headers["ETag"] == '"1"'
    intent = got.json()["intent"]
    assert [s["name"] for s in intent["switches"]] == ["leaf1", "spine1"]
    # Defaults are filled in when stored: ecn_lambda defaults to 1.0 in the model.
    assert intent["fabric"]["ecn_lambda"] == 1.0


def test_same_content_makes_no_new_version(client: TestClient, auth: Any) -> None:
    put_intent(client, auth["operator"], small_intent(), 0)
    again = put_intent(client, auth["operator"], small_intent(), 1)
    assert again.status_code == 200
    assert again.json()["changed"] is False
    assert again.headers["ETag"] == '"1"'


def test_stale_if_match_is_412_and_missing_is_428(client: TestClient, auth: Any) -> None:
    put_intent(client, auth["operator"], small_intent(), 0)
    changed = small_intent()
    changed["fabric"]["base_rtt_us"] = 50
    stale = put_intent(client, auth["operator"], changed, 0)
    assert stale.status_code == 412
    assert stale.headers["content-type"] == PROBLEM
    missing = client.put(
        "/api/v1/intent", json={"intent": changed, "reason": "x"}, headers=auth["operator"]
    )
    assert missing.status_code == 428
    assert missing.headers["content-type"] == PROBLEM


def test_versions_are_paged_newest_first(client: TestClient, auth: Any) -> None:
    for version, rtt in enumerate([40, 50, 60]):
        intent = small_intent()
        intent["fabric"]["base_rtt_us"] = rtt
        assert put_intent(client, auth["operator"], intent, version).status_code in (200, 201)
    page = client.get("/api/v1/intent/versions?limit=2&offset=1", headers=auth["viewer"]).json()
    assert page["total"] == 3
    assert (page["limit"], page["offset"]) == (2, 1)
    assert [v["number"] for v in page["items"]] == [2, 1]
    old = client.get("/api/v1/intent/versions/2", headers=auth["viewer"])
    assert old.headers["ETag"] == '"2"'
    assert old.json()["intent"]["fabric"]["base_rtt_us"] == 50
    assert client.get("/api/v1/intent/versions/9", headers=auth["viewer"]).status_code == 404


def test_validate_accepts_and_refuses_without_storing(client: TestClient, auth: Any) -> None:
    ok = client.post("/api/v1/intent/validate", json=small_intent(), headers=auth["viewer"])
    assert ok.status_code == 200
    assert ok.json()["valid"] is True
    bad = small_intent()
    bad["service_classes"][1]["dscp"] = [10]  # already used by class 0
    refused = client.post("/api/v1/intent/validate", json=bad, headers=auth["viewer"])
    assert refused.status_code == 422
    fields = [e["field"] for e in refused.json()["errors"]]
    assert "service_classes[1].dscp[0]" in fields
    assert client.get("/api/v1/intent", headers=auth["viewer"]).status_code == 404


def test_each_version_stores_a_desired_snapshot_per_switch(
    client: TestClient, auth: Any, db_url: str
) -> None:
    put_intent(client, auth["operator"], small_intent(), 0)
    engine = create_engine(db_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT switch_name, config FROM desired_states WHERE version = 1")
            ).all()
    finally:
        engine.dispose()
    configs: dict[str, Any] = {row[0]: row[1] for row in rows}
    assert set(configs) == {"leaf1", "spine1"}
    # Every class's queue on the one port gets a QUEUE entry: keys "QUEUE|Ethernet0|<q>".
    queue_keys = {k for k in configs["leaf1"] if k.startswith("QUEUE|")}
    assert {"QUEUE|Ethernet0|1", "QUEUE|Ethernet0|2", "QUEUE|Ethernet0|7"} <= queue_keys


def test_if_match_needs_a_strong_etag(client: TestClient, auth: Any) -> None:
    weak = client.put(
        "/api/v1/intent",
        json={"intent": small_intent(), "reason": "x"},
        headers={**auth["operator"], "If-Match": 'W/"0"'},
    )
    assert weak.status_code == 412
    ok = client.put(
        "/api/v1/intent",
        json={"intent": small_intent(), "reason": "x"},
        headers=with_if_match(auth["operator"], 0),
    )
    assert ok.status_code == 201
