"""The OpenAPI document, completed so it describes what the API answers: every error status
an operation can give, each as ``application/problem+json`` with the ``Problem`` schema,
``If-Match`` required where a write needs it, and the writes that may create (201).

FastAPI declares only the success answer and a 422 as ``application/json``; the statuses
here follow from what each operation depends on (a token, a role, ``If-Match``, a path id,
a body) and from ``api/errors.py``'s mapping, so a route added later gets them too.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts

from api.body import required_role
from api.errors import PROBLEM_JSON, RETRY_AFTER_S
from controller.intent.schema import REF_TEMPLATE, intent_schemas
from controller.services.tokens import AccessRole

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "RFC 9457 problem details",
    "type": "object",
    "required": ["type", "title", "status", "detail", "instance"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "request_id": {"type": ["string", "null"]},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "reason"],
                "properties": {"field": {"type": "string"}, "reason": {"type": "string"}},
            },
        },
    },
}

DESCRIPTIONS = {
    400: "the body cannot be read (not UTF-8, too large or deep, a key twice)",
    401: "no valid bearer token",
    403: "the token's role is too weak",
    404: "not found",
    409: "conflicts with the current state",
    413: "the body is larger than 8 MiB (by Content-Length, or as it arrived)",
    412: "If-Match names a version that is no longer current",
    422: "a field is invalid (each named in errors)",
    428: "If-Match is missing",
    502: "an upstream (switch or Prometheus) failed",
    503: "the database (or Prometheus) does not answer; retry after Retry-After",
    504: "the worker or a switch did not answer in time",
}

# Operations that answer only from what exists and never name a missing thing.
NEVER_404 = frozenset(
    {
        "healthz",
        "list_tokens",
        "create_token",
        "list_audit",
        "list_drift",
        "list_reconcile_runs",
        "list_versions",
        "list_host_runs",
        "list_rollouts",
        "list_releases",
        "list_adoptions",
        "validate_intent",
    }
)
# Writes that cannot conflict with stored state.
NEVER_409 = frozenset({"validate_intent", "create_plans"})
# Operations that wait for the worker or reach an upstream.
UPSTREAM = {
    "run_reconcile": (504,),
    "plan_hosts": (504,),
    "apply_hosts": (504,),
    "request_discovery": (504,),
    "check_roce": (504,),
    "get_roce_check": (409,),  # its discovery still pending: the worker has not read it yet
}
# Writes that create what they name when it did not exist (``mark_written``: 201).
MAY_CREATE = ("put_", "replace_intent")
# Bodies that are the intent or a part of it: the operation and the intent model it takes.
INTENT_BODIES = {
    "validate_intent": "Intent",
    "create_switch": "Switch",
    "put_switch": "Switch",
    "create_host": "Host",
    "put_host": "Host",
    "create_service_class": "ServiceClass",
    "put_service_class": "ServiceClass",
    "put_fabric": "Fabric",
}
# Fields of the API's own schemas that hold a whole intent.
INTENT_FIELDS = (
    ("IntentIn", "intent"),
    ("PlanRequest", "intent"),
    ("IntentOut", "intent"),
    ("ValidateOut", "intent"),
)


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def complete(app: FastAPI) -> dict[str, Any]:
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        routes=app.routes,
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    _publish_intent_schema(document, schemas)
    # Included routers nest their routes (FastAPI >= 0.16x): walk them as get_openapi does.
    originals = (context.original_route for context in iter_route_contexts(app.routes))
    routes = {route.name: route for route in originals if isinstance(route, APIRoute)}
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            route = routes.get(operation.get("operationId", ""))
            _complete_operation(path, method, operation, route)
    return document


def _publish_intent_schema(document: dict[str, Any], schemas: dict[str, Any]) -> None:
    """The intent's models as components (``controller/intent/schema.py``), and every body
    or field that holds the intent or a part of it referring to them, so a client (and the
    fuzzer) knows each field's type, bounds and nulls, not just "an object"."""
    intent = intent_schemas()
    # A body may hold an intent model itself (a discovery's GnmiEndpoint): the same model,
    # published once, the intent's way. Another model under an intent model's name is a bug.
    clashes = [
        name
        for name in intent.keys() & schemas.keys()
        if set(schemas[name].get("properties", {})) != set(intent[name].get("properties", {}))
    ]
    if clashes:
        raise ValueError(f"intent models named like API schemas: {sorted(clashes)}")
    schemas.update(intent)
    for item in document.get("paths", {}).values():
        for operation in item.values():
            model = INTENT_BODIES.get(operation.get("operationId", ""))
            if model is not None:
                content = operation["requestBody"]["content"]["application/json"]
                content["schema"] = {"$ref": REF_TEMPLATE.format(model=model)}
    for schema_name, field_name in INTENT_FIELDS:
        properties = schemas[schema_name]["properties"]
        properties[field_name] = _referring(properties[field_name], "Intent")


def _referring(field: dict[str, Any], model: str) -> dict[str, Any]:
    """``field``'s schema with its object replaced by ``model``'s (null kept if allowed)."""
    ref = {"$ref": REF_TEMPLATE.format(model=model)}
    nullable = any(option.get("type") == "null" for option in field.get("anyOf", ()))
    described = {k: v for k, v in field.items() if k in ("description", "title", "default")}
    return {**described, "anyOf": [ref, {"type": "null"}]} if nullable else {**described, **ref}


def _complete_operation(
    path: str, method: str, operation: dict[str, Any], route: APIRoute | None
) -> None:
    name = operation.get("operationId", "")
    parameters = operation.get("parameters", [])
    for parameter in parameters:
        if parameter.get("in") == "header" and parameter.get("name") == "If-Match":
            parameter["required"] = True
    responses = operation.setdefault("responses", {})
    for status in sorted(_error_statuses(path, method, operation, route)):
        answer = responses.setdefault(str(status), {"description": DESCRIPTIONS.get(status, "")})
        answer["description"] = answer.get("description") or DESCRIPTIONS.get(status, "")
        answer["content"] = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
        if status == 503:
            answer["headers"] = {
                "Retry-After": {
                    "description": f"seconds to wait ({RETRY_AFTER_S} while the database is away)",
                    "schema": {"type": "string"},
                }
            }
    if name.startswith(MAY_CREATE) and "201" not in responses and "200" in responses:
        responses["201"] = {**responses["200"], "description": "created"}


def _error_statuses(
    path: str, method: str, operation: dict[str, Any], route: APIRoute | None
) -> set[int]:
    name = operation.get("operationId", "")
    parameters = operation.get("parameters", [])
    has_body = "requestBody" in operation
    statuses = {503}
    if parameters or has_body:
        statuses.add(422)
    if has_body:
        statuses.update((400, 413))
    if operation.get("security"):
        statuses.add(401)
        role = required_role(route.dependant) if route is not None else None
        if role is not None and role is not AccessRole.VIEWER:
            statuses.add(403)
    if name not in NEVER_404:
        statuses.add(404)
    if method in ("post", "put", "delete") and name not in NEVER_409:
        statuses.add(409)
    if any(p.get("name") == "If-Match" for p in parameters):
        statuses.update((412, 428))
    statuses.update(UPSTREAM.get(name, ()))
    if path.startswith(("/api/v1/telemetry", "/api/v1/health")):
        statuses.add(502)
    return statuses
