"""Error answers to domain errors, ETags to versions, and exit codes for each error."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from api.errors import TYPE_PREFIX, slug
from controller.cli.client import ApiClient, error_from_response, version_from_etag
from controller.cli.exit_codes import ExitCode, changes_exit_code, exit_code_for
from controller.errors import (
    ApiUnreachable,
    Conflict,
    FieldProblem,
    Forbidden,
    IntentInvalid,
    InventoryMismatch,
    LosslessConflict,
    NamedConflict,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    SluiceError,
    Unauthenticated,
    WatchdogNotStarted,
)

PROBLEM = "application/problem+json"


def answer(status: int, body: dict[str, Any] | None = None) -> httpx.Response:
    if body is None:
        return httpx.Response(
            status, text="<html>oops</html>", headers={"content-type": "text/html"}
        )
    return httpx.Response(status, json=body, headers={"content-type": PROBLEM})


def test_field_problems_survive_as_intent_invalid():
    body = {
        "title": "invalid intent",
        "status": 422,
        "detail": "2 problems",
        "errors": [
            {"field": "fabric.mtu_bytes", "reason": "must be at most 9216"},
            {"field": "service_classes[0].queue", "reason": "must be 0..7"},
        ],
    }
    error = error_from_response(answer(422, body))
    assert isinstance(error, IntentInvalid)
    assert error.problems == [
        FieldProblem("fabric.mtu_bytes", "must be at most 9216"),
        FieldProblem("service_classes[0].queue", "must be 0..7"),
    ]


def test_bad_request_without_problems_keeps_the_detail():
    error = error_from_response(
        answer(400, {"title": "bad request", "detail": "limit must be > 0"})
    )
    assert isinstance(error, IntentInvalid)
    assert error.problems == [FieldProblem("request", "limit must be > 0")]


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (401, Unauthenticated),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (412, PreconditionFailed),
        (428, PreconditionRequired),
    ],
)
def test_status_maps_to_its_domain_error(status, error_class):
    error = error_from_response(answer(status, {"title": "t", "detail": f"detail {status}"}))
    assert type(error) is error_class
    assert error.detail == f"detail {status}"


def test_server_error_that_is_not_json_is_a_plain_sluice_error():
    error = error_from_response(answer(502))
    assert type(error) is SluiceError
    assert "502" in error.detail
    assert "Bad Gateway" in error.detail


@pytest.mark.parametrize(
    ("etag", "version"), [('"7"', 7), ('W/"12"', 12), (None, None), ('"abc"', None), ("", None)]
)
def test_version_from_etag(etag, version):
    assert version_from_etag(etag) == version


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (IntentInvalid([FieldProblem("a", "b")]), 3),
        (Conflict("x"), 4),
        (PreconditionFailed("x"), 4),
        (PreconditionRequired("x"), 4),
        (Unauthenticated("x"), 5),
        (Forbidden("x"), 5),
        (NotFound("x"), 6),
        (ApiUnreachable("x"), 7),
        (SluiceError("x"), 1),
        (ValueError("x"), 1),
    ],
)
def test_exit_code_contract(error, code):
    # The numbers are the documented contract (docs/operator-guide.md, "Exit codes").
    assert exit_code_for(error) == code


def test_changes_exit_code_only_when_asked():
    assert int(changes_exit_code(True, detailed=True)) == 10
    assert changes_exit_code(True, detailed=False) == ExitCode.OK
    assert changes_exit_code(False, detailed=True) == ExitCode.OK


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_listener_is_unreachable_and_the_token_stays_out_of_the_message():
    token = "s3cr3t-token-value"
    with httpx.Client(base_url=f"http://127.0.0.1:{closed_port()}", timeout=5) as http:
        api = ApiClient(http, token)
        with pytest.raises(ApiUnreachable) as raised:
            api.get_json("/intent")
    assert "127.0.0.1" in raised.value.detail
    assert token not in raised.value.detail
    assert token not in repr(api)


@pytest.mark.parametrize("error_class", [InventoryMismatch, LosslessConflict, WatchdogNotStarted])
def test_a_conflict_naming_fields_comes_back_as_its_own_error(
    error_class: type[NamedConflict],
) -> None:
    # The type the API gives the error (api/errors.py), and its errors, as the CLI reads them.
    problem = FieldProblem("leaf1: PFC_WD", "start it: `sudo pfcwd interval 200`")
    body = {
        "type": TYPE_PREFIX + slug(error_class.title),
        "title": error_class.title,
        "status": 409,
        "detail": str(problem),
        "errors": [{"field": problem.path, "reason": problem.reason}],
    }
    error = error_from_response(answer(409, body))
    assert type(error) is error_class
    assert isinstance(error, NamedConflict)
    assert error.problems == [problem]
    assert exit_code_for(error) == ExitCode.CONFLICT
