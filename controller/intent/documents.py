"""The one reader of the documents sluice takes in (intent and inventory YAML files, JSON
request bodies), and its limits, checked before anything is built from a document: Python's
``int()`` refuses more than 4,300 digits with a ``ValueError``, its parsers recurse once per
nesting level (100,000 brackets end in ``RecursionError``), and YAML aliases share one
node, so 409 bytes of nested aliases stand for 9^9 values that only expand when the data is
walked (validated, sent as JSON): a "billion laughs". Every path reads through here: ``sluice
check``, ``apply``, ``import-switches`` and ``simulate`` (``read_document_file``), the API's
bodies (``parse_json_document``), the collector's intent file.

Every refusal is a ``DocumentInvalid`` whose detail says what was wrong and where. JSON and
YAML alike refuse a key given twice in one mapping (never silently the last); YAML reads
only ``true``/``false`` as booleans (YAML 1.2), so ``ecn: off`` stays the string "off".
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from pathlib import Path

import yaml

from controller.errors import DocumentInvalid

# An intent of a thousand switches is well under this; the API refuses larger bodies.
DOCUMENT_BYTES_MAX = 8 * 1024 * 1024
# The intent nests five levels (fabric.qjump.factors); 64 leaves room for any body.
NESTING_MAX = 64
# 2^64 has 20 digits; no field sluice reads needs more than this many.
INTEGER_DIGITS_MAX = 40
# Values (mappings, lists, scalars) a YAML document may hold once its aliases are expanded:
# a thousand switches of 64 ports are about 300,000.
VALUES_MAX = 1_000_000
# Characters its scalars may hold once expanded: what the document itself may hold, twice.
EXPANDED_CHARS_MAX = 2 * DOCUMENT_BYTES_MAX


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


def read_document_file(path: Path, what: str | None = None) -> object:
    """The YAML (or JSON) file at ``path`` as plain data. At most ``DOCUMENT_BYTES_MAX`` + 1
    bytes are read, so a larger file is refused without being read whole; ``OSError`` is
    the caller's to report (it knows what the file was for)."""
    name = what or str(path)
    with path.open("rb") as handle:
        raw = handle.read(DOCUMENT_BYTES_MAX + 1)
    if len(raw) > DOCUMENT_BYTES_MAX:
        raise DocumentInvalid(f"{name} is larger than {DOCUMENT_BYTES_MAX} bytes")
    return parse_yaml_document(decode_text(raw, name), name)


def parse_yaml_document(text: str, what: str = "the YAML") -> object:
    """YAML text to plain data within every limit above: size, nesting (brackets, then the
    composed nodes), alias expansion, integer length; a syntax error names line and column."""
    if len(text) > DOCUMENT_BYTES_MAX:
        raise DocumentInvalid(f"{what} is {len(text)} characters; at most {DOCUMENT_BYTES_MAX}")
    check_nesting(text, what)
    loader = _YamlLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, what)
        return loader.construct_document(node)
    except RecursionError:  # block nesting by indentation, which the bracket scan cannot see
        raise DocumentInvalid(f"{what} nests deeper than {NESTING_MAX} levels") from None
    except yaml.MarkedYAMLError as exc:
        raise DocumentInvalid(_yaml_reason(exc)) from None
    except yaml.YAMLError as exc:
        raise DocumentInvalid(f"YAML error: {exc}") from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, what: str) -> None:
    """Refuse a node graph whose aliases expand it past ``VALUES_MAX`` values,
    ``EXPANDED_CHARS_MAX`` scalar characters or ``NESTING_MAX`` levels, or that holds
    itself. Each node is weighed once (aliases share nodes), so this takes time in the
    size of the text, not of the expansion."""
    weights: dict[int, tuple[int, int, int]] = {}  # id -> (values, chars, depth)
    open_nodes: set[int] = set()

    def weigh(node: yaml.Node) -> tuple[int, int, int]:
        key = id(node)
        if key in weights:
            return weights[key]
        if key in open_nodes:
            line = node.start_mark.line + 1 if node.start_mark else 0
            raise DocumentInvalid(f"{what} has an alias inside its own anchor (line {line})")
        if isinstance(node, yaml.ScalarNode):
            weights[key] = (1, len(node.value), 1)
            return weights[key]
        open_nodes.add(key)
        children: list[yaml.Node] = []
        for item in node.value:
            children.extend(item if isinstance(item, tuple) else (item,))
        values, chars, depth = 1, 0, 0
        for child in children:
            v, c, d = weigh(child)
            values, chars, depth = values + v, chars + c, max(depth, d)
            if values > VALUES_MAX:
                raise DocumentInvalid(
                    f"{what} expands (its aliases included) to more than {VALUES_MAX} values"
                )
            if chars > EXPANDED_CHARS_MAX:
                raise DocumentInvalid(
                    f"{what} expands (its aliases included) to more than "
                    f"{EXPANDED_CHARS_MAX} characters"
                )
        if depth + 1 > NESTING_MAX:
            raise DocumentInvalid(
                f"{what} nests deeper than {NESTING_MAX} levels (its aliases included)"
            )
        open_nodes.discard(key)
        weights[key] = (values, chars, depth + 1)
        return weights[key]

    weigh(root)


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader (no arbitrary objects) with two operator traps closed.

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


_YamlLoader.add_constructor("tag:yaml.org,2002:int", _YamlLoader.construct_yaml_int)


def _install_yaml12_booleans() -> None:
    resolvers = {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:bool"]
        for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _YamlLoader.yaml_implicit_resolvers = resolvers
    _YamlLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )


_install_yaml12_booleans()


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    what = " ".join(part for part in (exc.context, exc.problem) if part) or "invalid YAML"
    if mark is None:
        return f"YAML syntax error: {what}"
    # PyYAML marks count from 0; editors count from 1.
    return f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {what}"
