"""The intent's JSON Schema, as the API publishes it (``api/openapi.py``): generated from the
models themselves (validation mode), so a null, a type or a bound the schema refuses is one
the parser refuses, and the other way round (``tests/unit/intent/test_schema.py`` holds
them to it). What the models check in code and JSON Schema can say is added where the field
is declared (a secret reference's schemes, a QJUMP level as a factor's key).

Cross-object rules (``validate.py``: each DSCP once, QJUMP levels within the line rate...) are
beyond JSON Schema: data the schema accepts may still be refused by them, with a 422 naming
the field.
"""

from __future__ import annotations

from typing import Any

from controller.intent.models import Intent

REF_TEMPLATE = "#/components/schemas/{model}"


def intent_schemas(ref_template: str = REF_TEMPLATE) -> dict[str, dict[str, Any]]:
    """Every model's schema by name, ``Intent`` included, each referring to the others by
    ``ref_template`` (an OpenAPI document's components by default)."""
    schema = Intent.model_json_schema(mode="validation", ref_template=ref_template)
    schemas: dict[str, dict[str, Any]] = schema.pop("$defs")
    schemas["Intent"] = schema
    return schemas
