"""Limits on the documents sluice reads (intent YAML files, JSON request bodies), checked
before a parser could fail in a way that names nothing: Python's ``int()`` refuses more than
4,300 digits with a ``ValueError`` and its parsers recurse once per nesting level (100,000
brackets end in ``RecursionError``).

Every refusal is a ``DocumentInvalid`` whose detail says what was wrong and where. JSON
bodies are parsed here as YAML files are in ``controller/intent/loader.py``: a key given
twice in one object is refused, not silently the last.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from controller.errors import DocumentInvalid

# An intent of a thousand switches is well under this; the API refuses larger bodies.
DOCUMENT_BYTES_MAX = 8 * 1024 * 1024
# The intent nests five levels (fabric.qjump.factors); 64 leaves room for any body.
NESTING_MAX = 64
# 2^64 has 20 digits; no field sluice reads needs more than this many.
INTEGER_DIGITS_MAX = 40


def decode_text(raw: bytes, what: str = "the document") -> str:
    """``raw`` as UTF-8, or ``DocumentInvalid`` naming the first bad byte's offset."""
    if len(raw) > DOCUMENT_BYTES_MAX:
        raise DocumentInvalid(f"{what} is {len(raw)} bytes; at most {DOCUMENT_BYTES_MAX}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentInvalid(
            f"{what} is not UTF-8 text (bad byte at offset {exc.start})"
        ) from None


def check_nesting(text: str, what: str = "the document") -> None:
    """Refuse ``[``/``{`` nested deeper than ``NESTING_MAX`` (outside quoted strings)."""
    depth = 0
    quote = ""
    escaped = False
    for offset, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char if char == '"' or _starts_yaml_quote(text, offset) else ""
        elif char in "[{":
            depth += 1
            if depth > NESTING_MAX:
                raise DocumentInvalid(
                    f"{what} nests deeper than {NESTING_MAX} levels (at offset {offset})"
                )
        elif char in "]}":
            depth = max(depth - 1, 0)


def _starts_yaml_quote(text: str, offset: int) -> bool:
    # A single quote opens a YAML string only at the start of a scalar (after space, ':',
    # ',', '[', '{', '-' or a line start); inside a word (``don't``) it is a letter.
    return offset == 0 or text[offset - 1] in " \t\n:,[{-"


def check_integer_digits(literal: str, what: str = "the document") -> None:
    digits = len(literal.lstrip("+-"))
    if digits > INTEGER_DIGITS_MAX:
        raise DocumentInvalid(
            f"{what} holds an integer of {digits} digits; at most {INTEGER_DIGITS_MAX}"
        )


def parse_json_document(raw: bytes, what: str = "the body") -> object:
    """JSON bytes to plain data within the limits above; ``DocumentInvalid`` otherwise (also
    for a duplicate key, NaN or Infinity, and a number too large for a double)."""
    text = decode_text(raw, what)
    check_nesting(text, what)

    def integer(literal: str) -> int:
        check_integer_digits(literal, what)
        return int(literal)

    def real(literal: str) -> float:
        value = float(literal)
        if value in (float("inf"), float("-inf")):
            raise DocumentInvalid(f"{what} holds a number too large: {literal[:40]}")
        return value

    def constant(name: str) -> object:
        raise DocumentInvalid(f"{what} holds {name}, which is not JSON")

    def unique(pairs: Iterable[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in pairs:
            if key in result:
                raise DocumentInvalid(f"{what} gives the key {key[:64]!r} twice in one object")
            result[key] = value
        return result

    try:
        return json.loads(
            text,
            parse_int=integer,
            parse_float=real,
            parse_constant=constant,
            object_pairs_hook=unique,
        )
    except json.JSONDecodeError as exc:
        raise DocumentInvalid(
            f"{what} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
