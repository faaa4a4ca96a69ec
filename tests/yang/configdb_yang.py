"""CONFIG_DB entries checked with libyang against SONiC's YANG models plus sonic-sluice-agent.

A support module for the YANG tests (not product code). The SONiC models are read from the
``shared/sonic-yang`` directory that CI keeps beside the clone (sonic-buildimage
src/sonic-yang-models/yang-models/, templates rendered); ours from agents/qos-agent/yang/.

The translation from CONFIG_DB's ``TABLE|key`` hashes to a YANG data tree is the one
sonic-yang-mgmt applies before GCU validates a patch (sonic-buildimage
src/sonic-yang-mgmt/sonic_yang_ext.py): each table is the container of that name inside a
module's top-level container; the key is split on ``|`` into the keys of the list whose key
count matches; a list whose only child is another list stores a map (field name -> value);
a container under the table stores a fixed key (DEVICE_METADATA|localhost); comma strings
of a leaf-list are split; and numbers, booleans are given their JSON type from the schema.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import libyang

REPO = Path(__file__).resolve().parents[2]


def _sonic_yang_dir() -> Path:
    """``$SONIC_YANG_DIR``, else ``shared/sonic-yang`` beside the clone (or beside the
    directory of worktrees a clone's worktree sits in)."""
    if "SONIC_YANG_DIR" in os.environ:
        return Path(os.environ["SONIC_YANG_DIR"])
    for parent in REPO.parents:
        if (parent / "shared" / "sonic-yang").is_dir():
            return parent / "shared" / "sonic-yang"
    raise FileNotFoundError("SONiC's YANG models: set SONIC_YANG_DIR or keep shared/ beside")


SONIC_YANG_DIR = _sonic_yang_dir()
SLUICE_YANG_DIR = REPO / "agents" / "qos-agent" / "yang"

ConfigDb = Mapping[tuple[str, str], Mapping[str, str]]

_JSON_NUMBER = {
    libyang.Type.INT8,
    libyang.Type.INT16,
    libyang.Type.INT32,
    libyang.Type.UINT8,
    libyang.Type.UINT16,
    libyang.Type.UINT32,
}


@dataclass(frozen=True)
class TableModel:
    module: str
    top: str  # the module's top-level container
    lists: tuple[libyang.SList, ...]
    containers: tuple[libyang.SContainer, ...]


@cache
def context() -> libyang.Context:
    """Every SONiC model stored beside the clone, and ours; built once per test run."""
    ctx = libyang.Context(f"{SONIC_YANG_DIR}:{SLUICE_YANG_DIR}")
    for path in sorted([*SONIC_YANG_DIR.glob("*.yang"), *SLUICE_YANG_DIR.glob("*.yang")]):
        ctx.load_module(path.stem)
    return ctx


@cache
def table_models() -> dict[str, TableModel]:
    """CONFIG_DB table name -> where its model is, as sonic-yang-mgmt maps them."""
    found: dict[str, TableModel] = {}
    for module in context():
        for top in module.children():
            if not isinstance(top, libyang.SContainer):
                continue
            for table in top.children():
                if isinstance(table, libyang.SContainer):
                    kids = list(table.children())
                    found[table.name()] = TableModel(
                        module.name(),
                        top.name(),
                        tuple(k for k in kids if isinstance(k, libyang.SList)),
                        tuple(k for k in kids if isinstance(k, libyang.SContainer)),
                    )
    return found


def _leaf_json(leaf: libyang.SNode, value: str) -> Any:
    if isinstance(leaf, libyang.SLeafList):
        return [_scalar(leaf, item) for item in value.split(",")] if value else []
    return _scalar(leaf, value)


def _scalar(leaf: libyang.SNode, value: str) -> Any:
    base = leaf.type().base()  # type: ignore[attr-defined]
    if base in _JSON_NUMBER and value.lstrip("-").isdigit():
        return int(value)
    if base == libyang.Type.BOOL and value in ("true", "false"):
        return value == "true"
    return value  # anything else, or a malformed number: libyang says what is wrong


def _children(node: libyang.SNode) -> dict[str, libyang.SNode]:
    return {child.name(): child for child in node.children()}  # type: ignore[attr-defined]


def _fields_json(node: libyang.SNode, fields: Mapping[str, str]) -> dict[str, Any]:
    kids = _children(node)
    out: dict[str, Any] = {}
    for name, value in fields.items():
        leaf_name = name.removesuffix("@")
        leaf = kids.get(leaf_name)
        # An unknown field is passed through as it is: libyang refuses it by name.
        out[leaf_name] = value if leaf is None else _leaf_json(leaf, value)
    return out


def _map_list(slist: libyang.SList) -> libyang.SList | None:
    inner = [k for k in slist.children() if isinstance(k, libyang.SList)]
    return inner[0] if len(inner) == 1 else None


def _list_entry(slist: libyang.SList, key: str, fields: Mapping[str, str]) -> dict[str, Any]:
    keys = list(slist.keys())
    entry = {k.name(): _scalar(k, part) for k, part in zip(keys, key.split("|"), strict=True)}
    inner = _map_list(slist)
    if inner is None:
        entry.update(_fields_json(slist, fields))
        return entry
    inner_key = next(iter(inner.keys()))
    value_leaf = next(k for k in inner.children() if k.name() != inner_key.name())
    entry[inner.name()] = [
        {inner_key.name(): _scalar(inner_key, f), value_leaf.name(): _scalar(value_leaf, v)}
        for f, v in fields.items()
    ]
    return entry


@cache
def modelled_elsewhere() -> frozenset[str]:
    """Tables with a model among all of sonic-buildimage's modules, stored here or not
    (``tables-with-yang.txt`` beside the models, generated from all of them)."""
    lines = (SONIC_YANG_DIR / "tables-with-yang.txt").read_text().splitlines()
    return frozenset(line.split()[0] for line in lines if line and not line.startswith("#"))


class UnmodelledTable(ValueError):
    """The table has no model: GCU refuses the patch before validating anything."""


def to_yang_json(config: ConfigDb) -> dict[str, Any]:
    """The RFC 7951 JSON data tree of ``config`` (module-qualified top-level names).

    A table whose SONiC model is not stored here is left out (it cannot be checked here, and
    a switch has its model); a table with no model anywhere raises ``UnmodelledTable``."""
    models = table_models()
    tree: dict[str, dict[str, Any]] = {}
    for (table, key), fields in sorted(config.items()):
        model = models.get(table)
        if model is None and table in modelled_elsewhere():
            continue
        if model is None:
            raise UnmodelledTable(table)
        top = tree.setdefault(f"{model.module}:{model.top}", {})
        body = top.setdefault(f"{model.module}:{table}", {})
        container = next((c for c in model.containers if c.name() == key), None)
        if container is not None:
            body[key] = _fields_json(container, fields)
            continue
        parts = key.count("|") + 1
        slist = next((s for s in model.lists if len(list(s.keys())) == parts), None)
        if slist is None:
            raise ValueError(f"{table}|{key}: no list of {table} has {parts} keys")
        body.setdefault(slist.name(), []).append(_list_entry(slist, key, fields))
    return tree


def yang_problem(config: ConfigDb) -> str | None:
    """None when libyang accepts ``config`` as a whole, else its error text."""
    try:
        data = json.dumps(to_yang_json(config))
    except UnmodelledTable as table:
        return f"table {table} has no YANG model"
    try:
        tree = context().parse_data_mem(data, "json", strict=True, validate_present=True)
    except libyang.LibyangError as error:
        return str(error)
    if tree is not None:
        tree.free()
    return None


def entries(config: ConfigDb, table: str) -> Iterator[tuple[str, Mapping[str, str]]]:
    return ((k, f) for (t, k), f in config.items() if t == table)
