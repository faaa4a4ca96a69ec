"""Bearer auth and roles on every endpoint: viewer < operator < admin, 401 without a token."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.services.tokens import AccessRole

# Every API operation with the least role it needs (health needs none and is tested apart).
ENDPOINTS: list[tuple[str, str, AccessRole]] = [
    ("GET", "/api/v1/intent", AccessRole.VIEWER),
    ("PUT", "/api/v1/intent", AccessRole.OPERATOR),
    ("POST", "/api/v1/intent/validate", AccessRole.VIEWER),
    ("GET", "/api/v1/intent/versions", AccessRole.VIEWER),
    ("GET", "/api/v1/intent/versions/{number}", AccessRole.VIEWER),
    ("GET", "/api/v1/fabric", AccessRole.VIEWER),
    ("PUT", "/api/v1/fabric", AccessRole.OPERATOR),
    ("POST", "/api/v1/plans", AccessRole.VIEWER),
    ("GET", "/api/v1/diff", AccessRole.VIEWER),
    ("GET", "/api/v1/audit", AccessRole.VIEWER),
    ("GET", "/api/v1/tokens", AccessRole.ADMIN),
    ("POST", "/api/v1/tokens", AccessRole.ADMIN),
    ("DELETE", "/api/v1/tokens/{token_id}", AccessRole.ADMIN),
    ("POST", "/api/v1/hosts/plan", AccessRole.OPERATOR),
    ("POST", "/api/v1/hosts/apply", AccessRole.OPERATOR),
    ("GET", "/api/v1/hosts/exporter-targets", AccessRole.VIEWER),
    ("GET", "/api/v1/hosts/runs", AccessRole.VIEWER),
    ("GET", "/api/v1/hosts/runs/{run_id}", AccessRole.VIEWER),
]
for _kind in ("switches", "hosts", "service-classes"):
    ENDPOINTS += [
        ("GET", f"/api/v1/{_kind}", AccessRole.VIEWER),
        ("POST", f"/api/v1/{_kind}", AccessRole.OPERATOR),
        ("GET", f"/api/v1/{_kind}/{{name}}", AccessRole.VIEWER),
        ("PUT", f"/api/v1/{_kind}/{{name}}", AccessRole.OPERATOR),
        ("DELETE", f"/api/v1/{_kind}/{{name}}", AccessRole.OPERATOR),
    ]

# Rollouts, drift and reconcile.
ENDPOINTS += [
    ("POST", "/api/v1/rollouts", AccessRole.OPERATOR),
    ("GET", "/api/v1/rollouts", AccessRole.VIEWER),
    ("GET", "/api/v1/rollouts/{rollout_id}", AccessRole.VIEWER),
    ("POST", "/api/v1/rollouts/{rollout_id}/pause", AccessRole.OPERATOR),
    ("POST", "/api/v1/rollouts/{rollout_id}/resume", AccessRole.OPERATOR),
    ("POST", "/api/v1/rollouts/{rollout_id}/rollback", AccessRole.OPERATOR),
    ("GET", "/api/v1/drift", AccessRole.VIEWER),
    ("GET", "/api/v1/reconcile", AccessRole.VIEWER),
    ("POST", "/api/v1/reconcile/run", AccessRole.OPERATOR),
]

# Discovery, releases and adoption records (docs/adopting.md).
ENDPOINTS += [
    ("POST", "/api/v1/discoveries", AccessRole.OPERATOR),
    ("GET", "/api/v1/discoveries/{discovery_id}", AccessRole.VIEWER),
    ("POST", "/api/v1/checks/roce", AccessRole.OPERATOR),
    ("GET", "/api/v1/checks/roce/{discovery_id}", AccessRole.VIEWER),
    ("POST", "/api/v1/releases", AccessRole.OPERATOR),
    ("GET", "/api/v1/releases", AccessRole.VIEWER),
    ("GET", "/api/v1/releases/{release_id}", AccessRole.VIEWER),
    ("GET", "/api/v1/adoptions", AccessRole.VIEWER),
]

# Telemetry and health, read from Prometheus.
ENDPOINTS += [
    ("GET", "/api/v1/telemetry/switches/{name}", AccessRole.VIEWER),
    ("GET", "/api/v1/telemetry/switches/{name}/ports/{port}/series", AccessRole.VIEWER),
    ("GET", "/api/v1/health", AccessRole.VIEWER),
]

# Tuning proposals (docs/tuning.md).
ENDPOINTS += [
    ("POST", "/api/v1/tuning/proposals", AccessRole.OPERATOR),
    ("GET", "/api/v1/tuning/proposals", AccessRole.VIEWER),
    ("GET", "/api/v1/tuning/proposals/{proposal_id}", AccessRole.VIEWER),
    ("POST", "/api/v1/tuning/proposals/{proposal_id}/approve", AccessRole.OPERATOR),
    ("POST", "/api/v1/tuning/proposals/{proposal_id}/reject", AccessRole.OPERATOR),
]

# Twin runs, run by the worker.
ENDPOINTS += [
    ("POST", "/api/v1/twin-runs", AccessRole.OPERATOR),
    ("GET", "/api/v1/twin-runs/{twin_run_id}", AccessRole.VIEWER),
]

DENIALS = [
    (method, path, role)
    for method, path, needed in ENDPOINTS
    for role in AccessRole
    if not role.allows(needed)
]


def _concrete(path: str) -> str:
    # Ids that exist nowhere, so an allowed call changes nothing the other tests share.
    return (
        path.replace("{number}", "1")
        .replace("{token_id}", "999")
        .replace("{run_id}", "999")
        .replace("{proposal_id}", "999")
        .replace("{twin_run_id}", "999")
        .replace("{discovery_id}", "999")
        .replace("{release_id}", "999")
        .replace("{name}", "x1")
        .replace("{port}", "Ethernet0")
    )


def _call(client: TestClient, method: str, path: str, headers: dict[str, str]) -> Any:
    body: dict[str, Any] | None = {} if method in ("PUT", "POST") else None
    return client.request(method, _concrete(path), json=body, headers=headers)


def test_the_table_covers_every_operation_in_the_openapi(module_client: TestClient) -> None:
    spec = module_client.get("/openapi.json").json()
    published = {
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method in operations
        if path != "/healthz"
    }
    assert published == {(method, path) for method, path, _ in ENDPOINTS}


@pytest.mark.parametrize(("method", "path", "needed"), ENDPOINTS)
def test_no_token_is_401_with_a_bearer_challenge(
    module_client: TestClient, method: str, path: str, needed: AccessRole
) -> None:
    response = _call(module_client, method, path, {})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    "authorization", ["Bearer garbage", "Bearer slc_" + "A" * 43, "Basic dXNlcjpwYXNz", "Bearer"]
)
def test_garbage_tokens_are_401(module_client: TestClient, authorization: str) -> None:
    response = module_client.get("/api/v1/intent", headers={"Authorization": authorization})
    assert response.status_code == 401


@pytest.mark.parametrize(("method", "path", "role"), DENIALS)
def test_a_weaker_role_is_403(
    module_client: TestClient, module_auth: Any, method: str, path: str, role: AccessRole
) -> None:
    response = _call(module_client, method, path, module_auth[role.value])
    assert response.status_code == 403
    assert role.value in response.json()["detail"]


@pytest.mark.parametrize(("method", "path", "needed"), ENDPOINTS)
def test_the_needed_role_gets_past_auth(
    module_client: TestClient, module_auth: Any, method: str, path: str, needed: AccessRole
) -> None:
    # Past auth the answer is about the request (404 empty store, 428 no If-Match, 422...).
    response = _call(module_client, method, path, module_auth[needed.value])
    assert response.status_code not in (401, 403), response.text


def test_a_revoked_token_stops_working(module_client: TestClient, module_auth: Any) -> None:
    created = module_client.post(
        "/api/v1/tokens",
        json={"name": "short-lived", "role": "viewer"},
        headers=module_auth["admin"],
    ).json()
    bearer = {"Authorization": f"Bearer {created['token']}"}
    assert module_client.get("/api/v1/switches", headers=bearer).status_code == 200
    revoked = module_client.delete(f"/api/v1/tokens/{created['id']}", headers=module_auth["admin"])
    assert revoked.status_code == 204
    assert module_client.get("/api/v1/switches", headers=bearer).status_code == 401
