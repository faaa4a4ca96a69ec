"""Declarative CONFIG_DB table schemas: key shape, fields, value ranges, references.

Each table module in ``controller/sonic/tables/`` declares one ``TableSchema``. The schema is
the single source for three things: validating what the compiler produced (a compiler bug
fails here, loudly, instead of reaching a switch), the write order of a plan (derived from the
``ref`` declarations in ``controller/sonic/order.py``) and which fields the diff compares in
tables sluice shares with operators. Ranges follow the SONiC YANG models summarised in
sonic-buildimage ``src/sonic-yang-models/yang-models``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal

from controller.errors import CompiledConfigInvalid

ValueKind = Literal["uint", "int", "bool", "enum", "ref", "decimal", "uint_list", "hex", "string"]

# SAI thresholds are parsed with stoi by qosorch (sonic-swss orchagent/qosorch.cpp
# WredMapHandler): they must fit a signed 32-bit int.
INT32_MAX = 2**31 - 1

_UINT = re.compile(r"0|[1-9][0-9]*")
_INT = re.compile(r"0|-?[1-9][0-9]*")
_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")
_UINT_LIST = re.compile(r"((0|[1-9][0-9]*)(,(0|[1-9][0-9]*))*)?")
_HEX = re.compile(r"[0-9a-f]{1,64}")
# Object names that other tables reference (sonic-wred-profile.yang: names are 1..32 chars).
_NAME = re.compile(r"[a-zA-Z0-9][-a-zA-Z0-9_.]{0,63}")

_VALID_CACHE_SIZE = 4096

Rule = Callable[[Mapping[str, str]], str | None]
"""A cross-field rule: returns the reason the fields break it, or None."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: its value kind, inclusive range for numbers, choices for enums, and for a
    ``ref`` the table whose entry it names (plain name, SONiC 202111+, sonic-swss
    orchagent/orch.cpp parseReference).

    A YANG decimal64 (``decimal``) may carry its inclusive range as text and its
    fraction-digits; a YANG string (``string``) its pattern, matched whole as YANG does."""

    name: str
    kind: ValueKind
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    ref: str | None = None
    required: bool = False
    decimal_range: tuple[str, str] | None = None
    fraction_digits: int | None = None
    pattern: str | None = None

    def problem(self, value: str) -> str | None:
        """Why ``value`` is not valid for this field, or None."""
        checker = _CHECKERS[self.kind]
        return checker(self, value)


def _check_number(spec: FieldSpec, value: str, pattern: re.Pattern[str]) -> str | None:
    if not pattern.fullmatch(value):
        return f"{value!r} is not a {spec.kind}"
    number = int(value)
    if spec.low is not None and number < spec.low:
        return f"{number} is below {spec.low}"
    if spec.high is not None and number > spec.high:
        return f"{number} is above {spec.high}"
    return None


def _check_decimal(spec: FieldSpec, value: str) -> str | None:
    if not _DECIMAL.fullmatch(value):
        return f"{value!r} is not a non-negative decimal"
    digits = len(value.partition(".")[2])
    if spec.fraction_digits is not None and digits > spec.fraction_digits:
        return f"{value!r} has more than {spec.fraction_digits} fraction digits"
    if spec.decimal_range is not None:
        low, high = spec.decimal_range
        try:
            inside = Decimal(low) <= Decimal(value) <= Decimal(high)
        except InvalidOperation:
            inside = False
        if not inside:
            return f"{value} is outside {low}..{high}"
    return None


def _check_string(spec: FieldSpec, value: str) -> str | None:
    if spec.pattern is None or re.fullmatch(spec.pattern, value):
        return None
    return f"{value!r} does not match {spec.pattern}"


def _check_enum(spec: FieldSpec, value: str) -> str | None:
    return None if value in spec.choices else f"{value!r} is not one of {list(spec.choices)}"


def _check_pattern(pattern: re.Pattern[str], what: str) -> Callable[[FieldSpec, str], str | None]:
    def check(spec: FieldSpec, value: str) -> str | None:
        return None if pattern.fullmatch(value) else f"{value!r} is not {what}"

    return check


_CHECKERS: dict[ValueKind, Callable[[FieldSpec, str], str | None]] = {
    "uint": lambda spec, value: _check_number(spec, value, _UINT),
    "int": lambda spec, value: _check_number(spec, value, _INT),
    "bool": lambda spec, value: _check_enum(
        FieldSpec(spec.name, "enum", choices=("true", "false")), value
    ),
    "enum": _check_enum,
    "ref": _check_pattern(_NAME, "an object name"),
    "decimal": _check_decimal,
    "uint_list": _check_pattern(_UINT_LIST, "a comma list of integers"),
    "hex": _check_pattern(_HEX, "lower-case hex"),
    "string": _check_string,
}


@dataclass(frozen=True, slots=True)
class IndexedFields:
    """Tables whose field names are integers (DSCP_TO_TC_MAP: "0".."63" -> TC)."""

    low: int
    high: int
    value: FieldSpec


@dataclass(frozen=True)
class TableSchema:
    """What one CONFIG_DB table accepts and how sluice uses it.

    ``shared``: operators keep their own entries and fields in this table; sluice compares and
    removes only the fields it writes. ``after``: tables whose entries must be written first
    although no field names them (ordering only). ``agent_fields``: on entries whose key
    starts with ``agent_key_prefix`` the on-switch agent rewrites these fields at run time,
    so the diff writes them when the entry is created and ignores them afterwards.
    """

    table: str
    key_pattern: str
    fields: tuple[FieldSpec, ...] = ()
    indexed: IndexedFields | None = None
    rules: tuple[Rule, ...] = ()
    shared: bool = False
    after: tuple[str, ...] = ()
    agent_key_prefix: str | None = None
    agent_fields: frozenset[str] = frozenset()
    _key_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _by_name: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)
    _valid: dict[tuple[tuple[str, str], ...], None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key_re", re.compile(self.key_pattern))
        object.__setattr__(self, "_by_name", {spec.name: spec for spec in self.fields})
        # Field sets already found valid: a fleet repeats the same few thousand times.
        object.__setattr__(self, "_valid", {})

    @property
    def field_names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def references(self) -> Iterator[FieldSpec]:
        """The fields that name an entry of another table."""
        return (spec for spec in self.fields if spec.ref is not None)

    def depends_on(self) -> frozenset[str]:
        """Tables that must hold their entries before this table's entries are written."""
        return frozenset(spec.ref for spec in self.references() if spec.ref) | set(self.after)

    def agent_owned(self, key: str) -> frozenset[str]:
        """Fields of this entry that the agent moves at run time (see the class docstring)."""
        if self.agent_key_prefix is not None and key.startswith(self.agent_key_prefix):
            return self.agent_fields
        return frozenset()

    def key_problem(self, key: str) -> str | None:
        if self._key_re.fullmatch(key):
            return None
        return f"key {key!r} does not match {self.key_pattern}"

    def field_problems(self, fields: Mapping[str, str]) -> list[str]:
        """Every reason ``fields`` break this schema (empty when they are valid)."""
        problems = [self._one_field_problem(name, value) for name, value in fields.items()]
        found = [p for p in problems if p is not None]
        found += [
            f"missing required field {s.name!r}"
            for s in self.fields
            if s.required and s.name not in fields
        ]
        if not found:
            found += [reason for rule in self.rules if (reason := rule(fields)) is not None]
        return found

    def _one_field_problem(self, name: str, value: str) -> str | None:
        spec = self._by_name.get(name) or self._indexed_spec(name)
        if spec is None:
            return f"unknown field {name!r}"
        if not isinstance(value, str):
            return f"field {name!r} is not a string"
        reason = spec.problem(value)
        return None if reason is None else f"field {name!r}: {reason}"

    def _indexed_spec(self, name: str) -> FieldSpec | None:
        indexed = self.indexed
        if indexed is None or not _UINT.fullmatch(name):
            return None
        return indexed.value if indexed.low <= int(name) <= indexed.high else None

    def check_key(self, key: str) -> None:
        reason = self.key_problem(key)
        if reason is not None:
            raise CompiledConfigInvalid(f"{self.table}|{key}: {reason}")

    def check_fields(self, key: str, fields: Mapping[str, str]) -> None:
        """Raise ``CompiledConfigInvalid`` unless ``fields`` are valid (remembered by value)."""
        seen = tuple(fields.items())
        try:
            if seen in self._valid:
                return
        except TypeError:  # an unhashable value: not a string, field_problems says so
            pass
        problems = self.field_problems(fields)
        if problems:
            raise CompiledConfigInvalid(f"{self.table}|{key}: " + "; ".join(problems))
        if len(self._valid) >= _VALID_CACHE_SIZE:
            self._valid.clear()
        self._valid[seen] = None

    def check(self, key: str, fields: Mapping[str, str]) -> None:
        """Raise ``CompiledConfigInvalid`` unless the entry is valid on its own."""
        self.check_key(key)
        self.check_fields(key, fields)


