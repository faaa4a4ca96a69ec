"""Intent in and out: YAML text or plain data to a validated ``Intent``, and back to JSON data.

Every refusal is an ``IntentInvalid`` holding one ``FieldProblem`` per reason, with a dotted
field path an operator can find in their file (``switches[0].ports[3].speed_gbps``,
``fabric.qjump.factors.7``). Field-level errors come from pydantic; when the shape is right the
cross-object rules of ``controller/intent/validate.py`` run and report everything at once.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from controller.errors import DocumentInvalid, FieldProblem, IntentInvalid
from controller.intent.documents import (
    NESTING_MAX,
    check_integer_digits,
    check_nesting,
    decode_text,
)
from controller.intent.models import Intent
from controller.intent.validate import validate_intent

# Path used when the problem is the document itself (not a mapping, unreadable, bad YAML).
ROOT_PATH = "intent"

Loc = tuple[int | str, ...]


def parse_intent(data: object) -> Intent:
    """Plain data (as from JSON or YAML) to a validated ``Intent``; raises ``IntentInvalid``."""
    try:
        intent = Intent.model_validate(data)
    except ValidationError as exc:
        raise IntentInvalid(problems_from_validation_error(exc, data)) from None
    return validate_intent(intent)


def load_intent_yaml(text: str) -> Intent:
    """YAML text to a validated ``Intent``; syntax errors name the line and column."""
    return parse_intent(parse_yaml(text))


def load_intent_file(path: Path) -> Intent:
    """Read and validate one intent file; an unreadable file is an ``IntentInvalid`` too."""
    try:
        text = decode_text(path.read_bytes(), str(path))
    except OSError as exc:
        reason = f"cannot read {path}: {_os_reason(exc)}"
        raise IntentInvalid([FieldProblem(ROOT_PATH, reason)]) from None
    except DocumentInvalid as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, exc.detail)]) from None
    return load_intent_yaml(text)


def dump_intent(intent: Intent) -> dict[str, object]:
    """JSON-ready data for ``intent``; ``parse_intent(dump_intent(i)) == i``.

    Every field is written, defaults included, so a stored version means the same thing
    even if a later release changes a default.
    """
    return intent.model_dump(mode="json")


# ---------------------------------------------------------------------------------------------
# YAML


class _IntentYamlLoader(yaml.SafeLoader):
    """SafeLoader with two operator traps closed.

    YAML 1.1 reads ``off``/``on``/``yes``/``no`` as booleans, so ``ecn: off`` would arrive as
    ``False``; only ``true``/``false`` are booleans here (as in YAML 1.2). A key given twice in
    one mapping is an error instead of the last one silently winning.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        seen: dict[object, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        # Checked before int() would refuse it with an unnamed ValueError (4,300 digits).
        check_integer_digits(str(node.value).replace("_", ""), "the YAML")
        return int(super().construct_yaml_int(node))


_IntentYamlLoader.add_constructor("tag:yaml.org,2002:int", _IntentYamlLoader.construct_yaml_int)


def _install_yaml12_booleans() -> None:
    resolvers = {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:bool"]
        for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _IntentYamlLoader.yaml_implicit_resolvers = resolvers
    _IntentYamlLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )


_install_yaml12_booleans()


def parse_yaml(text: str) -> object:
    """YAML text to plain data; a syntax error becomes ``IntentInvalid`` naming line/column,
    and so does a document past the limits of ``controller/intent/documents.py``."""
    try:
        check_nesting(text, "the YAML")
        # A SafeLoader subclass: no arbitrary objects.
        return yaml.load(text, Loader=_IntentYamlLoader)
    except DocumentInvalid as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, exc.detail)]) from None
    except RecursionError:  # block nesting by indentation, which the bracket scan cannot see
        reason = f"the YAML nests deeper than {NESTING_MAX} levels"
        raise IntentInvalid([FieldProblem(ROOT_PATH, reason)]) from None
    except yaml.MarkedYAMLError as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, _yaml_reason(exc))]) from None
    except yaml.YAMLError as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, f"YAML error: {exc}")]) from None


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    what = " ".join(part for part in (exc.context, exc.problem) if part) or "invalid YAML"
    if mark is None:
        return f"YAML syntax error: {what}"
    # PyYAML marks count from 0; editors count from 1.
    return f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {what}"


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


