"""API tokens: shown once, stored only as SHA-256, never in logs, reprs or the audit log."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, pool, text

from controller.services.common import Actor
from controller.services.tokens import AccessRole, IssuedToken, Principal, TokenService
from controller.store.db import make_engine, make_sessions
from controller.store.models import ApiToken
from tests.integration.conftest import StepClock


def _dump_table(db_url: str, table: str) -> str:
    """Every row of ``table`` as text, to search for a secret anywhere in it."""
    engine = create_engine(db_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return "\n".join(
                str(tuple(row)) for row in conn.execute(text(f"SELECT * FROM {table}"))
            )
    finally:
        engine.dispose()


def test_created_token_is_returned_once_and_only_its_hash_is_stored(
    client: TestClient, auth: Any, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    created = client.post(
        "/api/v1/tokens", json={"name": "ci", "role": "operator"}, headers=auth["admin"]
    )
    assert created.status_code == 201
    secret = created.json()["token"]
    assert secret.startswith("slc_")
    # The token works, as an operator.
    bearer = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/switches", headers=bearer).status_code == 200
    assert client.get("/api/v1/tokens", headers=bearer).status_code == 403

    tokens_table = _dump_table(db_url, "api_tokens")
    assert secret not in tokens_table
    assert hashlib.sha256(secret.encode()).hexdigest() in tokens_table
    audit_table = _dump_table(db_url, "audit_log")
    assert secret not in audit_table
    assert hashlib.sha256(secret.encode()).hexdigest() not in audit_table
    assert secret not in caplog.text

    listed = client.get("/api/v1/tokens", headers=auth["admin"])
    assert secret not in listed.text
    assert "ci" in [t["name"] for t in listed.json()["items"]]


def test_active_names_are_unique_and_a_revoked_name_is_free(client: TestClient, auth: Any) -> None:
    body = {"name": "deploy", "role": "viewer"}
    first = client.post("/api/v1/tokens", json=body, headers=auth["admin"]).json()
    again = client.post("/api/v1/tokens", json=body, headers=auth["admin"])
    assert again.status_code == 409
    assert client.delete(f"/api/v1/tokens/{first['id']}", headers=auth["admin"]).status_code == 204
    assert client.delete(f"/api/v1/tokens/{first['id']}", headers=auth["admin"]).status_code == 404
    assert client.post("/api/v1/tokens", json=body, headers=auth["admin"]).status_code == 201


def test_reprs_carry_no_secret(db_url: str) -> None:
    engine = make_engine(db_url, pool_size=1)
    try:
        service = TokenService(make_sessions(engine), clock=StepClock())
        issued = service.create(
            name="repr", role=AccessRole.ADMIN, actor=Actor(name="t", request_id="r")
        )
        principal = service.authenticate(issued.secret)
        with make_sessions(engine)() as session:
            row = session.get(ApiToken, issued.info.id)
            assert row is not None
            row_repr = repr(row)
            digest = row.token_sha256
    finally:
        engine.dispose()
    assert isinstance(issued, IssuedToken)
    assert isinstance(principal, Principal)
    for text_form in (repr(issued), str(issued), repr(principal), row_repr):
        assert issued.secret not in text_form
        assert digest not in text_form
    assert principal.role is AccessRole.ADMIN
