"""Pure rendering for the CLI: API documents in, rows and text out; no I/O.

Row builders return plain tuples of strings (tested on their own); ``table`` turns rows into a
rich Table at the edge. A plan or diff is a list of per-switch plans
``{switch, ops: [{kind, table, key, fields, old_fields}, ...]}`` (``controller/sonic/model.py``
``Plan.as_dict``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import yaml
from rich.table import Table

from controller.errors import SluiceError
from controller.types import JsonObject

Row = tuple[str, ...]
Column = tuple[str, Callable[[JsonObject], str]]

UNSET = "(unset)"
NONE = "-"


def table(headers: Sequence[str], rows: Iterable[Row], title: str | None = None) -> Table:
    """A rich Table; cells are plain text (markup off, so ``[x]`` in a key stays literal)."""
    out = Table(*headers, title=title, show_lines=False, highlight=False)
    for row in rows:
        out.add_row(*(_literal(cell) for cell in row))
    return out


def _literal(cell: str) -> str:
    # rich parses "[...]" as markup; escape so keys and reasons print exactly as sent.
    return cell.replace("[", "\\[")


def dump(data: Any, fmt: str) -> str:
    """``json`` or ``yaml`` text of an API document, stable key order as the API sent it."""
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    # Not allow_unicode: PyYAML writes U+0085 raw and reads it back as a line break.
    return yaml.safe_dump(data, sort_keys=False).rstrip("\n")


# --- plans and diffs -------------------------------------------------------------------------


def field_changes(op: JsonObject) -> list[str]:
    """What an op does to each field: ``f=new`` on add, ``f: old -> new`` on change."""
    new: Mapping[str, str] = op.get("fields") or {}
    old: Mapping[str, str] = op.get("old_fields") or {}
    kind = op.get("kind")
    if kind == "add":
        return [f"{name}={value}" for name, value in new.items()]
    if kind == "delete":
        return [f"{name}={value}" for name, value in old.items()]
    names = list(old) + [name for name in new if name not in old]
    return [
        f"{name}: {old.get(name, UNSET)} -> {new.get(name, UNSET)}"
        for name in names
        if old.get(name) != new.get(name)
    ]


FIELDS_SHOWN = 6


def _listed(pairs: Sequence[str]) -> str:
    more = f" (+{len(pairs) - FIELDS_SHOWN} more)" if len(pairs) > FIELDS_SHOWN else ""
    return ", ".join(pairs[:FIELDS_SHOWN]) + more


def ownership_lines(op: JsonObject) -> list[str]:
    """On an entry the operator configured too: the operator's fields the op overwrites
    (with the value the adoption record saved), those it keeps, and those a merged map
    takes from an operator's map (docs/config-db.md, "Who owns what")."""
    owners: Sequence[JsonObject] = op.get("ownership") or []
    overwritten = [
        f"{o['field']}={o['saved']}" for o in owners if o.get("owner") == "operator_overwritten"
    ]
    kept = [
        f"{o['field']}={o['value']}"
        for o in owners
        if o.get("owner") == "operator_kept" and not o.get("source")
    ]
    sources = Counter(str(o["source"]) for o in owners if o.get("source"))
    lines = []
    if overwritten:
        lines.append(f"operator's, overwritten (saved): {_listed(overwritten)}")
    if kept:
        lines.append(f"operator's, kept: {_listed(kept)}")
    lines += [f"operator's, kept from {name}: {n} field(s)" for name, n in sorted(sources.items())]
    return lines


def plan_rows(plans: Sequence[JsonObject]) -> list[Row]:
    """One row per op, switches in the order given, ops in the order they will be written."""
    return [
        (
            str(plan.get("switch", "")),
            str(op.get("kind", "")),
            str(op.get("table", "")),
            str(op.get("key", "")),
            "\n".join([*field_changes(op), *ownership_lines(op)]),
        )
        for plan in plans
        for op in plan.get("ops", [])
    ]


def plan_summary(plans: Sequence[JsonObject], *, ports: bool = True) -> list[str]:
    """``leaf1: 3 to add, 1 to change, 0 to delete`` per switch, how many ports it takes
    admin down and up and (``ports``) a line for each (``port_flap_lines``); one line if
    nothing changes."""
    if not plan_has_changes(plans):
        return [f"No changes ({len(plans)} switches checked)."]
    lines = []
    for plan in plans:
        kinds = Counter(str(op.get("kind")) for op in plan.get("ops", []))
        flaps = port_flap_lines(plan)
        down = f"; takes {len(flaps)} port(s) down" if flaps else ""
        lines.append(
            f"{plan.get('switch', '?')}: {kinds['add']} to add, {kinds['change']} to change, "
            f"{kinds['delete']} to delete{down}"
        )
        if ports:
            lines += flaps
    return lines


FLAP_REASONS_SHOWN = 3


def port_flap_lines(plan: JsonObject) -> list[str]:
    """``leaf1 Ethernet0 goes admin down and up for 2 port-critical change(s): ...`` per port a
    plan's port-critical changes take down (SONiC's config updater; docs/rollouts.md), with
    the first few reasons; ``-o json`` lists them all."""
    by_port: dict[str, list[str]] = {}
    for flap in plan.get("port_flaps") or ():
        by_port.setdefault(str(flap.get("port")), []).append(str(flap.get("reason")))
    lines = []
    for port, reasons in by_port.items():
        shown = "; ".join(reasons[:FLAP_REASONS_SHOWN])
        more = len(reasons) - FLAP_REASONS_SHOWN
        tail = f" (and {more} more)" if more > 0 else ""
        lines.append(
            f"  {plan.get('switch', '?')} {port} goes admin down and up for {len(reasons)} "
            f"port-critical change(s): {shown}{tail}"
        )
    return lines