# ---------------------------------------------------------------------------------------------
# pydantic errors to field problems


def problems_from_validation_error(exc: ValidationError, data: object) -> list[FieldProblem]:
    """One ``FieldProblem`` per pydantic error, paths rendered against the input ``data``."""
    errors = _without_echoes(exc.errors(include_url=False, include_input=False))
    return [FieldProblem(render_path(err["loc"], data), _reason(err, data)) for err in errors]


def _without_echoes(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """Drop a tuple's "too short after validation" when its items already failed.

    pydantic counts only the items that validated, so one bad port also reports
    ``ports: at least 1 item``, which is not what the operator got wrong.
    """
    locs = [tuple(err["loc"]) for err in errors]

    def echoed(err: ErrorDetails) -> bool:
        loc = tuple(err["loc"])
        return err["type"] == "too_short" and any(
            len(other) > len(loc) and other[: len(loc)] == loc for other in locs
        )

    return [err for err in errors if not echoed(err)]


def render_path(loc: Loc, data: object) -> str:
    """``('switches', 0, 'ports', 3, 'speed_gbps')`` -> ``switches[0].ports[3].speed_gbps``.

    Integers index lists; mapping keys (QJUMP factors are keyed by level) are written after a
    dot, so the data is walked alongside the location to tell the two apart.
    """
    path = ""
    node: object = data
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int) and isinstance(node, list | tuple):
            path += f"[{part}]"
            node = node[part] if 0 <= part < len(node) else None
            continue
        path += f".{part}" if path else str(part)
        node = _child(node, part)
    return path or ROOT_PATH


def _child(node: object, part: int | str) -> object:
    if not isinstance(node, dict):
        return None
    if part in node:
        return node[part]
    # A YAML key 7 and a JSON key "7" name the same QJUMP level.
    for key, value in node.items():
        if str(key) == str(part):
            return value
    return None


def _reason(err: ErrorDetails, data: object) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    loc = tuple(err["loc"])
    if kind == "extra_forbidden":
        return _unknown_key_reason(loc)
    if kind == "missing":
        return "required field is missing"
    if kind == "model_type" and not loc:
        return "the intent must be a mapping (api_version, fabric, switches, hosts, ...)"
    if kind in ("too_short", "too_long"):
        bound = "at least" if kind == "too_short" else "at most"
        limit = ctx.get("min_length" if kind == "too_short" else "max_length")
        return f"must have {bound} {limit} item{'' if limit == 1 else 's'}"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    reason = _plain_message(err["msg"])
    return f"key {reason}" if loc and loc[-1] == "[key]" else reason


def _plain_message(msg: str) -> str:
    plain_forms = (
        ("Input should be", "must be"),
        ("String should", "must"),
        ("Keys should be", "keys must be"),
    )
    for prefix, plain in plain_forms:
        if msg.startswith(prefix):
            return plain + msg[len(prefix) :]
    return msg


def _unknown_key_reason(loc: Loc) -> str:
    allowed = allowed_keys(loc[:-1])
    if not allowed:
        return "unknown key"
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key (allowed: {', '.join(allowed)}){hint}"


def allowed_keys(loc: Loc) -> list[str]:
    """The field names of the model found at ``loc`` below ``Intent`` (empty if none)."""
    target: object = Intent
    for part in loc:
        target = _unwrap_optional(target)
        if isinstance(part, int):
            target = _item_type(target)
        elif isinstance(target, type) and issubclass(target, BaseModel):
            field = target.model_fields.get(part)
            target = field.annotation if field is not None else None
        else:
            return []
    target = _unwrap_optional(target)
    if isinstance(target, type) and issubclass(target, BaseModel):
        return list(target.model_fields)
    return []


def _unwrap_optional(target: object) -> object:
    if typing.get_origin(target) in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(target) if arg is not type(None)]
        return options[0] if len(options) == 1 else None
    return target


def _item_type(target: object) -> object:
    if typing.get_origin(target) in (tuple, list):
        args = typing.get_args(target)
        return args[0] if args else None
    return None
