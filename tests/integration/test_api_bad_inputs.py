"""Bad inputs through the API: each is answered with problem+json naming the field at fault."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import put_intent, small_intent

Mutate = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    body: Any
    field: str
    if_match: bool = False
    role: str = "admin"


def _intent_with(mutate: Mutate) -> dict[str, Any]:
    intent = small_intent()
    mutate(intent)
    return {"intent": intent, "reason": "bad input test"}


def _set(path: list[str | int], value: Any) -> Mutate:
    def mutate(intent: dict[str, Any]) -> None:
        node: Any = intent
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


def _drop(key: str) -> Mutate:
    return lambda intent: intent.pop(key)


def _duplicate_host(intent: dict[str, Any]) -> None:
    intent["hosts"].append({**intent["hosts"][0], "address": "10.0.1.99"})


CASES: dict[str, Case] = {
    "reason missing": Case("PUT", "/api/v1/intent", {"intent": small_intent()}, "reason", True),
    "unknown body key": Case(
        "PUT", "/api/v1/intent", {"intent": {}, "reason": "r", "intnet": {}}, "intnet", True
    ),
    "intent not an object": Case(
        "PUT", "/api/v1/intent", {"intent": [1], "reason": "r"}, "intent", True
    ),
    "fabric missing": Case("PUT", "/api/v1/intent", _intent_with(_drop("fabric")), "fabric", True),
    "unknown key in a switch": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["switches", 0, "colour"], "blue")),
        "switches[0].colour",
        True,
    ),
    "DSCP used twice": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["service_classes", 1, "dscp"], [10])),
        "service_classes[1].dscp[0]",
        True,
    ),
    "queue 8": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["service_classes", 0, "queue"], 8)),
        "service_classes[0].queue",
        True,
    ),
    "DWRR without a weight": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["service_classes", 0, "scheduling"], {"type": "DWRR"})),
        "service_classes[0].scheduling.weight",
        True,
    ),
    "secret instead of a credential reference": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["switches", 0, "credential_ref"], "hunter2")),
        "switches[0].credential_ref",
        True,
    ),
    "port speed not a number": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["switches", 0, "ports", 0, "speed_gbps"], "fast")),
        "switches[0].ports[0].speed_gbps",
        True,
    ),
    # K = 25e9 b/s x 40e-6 s x 1.0 / 8 = 125 000 B on the 25G port: above a 100 000 B buffer.
    "threshold above the buffer": Case(
        "PUT",
        "/api/v1/intent",
        _intent_with(_set(["fabric", "port_buffer_bytes"], 100_000)),
        "fabric.port_buffer_bytes",
        True,
    ),
    "duplicate host name": Case(
        "PUT", "/api/v1/intent", _intent_with(_duplicate_host), "hosts[1].name", True
    ),
    "negative NIC speed in a new host": Case(
        "POST",
        "/api/v1/hosts",
        {"name": "host9", "address": "10.0.1.9", "nic_gbps": -1},
        "hosts[1].nic_gbps",
        True,
    ),
    "body name differs from the path": Case(
        "PUT",
        "/api/v1/hosts/host1",
        {"name": "other", "address": "10.0.1.11", "nic_gbps": 25},
        "name",
        True,
    ),
    "fabric MTU too small": Case(
        "PUT",
        "/api/v1/fabric",
        {"base_rtt_us": 40, "port_buffer_bytes": 2_000_000, "mtu_bytes": 100},
        "fabric.mtu_bytes",
        True,
    ),
    "page size zero": Case("GET", "/api/v1/intent/versions?limit=0", None, "limit"),
    "page size above the maximum": Case("GET", "/api/v1/audit?limit=100000", None, "limit"),
    "negative offset": Case("GET", "/api/v1/hosts?offset=-1", None, "offset"),
    "unknown token role": Case("POST", "/api/v1/tokens", {"name": "x", "role": "root"}, "role"),
    "token name with spaces": Case(
        "POST", "/api/v1/tokens", {"name": "bad name!", "role": "viewer"}, "name"
    ),
    "diff version not a number": Case("GET", "/api/v1/diff?from=abc", None, "from"),
    "plan switches not a list": Case("POST", "/api/v1/plans", {"switches": "leaf1"}, "switches"),
    "roce check of a switch named badly": Case(
        "POST", "/api/v1/checks/roce", {"switches": ["leaf 1"]}, "switches[0]"
    ),
    "roce check with an unknown field": Case(
        "POST", "/api/v1/checks/roce", {"switch": "leaf1"}, "switch"
    ),
    "resource name with spaces": Case("GET", "/api/v1/switches/bad%20name", None, "name"),
    # The request is stored before the worker reads it, and PostgreSQL text holds no NUL: it
    # was a 500 (found by the fuzzer).
    "discovery address with a NUL": Case(
        "POST",
        "/api/v1/discoveries",
        {
            "endpoints": [
                {
                    "name": "new1",
                    "gnmi": {"address": "10.0.0.1\x00", "port": 8080},
                    "credential_ref": "env:GNMI_PASSWORD",
                }
            ]
        },
        "endpoints[0].gnmi.address",
    ),
}


@pytest.fixture(scope="module")
def seeded(module_client: TestClient, module_auth: Any) -> TestClient:
    # Every case is refused, so the one version stored here stays the head for all of them.
    assert put_intent(module_client, module_auth["operator"], small_intent(), 0).status_code == 201
    return module_client


def test_there_are_at_least_fifteen_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_a_problem_naming_the_field(
    seeded: TestClient, module_auth: Any, name: str
) -> None:
    case = CASES[name]
    headers = dict(module_auth[case.role])
    if case.if_match:
        headers["If-Match"] = '"1"'
    response = seeded.request(case.method, case.path, json=case.body, headers=headers)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 422
    assert problem["type"].startswith("urn:sluice:problem:")
    fields = {error["field"]: error["reason"] for error in problem["errors"]}
    assert case.field in fields, fields
    assert fields[case.field].strip()
    assert case.field in problem["detail"]
