"""What ``sluice get <kind>`` knows about each kind: its API path and its table columns.

One declaration per kind instead of a branch per kind in the command; field names follow the
REST contract (docs/architecture.md) and the store's records (controller/store/models.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.cli.render import (
    Column,
    field,
    gnmi_target,
    pias,
    port_speeds,
    scheduling,
    switch_login,
    text,
)
from controller.types import JsonObject


@dataclass(frozen=True, slots=True)
class Resource:
    """A kind the CLI can list and show. ``paged``: the list answers ``{items, total, ...}``."""

    path: str
    columns: Sequence[Column]
    paged: bool = True
    item_key: str = "name"


def _audit_resource(entry: JsonObject) -> str:
    return f"{entry.get('resource_type', '?')}/{entry.get('resource_id', '?')}"


def _count(name: str) -> Column:
    return (name.upper(), lambda doc: str(len(doc.get(name) or [])))


def rejected(version: JsonObject) -> str:
    """``rollout 7`` for a version a rolled-back rollout rejected, else ``-``."""
    rollout = version.get("rejected_by_rollout")
    if version.get("rejected_at") is None:
        return text(None)
    return f"rollout {rollout}" if rollout is not None else "yes"


RESOURCES: Mapping[str, Resource] = {
    "switches": Resource(
        path="/switches",
        columns=(
            ("NAME", field("name")),
            ("ROLE", field("role")),
            ("GNMI", gnmi_target),
            _count("ports"),
            ("SPEEDS", port_speeds),
            ("LOGIN", switch_login),
        ),
    ),
    "hosts": Resource(
        path="/hosts",
        columns=(
            ("NAME", field("name")),
            ("ADDRESS", field("address")),
            ("NIC_GBPS", field("nic_gbps")),
        ),
    ),
    "classes": Resource(
        path="/service-classes",
        columns=(
            ("NAME", field("name")),
            ("DSCP", field("dscp")),
            ("QUEUE", field("queue")),
            ("SCHEDULING", scheduling),
            ("ECN", field("ecn")),
            ("QJUMP", field("qjump_level")),
            ("PIAS", pias),
        ),
    ),
    "versions": Resource(
        path="/intent/versions",
        columns=(
            ("VERSION", field("number")),
            ("AUTHOR", field("author")),
            ("CREATED", field("created_at")),
            ("REJECTED", rejected),
            ("REASON", field("reason")),
        ),
        item_key="number",
    ),
    "tokens": Resource(
        path="/tokens",
        columns=(
            ("ID", field("id")),
            ("NAME", field("name")),
            ("ROLE", field("role")),
            ("CREATED", field("created_at")),
            ("REVOKED", field("revoked_at")),
        ),
        item_key="id",
    ),
}

AUDIT_COLUMNS: Sequence[Column] = (
    ("AT", field("at")),
    ("ACTOR", field("actor")),
    ("ACTION", field("action")),
    ("RESOURCE", _audit_resource),
    ("VERSION", field("version")),
)

# ``get fabric`` and ``get intent`` are single documents shown as key/value rows.
SINGLE_DOCUMENTS = ("fabric", "intent")
KINDS = (*RESOURCES, *SINGLE_DOCUMENTS)
