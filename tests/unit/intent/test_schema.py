"""The intent's published JSON Schema and its parser agree (issue 25, "Inputs"): a null the
schema allows is one the parser takes, an integer the schema allows (455.0 is one in JSON
Schema) is one the parser takes, and text or booleans where numbers belong are refused by
both. On main the API published the intent as "any object", so nulls, strings and any key
passed the schema and were refused by the parser.

Only field-level validation is compared (``Intent.model_validate``): the cross-object rules
(validate.py) are beyond JSON Schema and documented so."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import ValidationError

from controller.intent.models import Intent
from controller.intent.schema import intent_schemas

from .intents import intent_data

Path = tuple[str | int, ...]
SCHEMAS = intent_schemas(ref_template="#/$defs/{model}")


def every_model_intent() -> dict[str, Any]:
    """A valid intent in which every model appears with every field written."""
    data = intent_data()
    data["credentials"] = [{"name": "leafs", "username": "ops", "secret_ref": "vault:kv/f#pw"}]
    data["switches"][1] = {
        **data["switches"][1],
        "credential_ref": None,
        "credential": "leafs",
        "gnmi": {"address": "127.0.0.1", "port": 50052, "target": "t", "set_deadline_s": 90},
    }
    data["switches"][0]["username"] = "leaf1-ops"
    data["switches"][0]["ports"][0] |= {
        "buffer_bytes": 1_000_000,
        "cable_length_m": 40.0,
        "mtu_bytes": 9100,
    }
    data["hosts"][0]["ssh"] = {"user": "root", "port": 22, "key_ref": "file:/k", "become": False}
    fabric = data["fabric"]
    fabric["qjump"] |= {"window": "aligned", "release_jitter_us": 0.0}
    fabric["host_transport"] = {"tcp_ecn": 1, "congestion_control": "dctcp"}
    fabric["host_exporter"] = {"port": 9140, "fan_in_window_ms": 10, "reap_interval_s": 5.0}
    fabric["lossless"] = {
        "cell_bytes": 144,
        "pipeline_latency_bytes": 18432.0,
        "mac_phy_delay_bytes": 819.2,
        "peer_response_bytes": 3891.2,
        "gearbox_delay_ns": 0.0,
        "small_packet_pct": 100.0,
        "lossless_mtu_bytes": 1024,
        "cable_length_m": 5.0,
        "dynamic_th": 0,
    }
    for section in ("agent", "counters", "reconcile", "health", "tuning"):
        fabric[section] = Intent.model_validate(data).fabric.model_dump(mode="json")[section]
    classes = data["service_classes"]
    classes[1]["pias"] |= {"derivation": "byte_weighted", "thresholds_bytes": [1000]}
    classes[2]["hosts_match"] = {"protocol": "tcp", "dports": [80, "8000-8080"], "uid": 0}
    classes[2]["hosts_match"] |= {"sports": [1], "cgroup": "system.slice/x.service"}
    classes[3]["scheduling"] |= {"weight_min": 10, "weight_max": 80}
    classes[3]["ecn_lambda"] = 0.5
    classes[2]["lossless"] = {
        "pfc_priority": 3,
        "kmin_bytes": 5_000,
        "kmax_bytes": 200_000,
        "pmax_pct": 1,
    }
    classes[3]["hdcq"] = {
        "flow_type_thresh_bytes": 100_000,
        "ack": {"dscp": 40, "queue": 4},
        "long": {"dscp": 41, "queue": 2},
        "wrr_weight": 5,
        "port_threshold_pct": 60.0,
    }
    Intent.model_validate(data)  # sound field by field
    return data


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    options = [o for o in schema.get("anyOf", ()) if o.get("type") != "null"]
    return resolve(options[0]) if len(options) == 1 else schema


def fields(
    data: Any, schema: dict[str, Any], path: Path = ()
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every field of ``data`` with its property schema, depth first."""
    model = resolve(schema)
    if isinstance(data, dict) and "properties" in model:
        for name, prop in model["properties"].items():
            yield (*path, name), prop
            if name in data:
                yield from fields(data[name], prop, (*path, name))
    elif isinstance(data, list) and "items" in model:
        for i, item in enumerate(data):
            yield from fields(item, model["items"], (*path, i))


def with_value(data: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    node: Any = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


def refused_at(data: dict[str, Any], path: Path) -> bool:
    """Whether field-level validation refuses ``data`` at ``path`` (or inside it)."""
    try:
        Intent.model_validate(data)
    except ValidationError as error:
        return any(tuple(e["loc"])[: len(path)] == path for e in error.errors())
    return False


def schema_refuses(data: dict[str, Any]) -> bool:
    schema = {**SCHEMAS["Intent"], "$defs": SCHEMAS}
    return not Draft202012Validator(schema).is_valid(data)


def test_the_sample_covers_every_model() -> None:
    data = every_model_intent()
    props = [resolve(prop) for _, prop in fields(data, SCHEMAS["Intent"])]
    seen = {p.get("title") for p in props} | {
        resolve(p["items"]).get("title") for p in props if "items" in p
    }
    models = {name for name, schema in SCHEMAS.items() if "properties" in schema}
    assert models - {"Intent"} <= seen, models - seen
    assert not schema_refuses(data)


def test_a_null_is_refused_by_the_parser_exactly_where_the_schema_refuses_it() -> None:
    data = every_model_intent()
    disagree = []
    for path, _ in fields(data, SCHEMAS["Intent"]):
        nulled = with_value(data, path, None)
        if refused_at(nulled, path) != schema_refuses(nulled):
            disagree.append((path, refused_at(nulled, path), schema_refuses(nulled)))
    assert disagree == [], "(path, parser refuses, schema refuses)"


def test_an_integral_float_is_taken_wherever_the_schema_says_integer() -> None:
    data = every_model_intent()
    integers = [
        (path, value)
        for path, prop in fields(data, SCHEMAS["Intent"])
        if "integer" in {o.get("type") for o in [prop, *prop.get("anyOf", ())]}
        and isinstance(value := _at(data, path), int)
        and not isinstance(value, bool)
    ]
    assert len(integers) > 40, integers
    for path, value in integers:
        floated = with_value(data, path, float(value))
        assert not schema_refuses(floated), path
        assert not refused_at(floated, path), path
        assert Intent.model_validate(floated) == Intent.model_validate(data), path


@pytest.mark.parametrize("wrong", ["25", True, "yes"], ids=["text", "boolean", "yes"])
def test_text_and_booleans_where_a_number_or_boolean_belongs_are_refused_by_both(
    wrong: object,
) -> None:
    data = every_model_intent()
    for path in (("switches", 0, "ports", 0, "speed_gbps"), ("hosts", 0, "ssh", "become")):
        if path[-1] == "become" and isinstance(wrong, bool):
            continue  # a boolean is what become wants
        changed = with_value(data, path, wrong)
        assert refused_at(changed, path), (path, wrong)
        assert schema_refuses(changed), (path, wrong)


def _at(data: Any, path: Path) -> Any:
    for part in path:
        listed = isinstance(data, list) and isinstance(part, int)
        if not (listed or (isinstance(data, dict) and part in data)):
            return None
        data = data[part]
    return data
