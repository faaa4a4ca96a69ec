"""Turn the tuner's changes into the next intent (pure), and say why in words.

What the intent can express today:

* ``weight/<class>`` -> ``service_classes[<class>].scheduling.weight``;
* ``algorithm/<class>`` -> ``service_classes[<class>].ecn``, only when every class on a
  dynamic algorithm ends up on the same one (the agent runs one dynamic algorithm for the
  fabric, docs/intent.md); otherwise the changes are returned as not expressible;
* ``qjump/hosts``, ``qjump/packet_bytes`` -> ``fabric.qjump.hosts`` / ``.packet_bytes``;
* ``ecn_lambda/<class>/<speed>`` -> ``service_classes[<class>].ecn_lambda``, the class's own
  lambda (the compiler gives the class its own K and orders it to the agent with the class's
  queues, ``SLUICE_AGENT_QUEUE`` ``lambda``). A class has one lambda over its port speeds: the
  largest any of its groups with evidence asks for (a group at its target or held by a guard
  asks for the current one), so it is lowered only when every marking speed wants lower, and
  raised as soon as one does. A group with no marking has no say. ``fabric.ecn_lambda`` stays
  what the operator set: the lambda of every class without its own.

* ``dcqcn/<class>`` -> ``service_classes[<class>].lossless`` ``kmin_bytes``, ``kmax_bytes``,
  ``pmax_pct`` (the class's DCQCN ramp, which the compiler writes as the lossless queue's
  ``WRED_PROFILE`` and checks below the XOFF point).

* ``pias/<class>`` -> ``service_classes[<class>].pias.thresholds_bytes`` (the thresholds the
  hosts run instead of the workload's; the evidence names the nearest shipped workload).

The result is parsed again, so a tuned intent that fails validation is refused like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import EcnMode, Intent
from controller.tuning.evidence import Change


@dataclass(frozen=True, slots=True)
class Applied:
    intent: Intent
    applied: tuple[Change, ...]
    not_expressible: tuple[Change, ...]


def apply_changes(intent: Intent, changes: Sequence[Change]) -> Applied:
    data: dict[str, Any] = dump_intent(intent)
    classes = {c["name"]: c for c in data["service_classes"]}
    applied: list[Change] = []
    skipped: list[Change] = []
    for change in changes:
        if not change.applies:
            continue
        kind, _, rest = change.parameter.partition("/")
        if kind == "weight" and rest in classes:
            classes[rest]["scheduling"]["weight"] = change.proposed
        elif kind == "algorithm" and rest in classes:
            continue  # decided together below
        elif kind == "qjump" and data["fabric"].get("qjump") is not None:
            data["fabric"]["qjump"][rest] = change.proposed
        elif (
            kind == "pias"
            and isinstance(change.proposed, tuple)
            and classes.get(rest, {}).get("pias") is not None
        ):
            classes[rest]["pias"]["thresholds_bytes"] = list(change.proposed)
        elif kind == "ecn_lambda":
            continue
        elif (
            kind == "dcqcn"
            and isinstance(change.proposed, tuple)
            and classes.get(rest, {}).get("lossless") is not None
        ):
            kmin, kmax, pmax = change.proposed
            classes[rest]["lossless"].update(kmin_bytes=kmin, kmax_bytes=kmax, pmax_pct=pmax)
        else:
            skipped.append(change)
            continue
        applied.append(change)
    algorithm_changes = [
        c for c in changes if c.applies and c.parameter.partition("/")[0] == "algorithm"
    ]
    if _one_dynamic_algorithm(classes, algorithm_changes):
        for change in algorithm_changes:
            classes[change.parameter.partition("/")[2]]["ecn"] = change.proposed
        applied.extend(algorithm_changes)
    else:
        skipped.extend(algorithm_changes)
    for service_class in intent.service_classes:
        current = class_lambda(intent, service_class.name)
        own = [c for c in changes if lambda_class(c.parameter) == service_class.name]
        wanted, moved = lambda_from(current, own)
        if moved:
            classes[service_class.name]["ecn_lambda"] = wanted
            applied.extend(moved)
    return Applied(parse_intent(data), tuple(applied), tuple(skipped))


def lambda_class(parameter: str) -> str | None:
    """The class of an ``ecn_lambda/<class>/<speed>`` parameter (None: another parameter)."""
    kind, _, rest = parameter.partition("/")
    return rest.partition("/")[0] if kind == "ecn_lambda" else None


def class_lambda(intent: Intent, name: str) -> float:
    """The lambda a class runs: its own, else the fabric's."""
    for service_class in intent.service_classes:
        if service_class.name == name and service_class.ecn_lambda is not None:
            return service_class.ecn_lambda
    return intent.fabric.ecn_lambda


def _one_dynamic_algorithm(classes: dict[str, dict[str, Any]], changes: Sequence[Change]) -> bool:
    modes = {name: str(c["ecn"]) for name, c in classes.items()}
    for change in changes:
        name = change.parameter.partition("/")[2]
        if name not in modes:
            return False
        modes[name] = str(change.proposed)
    return len({m for m in modes.values() if EcnMode(m).is_dynamic}) <= 1


def lambda_from(current: float, changes: Sequence[Change]) -> tuple[float, list[Change]]:
    """The lambda one class's ECN groups (one per port speed) ask for, and the changes that
    moved it (none: no move)."""
    asks: list[tuple[float, Change]] = []
    for change in changes:
        if not change.parameter.startswith("ecn_lambda/"):
            continue
        if change.evidence.inputs.get("opinion") is False:
            continue
        value = change.proposed if change.applies else change.current
        if isinstance(value, int | float):
            asks.append((float(value), change))
    if not asks:
        return current, []
    wanted = max(value for value, _ in asks)
    if wanted == current:
        return current, []
    return wanted, [change for value, change in asks if change.applies and value == wanted]


def reason_for(changes: Sequence[Change]) -> str:
    """The version's reason: each change with the metric values behind it."""
    parts = []
    for change in changes:
        inputs = change.evidence.inputs
        cited = ", ".join(
            f"{key}={value}"
            for key, value in inputs.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        )
        parts.append(
            f"{change.parameter}: {change.current} -> {change.proposed} "
            f"({change.evidence.rule}; {cited})"
        )
    return "tuner: " + "; ".join(parts)


def intent_diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Every leaf that differs, as ``{path, before, after}``; lists of named entries (switches,
    classes) are matched by name, so a changed weight reads
    ``service_classes[storage].scheduling.weight``."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[dict[str, Any]] = []
        for key in [*before, *(k for k in after if k not in before)]:
            found += intent_diff(before.get(key), after.get(key), f"{path}.{key}" if path else key)
        return found
    if _named_list(before) and _named_list(after):
        old = {item["name"]: item for item in before}
        new = {item["name"]: item for item in after}
        found = []
        for name in [*old, *(n for n in new if n not in old)]:
            found += intent_diff(old.get(name), new.get(name), f"{path}[{name}]")
        return found
    return [] if before == after else [{"path": path, "before": before, "after": after}]


def _named_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and "name" in i for i in value)
