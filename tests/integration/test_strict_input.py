"""Strict input (issue 12, "Inputs"): booleans are not numbers, ``sluice check`` and the API
refuse the same intents by the same name, documents past the size, depth and integer limits
get a named error in both, JSON keys given twice are refused as in YAML, and a viewer's
malformed write is 403 before anything reads its body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from controller.cli import CliDeps, app
from tests.integration.conftest import small_intent, with_if_match

Body = dict[str, Any]


def _check(tmp_path: Path, text: bytes) -> tuple[int, str]:
    """``sluice check`` (offline) on a file holding ``text``: exit code and all output."""
    path = tmp_path / "intent.yaml"
    path.write_bytes(text)
    result = CliRunner().invoke(app, ["check", "-f", str(path)], obj=CliDeps())
    return result.exit_code, result.stdout + result.stderr


def _put_raw(client: TestClient, headers: dict[str, str], raw: bytes) -> Any:
    """PUT /intent with ``raw`` as the body, If-Match "0" (nothing is stored by these)."""
    return client.put(
        "/api/v1/intent",
        content=raw,
        headers={**with_if_match(headers, 0), "Content-Type": "application/json"},
    )


def _with(path: list[str | int], value: Any) -> Body:
    intent = small_intent()
    node: Any = intent
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return intent


# Each: the intent, and the field both the check and the API must name.
NAMED_REFUSALS = {
    "queue-true": (["service_classes", 0, "queue"], True, "service_classes[0].queue"),
    "speed-true": (
        ["switches", 0, "ports", 0, "speed_gbps"],
        True,
        "switches[0].ports[0].speed_gbps",
    ),
    "dscp-true": (["service_classes", 0, "dscp"], [True], "service_classes[0].dscp"),
    "buffer-1e30": (["fabric", "port_buffer_bytes"], 1e30, "fabric.port_buffer_bytes"),
    "buffer-2^64": (["fabric", "port_buffer_bytes"], 2**64, "fabric.port_buffer_bytes"),
    "port-buffer-2^40": (
        ["switches", 0, "ports", 0, "buffer_bytes"],
        2**40,
        "switches[0].ports[0].buffer_bytes",
    ),
}


@pytest.mark.parametrize("case", NAMED_REFUSALS.values(), ids=NAMED_REFUSALS.keys())
def test_check_and_apply_refuse_the_same_intent_by_the_same_field(
    case: tuple[list[str | int], Any, str],
    module_client: TestClient,
    module_auth: dict[str, dict[str, str]],
    tmp_path: Path,
) -> None:
    path, value, field = case
    intent = _with(path, value)
    code, output = _check(tmp_path, yaml.safe_dump(intent).encode())
    assert code == 3, output
    assert field in output
    assert "unexpected" not in output

    body = json.dumps({"intent": intent, "reason": "strict"}).encode()
    response = _put_raw(module_client, module_auth["operator"], body)
    assert response.status_code == 422, response.text
    fields = [error["field"] for error in response.json()["errors"]]
    assert any(f.startswith(field) for f in fields), fields
    assert not any("base_rtt_us" in f for f in fields)  # the boolean is blamed, not a neighbour


def test_booleans_are_refused_with_a_reason_that_says_so(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    response = module_client.post(
        "/api/v1/intent/validate",
        json=_with(["service_classes", 0, "queue"], True),
        headers=module_auth["viewer"],
    )
    assert response.status_code == 422
    assert "boolean" in response.json()["detail"]


DOCUMENTS = {
    "5000-digit integer": (
        b'{"intent": {"fabric": {"base_rtt_us": ' + b"9" * 5000 + b"}}}",
        "digits",
    ),
    "100000 brackets": (b'{"intent": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests deeper"),
    "not UTF-8": (b'{"intent": {}, "reason": "\xff\xfe"}', "not UTF-8"),
    "a key twice": (b'{"intent": {}, "intent": {}, "reason": "x"}', "twice"),
    "NaN": (b'{"intent": {"fabric": {"base_rtt_us": NaN}}, "reason": "x"}', "NaN"),
}


@pytest.mark.parametrize("case", DOCUMENTS.values(), ids=DOCUMENTS.keys())
def test_unreadable_json_bodies_get_a_named_400(
    case: tuple[bytes, str], module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    raw, named = case
    response = _put_raw(module_client, module_auth["operator"], raw)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["title"] == "document invalid"
    assert named in problem["detail"]


YAML_DOCUMENTS = {
    "5000-digit integer": (b"fabric:\n  base_rtt_us: " + b"9" * 5000 + b"\n", "digits"),
    "100000 brackets": (b"fabric: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nests deeper"),
    "not UTF-8": (b"fabric:\n  egress_pool: \xff\xfe\n", "not UTF-8"),
    "a key twice": (b"fabric:\n  base_rtt_us: 1\n  base_rtt_us: 2\n", "duplicate key"),
}


@pytest.mark.parametrize("case", YAML_DOCUMENTS.values(), ids=YAML_DOCUMENTS.keys())
def test_unreadable_yaml_files_get_a_named_error_in_the_cli(
    case: tuple[bytes, str], tmp_path: Path
) -> None:
    raw, named = case
    code, output = _check(tmp_path, raw)
    assert code == 3, output
    assert named in output
    assert "unexpected" not in output
    assert "Traceback" not in output


def test_a_viewers_malformed_write_is_403_before_its_body_is_read(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    for raw in (b"{not json", b'{"intent": 1, "intent": 2}', b"[" * 100_000):
        response = _put_raw(module_client, module_auth["viewer"], raw)
        assert response.status_code == 403, response.text
    anonymous = module_client.put(
        "/api/v1/intent", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert anonymous.status_code == 401


# --- issue 25 ("Inputs"): what got through on main ------------------------------------------


def _only_error(client: TestClient, headers: dict[str, str], intent: Body) -> dict[str, str]:
    """The one field problem ``POST /intent/validate`` answers ``intent`` with (422)."""
    response = client.post("/api/v1/intent/validate", json=intent, headers=headers)
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    return dict(error)


def test_two_switches_at_one_endpoint_spelled_differently_are_refused_by_the_api(
    module_client: TestClient, module_auth: dict[str, dict[str, str]], tmp_path: Path
) -> None:
    # On main both were accepted and one switch's rollout would write the other's config.
    # "localhost" and "127.0.0.1" are one machine through the system's resolver (/etc/hosts).
    for first in ("::ffff:127.0.0.1", "localhost"):
        intent = small_intent()
        intent["switches"][0]["gnmi"]["address"] = first
        intent["switches"][1]["gnmi"]["port"] = 50051
        error = _only_error(module_client, module_auth["viewer"], intent)
        assert error["field"] == "switches[1].gnmi"
        assert "leaf1 and spine1" in error["reason"]
        code, output = _check(tmp_path, yaml.safe_dump(intent).encode())
        assert code == 3, output
        assert "switches[1].gnmi" in output


def test_qjump_factor_keys_that_collide_in_json_are_refused_by_the_api(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    # JSON keys are strings: "7" and "07" are two keys to JSON, one level to the intent.
    intent = small_intent()
    intent["fabric"]["qjump"] = {"hosts": 4, "factors": {"7": 1.0, "07": 2.0}}
    error = _only_error(module_client, module_auth["viewer"], intent)
    assert error["field"] == "fabric.qjump.factors"
    assert "keys '7' and '07' both mean 7" in error["reason"]


def test_apply_dry_run_refuses_the_alias_bomb_before_it_reaches_the_api(tmp_path: Path) -> None:
    # On main this hung past 2 GB expanding the aliases into the JSON it sent.
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 450
    requests: list[httpx.Request] = []

    def recording(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(503)

    def no_api(base_url: str, timeout_s: float) -> httpx.Client:
        return httpx.Client(base_url=base_url, transport=httpx.MockTransport(recording))

    result = CliRunner().invoke(
        app, ["apply", "--dry-run", "-f", str(path)], obj=CliDeps(make_http=no_api)
    )
    assert result.exit_code == 3, result.stdout + result.stderr
    assert "aliases included" in result.stderr
    assert requests == []


def test_a_malformed_body_is_refused_before_a_bad_if_match_as_documented(
    module_client: TestClient, module_auth: dict[str, dict[str, str]]
) -> None:
    # docs/api.md: the body is read (400), then its shape (422), then If-Match (428/412).
    # On main a null body with a malformed If-Match got 412, and without one 428.
    json_type = {**module_auth["operator"], "Content-Type": "application/json"}
    for if_match in ("garbage", 'W/"1"', '"999"', None):
        headers = json_type if if_match is None else {**json_type, "If-Match": if_match}
        for raw, status in ((b"null", 422), (b"{not json", 400), (b'{"intent": {}}', 422)):
            response = module_client.put("/api/v1/intent", content=raw, headers=headers)
            assert response.status_code == status, (if_match, raw, response.text)
    # A body of the right shape reaches the If-Match check.
    good = json.dumps({"intent": small_intent(), "reason": "x"}).encode()
    for if_match, status in (("garbage", 412), ('"999"', 412), (None, 428)):
        headers = json_type if if_match is None else {**json_type, "If-Match": if_match}
        response = module_client.put("/api/v1/intent", content=good, headers=headers)
        assert response.status_code == status, (if_match, response.text)


def test_integral_floats_are_taken_where_the_schema_says_integer(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    # JSON Schema's integer holds 455.0; on main the strict bodies refused it with 422.
    intent = small_intent()
    intent["fabric"]["port_buffer_bytes"] = 2_000_000.0
    written = client.put(
        "/api/v1/intent",
        json={"intent": intent, "reason": "floats"},
        headers=with_if_match(auth["operator"], 0),
    )
    assert written.status_code == 201, written.text
    stored = client.get("/api/v1/intent", headers=auth["viewer"]).json()["intent"]
    assert stored["fabric"]["port_buffer_bytes"] == 2_000_000
    operator = auth["operator"]
    rollout = client.post(
        "/api/v1/rollouts",
        json={
            "to_version": 1.0,
            "batch_size": 2.0,
            "failure_budget": 0.0,
            "allow_port_flaps": True,  # the first rollout adds queues: ports flap
        },
        headers=operator,
    )
    assert rollout.status_code == 201, rollout.text
    assert (rollout.json()["batch_size"], rollout.json()["to_version"]) == (2, 1)
    simulation = client.post("/api/v1/twin-runs", json={"flows": 100.0}, headers=operator)
    assert simulation.status_code == 202, simulation.text
    # A fraction, a boolean or text is still no integer.
    for wrong in (2.5, True, "2"):
        refused = client.post("/api/v1/rollouts", json={"batch_size": wrong}, headers=operator)
        assert refused.status_code == 422, (wrong, refused.text)


def test_the_published_intent_schema_refuses_the_nulls_the_parser_refuses(
    client: TestClient, auth: dict[str, dict[str, str]]
) -> None:
    # On main every intent body was "any object": a null where the parser wants a number
    # passed the schema. Now each intent body refers to the intent's own models.
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    validate = document["paths"]["/api/v1/intent/validate"]["post"]["requestBody"]
    assert validate["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Intent"
    }
    assert schemas["Fabric"]["properties"]["base_rtt_us"]["type"] == "number"
    assert "base_rtt_us" in schemas["Fabric"]["required"]
    put_switch = document["paths"]["/api/v1/switches/{name}"]["put"]["requestBody"]
    assert put_switch["content"]["application/json"]["schema"]["$ref"].endswith("/Switch")
    intent = small_intent()
    intent["fabric"]["base_rtt_us"] = None
    response = client.post("/api/v1/intent/validate", json=intent, headers=auth["viewer"])
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "fabric.base_rtt_us"
