"""Intent in and out: YAML text or plain data to a validated ``Intent``, and back to JSON data.

Every refusal is an ``IntentInvalid`` holding one ``FieldProblem`` per reason, with a dotted
field path an operator can find in their file (``switches[0].ports[3].speed_gbps``,
``fabric.qjump.factors.7``). Field-level errors come from pydantic; when the shape is right the
cross-object rules of ``controller/intent/validate.py`` run and report everything at once.
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from controller.errors import DocumentInvalid, FieldProblem, IntentInvalid
from controller.intent.documents import parse_yaml_document, read_document_file
from controller.intent.models import Intent
from controller.intent.validate import AddressResolver, validate_intent

# Path used when the problem is the document itself (not a mapping, unreadable, bad YAML).
ROOT_PATH = "intent"

Loc = tuple[int | str, ...]


def parse_intent(data: object, resolve: AddressResolver | None = None) -> Intent:
    """Plain data (as from JSON or YAML) to a validated ``Intent``; raises ``IntentInvalid``.
    ``resolve`` says which addresses DNS names stand for (endpoint rule; none by default)."""
    return validate_intent(intent_shape(data), resolve)


def intent_shape(data: object) -> Intent:
    """Plain data to an ``Intent`` whose fields are right, before the cross-object rules
    (``validate_intent``) run; raises ``IntentInvalid``."""
    try:
        return Intent.model_validate(data)
    except ValidationError as exc:
        raise IntentInvalid(problems_from_validation_error(exc, data)) from None


def load_intent_yaml(text: str) -> Intent:
    """YAML text to a validated ``Intent``; syntax errors name the line and column."""
    return parse_intent(parse_yaml(text))


def load_intent_file(path: Path, resolve: AddressResolver | None = None) -> Intent:
    """Read and validate one intent file; an unreadable file is an ``IntentInvalid`` too."""
    return parse_intent(read_yaml_file(path), resolve)


def dump_intent(intent: Intent) -> dict[str, object]:
    """JSON-ready data for ``intent``; ``parse_intent(dump_intent(i)) == i``.

    Every field is written, defaults included, so a stored version means the same thing
    even if a later release changes a default.
    """
    return intent.model_dump(mode="json")


# ---------------------------------------------------------------------------------------------
# YAML


def parse_yaml(text: str) -> object:
    """YAML text to plain data; a syntax error becomes ``IntentInvalid`` naming line/column,
    and so does a document past the limits of ``controller/intent/documents.py``."""
    try:
        return parse_yaml_document(text, "the YAML")
    except DocumentInvalid as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, exc.detail)]) from None


def read_yaml_file(path: Path) -> object:
    """The YAML file at ``path`` as plain data, read the one way every path reads one
    (``controller/intent/documents.py``); refusals are ``IntentInvalid`` at ``intent``."""
    try:
        return read_document_file(path)
    except OSError as exc:
        reason = f"cannot read {path}: {_os_reason(exc)}"
        raise IntentInvalid([FieldProblem(ROOT_PATH, reason)]) from None
    except DocumentInvalid as exc:
        raise IntentInvalid([FieldProblem(ROOT_PATH, exc.detail)]) from None


def read_intent_document(path: Path) -> dict[str, object]:
    """``read_yaml_file``, refused unless it holds a mapping (what ``sluice apply`` and
    ``import-switches`` send to the API)."""
    document = read_yaml_file(path)
    if not isinstance(document, dict):
        raise IntentInvalid([FieldProblem(ROOT_PATH, "the file must hold a mapping")])
    return document


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
