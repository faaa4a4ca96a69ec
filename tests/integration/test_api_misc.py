"""Health, OpenAPI, error mapping, request ids: the parts of the API around the resources."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient

import controller.errors as errors_module
from api.errors import STATUS_OF, field_of, status_of
from api.main import create_app
from controller.errors import FieldProblem, IntentInvalid, NotFound, SluiceError
from controller.settings import DatabaseSettings, Settings


def test_healthz_needs_no_token_and_reports_the_database(module_client: TestClient) -> None:
    response = module_client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_healthz_is_503_when_the_database_is_gone() -> None:
    with socket.socket() as sock:  # a port nothing listens on: bound, then released
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/nothing"
    with TestClient(create_app(Settings.for_database(url))) as client:
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert str(port) not in response.text  # no connection details leak


def test_the_app_refuses_to_start_without_a_database_url() -> None:
    with pytest.raises(ValueError, match="DATABASE_URL"):
        create_app(Settings(database=DatabaseSettings(url=None)))


def test_openapi_operation_ids_are_stable_and_unique(module_client: TestClient) -> None:
    spec = module_client.get("/openapi.json").json()
    ids = [op["operationId"] for path in spec["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    expected = {
        "healthz",
        "get_intent",
        "replace_intent",
        "validate_intent",
        "list_versions",
        "get_version",
        "list_switches",
        "get_switch",
        "create_switch",
        "put_switch",
        "delete_switch",
        "list_hosts",
        "get_host",
        "create_host",
        "put_host",
        "delete_host",
        "list_service_classes",
        "get_service_class",
        "create_service_class",
        "put_service_class",
        "delete_service_class",
        "get_fabric",
        "put_fabric",
        "create_plans",
        "get_diff",
        "list_audit",
        "list_tokens",
        "create_token",
        "revoke_token",
        "start_rollout",
        "list_rollouts",
        "get_rollout",
        "pause_rollout",
        "resume_rollout",
        "rollback_rollout",
        "list_drift",
        "list_reconcile_runs",
        "run_reconcile",
        "plan_hosts",
        "apply_hosts",
        "host_exporter_targets",
        "list_host_runs",
        "get_host_run",
        "get_switch_telemetry",
        "get_port_series",
        "get_health",
        "run_tuner",
        "list_proposals",
        "get_proposal",
        "approve_proposal",
        "reject_proposal",
        "request_twin_run",
        "get_twin_run",
        "request_discovery",
        "get_discovery",
        "check_roce",
        "get_roce_check",
        "request_release",
        "list_releases",
        "get_release",
        "list_adoptions",
    }
    assert set(ids) == expected
    assert "HTTPBearer" in spec["components"]["securitySchemes"]


def test_unknown_routes_and_methods_are_problems(module_client: TestClient) -> None:
    missing = module_client.get("/api/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = module_client.patch("/api/v1/intent")
    assert wrong.status_code == 405
    assert wrong.json()["title"] == "method not allowed"


def test_every_domain_error_class_has_a_status() -> None:
    classes = [
        obj
        for obj in vars(errors_module).values()
        if isinstance(obj, type) and issubclass(obj, SluiceError)
    ]
    assert set(classes) <= set(STATUS_OF)
    assert status_of(IntentInvalid([FieldProblem("a", "b")])) == 422
    assert status_of(NotFound("x")) == 404

    class Unmapped(NotFound):
        pass

    # A subclass nobody mapped inherits its parent's status.
    assert status_of(Unmapped("x")) == 404


@pytest.mark.parametrize(
    ("loc", "field"),
    [
        (("body", "intent", "switches", 0, "name"), "intent.switches[0].name"),
        (("query", "limit"), "limit"),
        (("body",), "body"),
        (("header", "If-Match"), "If-Match"),
    ],
)
def test_validation_locations_become_dotted_fields(loc: tuple[Any, ...], field: str) -> None:
    assert field_of(loc) == field


def test_a_client_request_id_is_kept_only_when_plain(module_client: TestClient) -> None:
    plain = module_client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert plain.headers["X-Request-ID"] == "abc-123"
    odd = module_client.get("/healthz", headers={"X-Request-ID": "a b\tc" + "x" * 80})
    generated = odd.headers["X-Request-ID"]
    assert generated != "a b\tc" + "x" * 80
    assert len(generated) == 32  # a uuid4 in hex