def cable_lines(cables: Sequence[JsonObject]) -> list[str]:
    """One line per switch: which length, from where, sized each port's headroom."""
    by_switch: dict[str, list[str]] = {}
    for cable in cables:
        by_switch.setdefault(str(cable.get("switch")), []).append(
            f"{cable.get('port')} {cable.get('reason')}"
        )
    return [f"{switch} headroom: {', '.join(ports)}" for switch, ports in by_switch.items()]


def plan_has_changes(plans: Sequence[JsonObject]) -> bool:
    return any(plan.get("ops") for plan in plans)


def table_count_rows(plans: Sequence[JsonObject]) -> list[Row]:
    """Per switch and table, how many entries are added, changed, deleted (tables in the
    order the plan first writes them); switches without changes are left out."""
    rows: list[Row] = []
    for plan in plans:
        counts: dict[str, Counter[str]] = {}
        for op in plan.get("ops", []):
            counts.setdefault(str(op.get("table", "")), Counter())[str(op.get("kind"))] += 1
        rows += [
            (str(plan.get("switch", "")), name, str(c["add"]), str(c["change"]), str(c["delete"]))
            for name, c in counts.items()
        ]
    return rows


PLAN_HEADERS = ("SWITCH", "OP", "TABLE", "KEY", "CHANGES")
COUNT_HEADERS = ("SWITCH", "TABLE", "ADD", "CHANGE", "DELETE")
KEY_VALUE_HEADERS = ("FIELD", "VALUE")


# --- resources -------------------------------------------------------------------------------


def text(value: Any) -> str:
    """A cell: ``-`` for missing, ``a,b`` for lists, the value otherwise."""
    if value is None or value == "" or value == []:
        return NONE
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def field(name: str) -> Callable[[JsonObject], str]:
    return lambda doc: text(doc.get(name))


def switch_login(switch: JsonObject) -> str:
    """Whom a switch logs in as: ``group:<name>`` for a group's login, else its own secret
    reference (with its user name when it names one)."""
    if switch.get("credential"):
        return f"group:{switch['credential']}"
    user = switch.get("username")
    ref = text(switch.get("credential_ref"))
    return f"{user} {ref}" if user else ref


def port_speeds(switch: JsonObject) -> str:
    """Ports grouped by speed, fastest last: ``2x100G, 2x400G``."""
    speeds = Counter(int(port["speed_gbps"]) for port in switch.get("ports", []))
    return ", ".join(f"{count}x{speed}G" for speed, count in sorted(speeds.items())) or NONE


def gnmi_target(switch: JsonObject) -> str:
    gnmi = switch.get("gnmi") or {}
    return f"{gnmi.get('address', '?')}:{gnmi.get('port', '?')}"


def scheduling(service_class: JsonObject) -> str:
    """``STRICT`` or ``DWRR 40`` (the weight as declared, before normalisation to 1..100)."""
    sched = service_class.get("scheduling") or {}
    weight = sched.get("weight")
    return f"{sched.get('type', '?')}" + (f" {weight}" if weight is not None else "")


def pias(service_class: JsonObject) -> str:
    """``websearch load 0.5, 2 demotions`` (``1 demotion``) or ``-``."""
    spec = service_class.get("pias")
    if not spec:
        return NONE
    stages = len(spec["demotions"])
    return f"{spec['workload']} load {spec['load']}, {stages} demotion{'' if stages == 1 else 's'}"


def row_of(doc: JsonObject, columns: Sequence[Column]) -> Row:
    return tuple(render(doc) for _, render in columns)


def key_value_rows(doc: JsonObject, prefix: str = "") -> list[Row]:
    """A nested document flattened to ``(dotted.key, value)`` rows, lists kept on one line."""
    rows: list[Row] = []
    for name, value in doc.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            rows.extend(key_value_rows(value, prefix=f"{path}."))
        else:
            rows.append((path, text(value) if not isinstance(value, Mapping) else NONE))
    return rows


def intent_summary_rows(intent: JsonObject, version: int | None) -> list[Row]:
    """What the current intent holds, counted, with the fabric parameters spelled out."""
    rows: list[Row] = [
        ("version", text(version)),
        ("switches", str(len(intent.get("switches", [])))),
        ("hosts", str(len(intent.get("hosts", [])))),
        ("service_classes", str(len(intent.get("service_classes", [])))),
    ]
    return rows + key_value_rows(intent.get("fabric") or {}, prefix="fabric.")


# --- errors ----------------------------------------------------------------------------------


def error_lines(error: SluiceError) -> list[str]:
    """A domain error as readable lines: the title, then each field and reason if any."""
    problems = getattr(error, "problems", None)
    if problems:
        return [f"error: {error.title}:"] + [f"  {p.path}: {p.reason}" for p in problems]
    if type(error) is SluiceError:  # the base class's title says nothing the detail does not
        return [f"error: {error.detail}"]
    return [f"error: {error.title}: {error.detail}"]
