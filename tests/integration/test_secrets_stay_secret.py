"""Secrets never reach a log line, the audit log or a problem+json answer of the API (issue
25, "Credentials"): intents hold references, a secret pasted where its reference belongs is
refused without being repeated, and the bearer tokens callers send are never echoed. The
southbound's side (switch passwords, the store's token) is in
tests/integration/southbound/test_vault_credentials.py."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import small_intent, with_if_match

PASTED = "Pa55-pasted-where-the-reference-belongs"
BAD_TOKEN = "slc_" + "x" * 43


def test_no_secret_reaches_the_answers_the_audit_or_the_logs(
    client: TestClient, auth: dict[str, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answers: list[str] = []
    intent = small_intent()
    intent["credentials"] = [
        {"name": "leafs", "username": "ops", "secret_ref": "vault:secret/fabric#leafs"}
    ]
    intent["switches"][0] = {**intent["switches"][0], "credential_ref": None, "credential": "leafs"}
    pasted = small_intent()
    pasted["switches"][0]["credential_ref"] = PASTED
    pasted_group = {**intent, "credentials": [{**intent["credentials"][0], "secret_ref": PASTED}]}
    operator = auth["operator"]
    for body in (pasted, pasted_group):
        response = client.put(
            "/api/v1/intent",
            json={"intent": body, "reason": "r"},
            headers=with_if_match(operator, 0),
        )
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        answers.append(response.text)
    written = client.put(
        "/api/v1/intent", json={"intent": intent, "reason": "r"}, headers=with_if_match(operator, 0)
    )
    assert written.status_code == 201, written.text
    refused = client.get("/api/v1/intent", headers={"Authorization": f"Bearer {BAD_TOKEN}"})
    assert refused.status_code == 401
    answers.append(refused.text)
    audit = client.get("/api/v1/audit", headers=auth["admin"])
    assert audit.status_code == 200
    stored = client.get("/api/v1/intent", headers=auth["viewer"]).text
    # What is stored and audited is the reference, by name.
    assert "vault:secret/fabric#leafs" in audit.text
    assert "vault:secret/fabric#leafs" in stored
    seen = "\n".join([*answers, audit.text, stored, caplog.text])
    assert PASTED not in seen
    assert BAD_TOKEN not in seen
    for headers in auth.values():
        assert headers["Authorization"].removeprefix("Bearer ") not in seen
