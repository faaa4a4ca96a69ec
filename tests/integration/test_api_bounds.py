"""Parameters out of the database's range are refused at the edge (422), never a 500 from
SQL, and the OpenAPI document describes every answer (issue 12, first two findings)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

BIGINT_PAST = 2**63  # one past PostgreSQL bigint
INTEGER_PAST = 2**31  # one past PostgreSQL integer

OUT_OF_RANGE = [
    ("get", f"/api/v1/intent/versions?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/rollouts?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/hosts/runs?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/audit?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/drift?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/tokens?offset={BIGINT_PAST}"),
    ("get", f"/api/v1/rollouts/{BIGINT_PAST}"),
    ("post", f"/api/v1/rollouts/{BIGINT_PAST}/pause"),
    ("post", f"/api/v1/rollouts/{BIGINT_PAST}/resume"),
    ("post", f"/api/v1/rollouts/{BIGINT_PAST}/rollback"),
    ("delete", f"/api/v1/tokens/{BIGINT_PAST}"),
    ("get", f"/api/v1/hosts/runs/{BIGINT_PAST}"),
    ("get", f"/api/v1/intent/versions/{INTEGER_PAST}"),
    ("get", f"/api/v1/diff?from={INTEGER_PAST}"),
    ("get", "/api/v1/audit?resource_type=a%00b"),
    ("get", "/api/v1/audit?resource_id=a%00b"),
    ("get", "/api/v1/drift?switch=leaf%001"),
    ("get", "/api/v1/tokens?limit=501"),
]


@pytest.mark.parametrize(("method", "url"), OUT_OF_RANGE)
def test_out_of_range_parameters_are_422_not_500(
    method: str, url: str, module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    response = module_client.request(method, url, headers=module_auth["admin"])
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"


def test_a_nul_in_a_reason_is_422(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    headers = {**module_auth["operator"], "If-Match": '"0"'}
    as_query = module_client.put("/api/v1/fabric?reason=a%00b", json={}, headers=headers)
    assert as_query.status_code == 422, as_query.text
    as_body = module_client.put(
        "/api/v1/intent", json={"intent": {}, "reason": "a\x00b"}, headers=headers
    )
    assert as_body.status_code == 422, as_body.text
    assert "reason" in as_body.json()["detail"]


def test_a_boolean_rollout_or_host_run_number_is_422(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    headers = module_auth["operator"]
    for path, body in (
        ("/api/v1/hosts/apply", {"failure_budget": False}),
        ("/api/v1/rollouts", {"batch_size": True}),
    ):
        response = module_client.post(path, json=body, headers=headers)
        assert response.status_code == 422, response.text


ERRORS = {"401", "404", "409", "412", "422", "428", "503"}


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    ]


def test_the_document_declares_every_error_as_problem_json(module_client: TestClient) -> None:
    spec = module_client.get("/openapi.json").json()
    assert "Problem" in spec["components"]["schemas"]
    for method, path, operation in _operations(spec):
        responses = operation["responses"]
        assert "503" in responses, (method, path)
        for status, answer in responses.items():
            if int(status) >= 400:
                assert list(answer["content"]) == ["application/problem+json"], (path, status)
        if operation.get("security"):
            assert "401" in responses, (method, path)
        names = {p["name"]: p for p in operation.get("parameters", [])}
        if "If-Match" in names:
            assert names["If-Match"]["required"] is True
            assert {"412", "428"} <= set(responses), (method, path)
        if "limit" in names:
            assert names["limit"]["schema"]["maximum"] == 500
        if "offset" in names:
            assert names["offset"]["schema"]["maximum"] == 2**63 - 1
    admin_only = spec["paths"]["/api/v1/tokens"]["get"]["responses"]
    assert "403" in admin_only
    validate = spec["paths"]["/api/v1/intent/validate"]["post"]["requestBody"]
    intent_ref = validate["content"]["application/json"]["schema"]["$ref"]
    assert spec["components"]["schemas"][intent_ref.rsplit("/", 1)[1]]["required"] == ["fabric"]


def test_405_lists_every_method_of_the_path(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    response = module_client.patch("/api/v1/intent", headers=module_auth["admin"])
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, PUT"
    plan = module_client.options("/api/v1/hosts/plan", headers=module_auth["admin"])
    assert (plan.status_code, plan.headers["allow"]) == (405, "POST")