def min_le_max(low: str, high: str) -> Rule:
    """YANG's rule for threshold pairs: the max is not below the min."""

    def rule(fields: Mapping[str, str]) -> str | None:
        if low in fields and high in fields and int(fields[high]) < int(fields[low]):
            return f"{high} {fields[high]} is below {low} {fields[low]}"
        return None

    return rule


# A YANG model's ``must`` statements as rules, in the forms scripts/gen_sluice_yang.py reads
# from sonic-sluice-agent.yang (``controller/sonic/sluice_yang.py`` lists them); each reason
# is the model's own error-message, after the field it names (as a field's own problem is).
# A rule runs once every field is valid on its own.


def needs(
    fields: tuple[str, ...], unless: tuple[str, str], default: str | None, message: str
) -> Rule:
    """Unless the field ``unless[0]`` (``default`` when absent) is ``unless[1]``, every one of
    ``fields`` is present."""
    switch, value = unless

    def rule(entry: Mapping[str, str]) -> str | None:
        if entry.get(switch, default) == value:
            return None
        missing = [name for name in fields if name not in entry]
        if not missing:
            return None
        return f"field {missing[0]!r}: {message} (missing: {', '.join(missing)})"

    return rule


def only_when(leaf: str, when: tuple[str, str], default: str | None, message: str) -> Rule:
    """``leaf``, when present, needs the field ``when[0]`` (``default`` when absent) to be
    ``when[1]``."""
    switch, value = when

    def rule(entry: Mapping[str, str]) -> str | None:
        present = leaf in entry and entry.get(switch, default) != value
        return f"field {leaf!r}: {message}" if present else None

    return rule


def at_least(leaf: str, other: str, message: str) -> Rule:
    """``leaf``, when present, is at least ``other``, which is present (XPath compares an
    absent node as false). Both are whole numbers (the generator compares no other kind)."""
    return _compared(leaf, other, message, lambda a, b: a >= b)


def at_most(leaf: str, other: str, message: str) -> Rule:
    """``leaf``, when present, is at most ``other``, which is present."""
    return _compared(leaf, other, message, lambda a, b: a <= b)


def _compared(leaf: str, other: str, message: str, holds: Callable[[int, int], bool]) -> Rule:
    def rule(entry: Mapping[str, str]) -> str | None:
        if leaf not in entry:
            return None
        if other not in entry:
            return f"field {leaf!r}: {message} ({other} missing)"
        if holds(int(entry[leaf]), int(entry[other])):
            return None
        return f"field {leaf!r}: {message} ({entry[leaf]}; {other} {entry[other]})"

    return rule
