"""Building blocks of the CONFIG_DB schema: field types and key rules, as SONiC's YANG has them.

Each field type checks one string value and returns the reason it is refused, or None. Key
rules check an entry's key against the would-be config (a QUEUE key must name an existing
PORT). Table specs in ``vsonic/schema.py`` are assembled from these.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from vsonic.db import Config

# SONiC parses WRED thresholds with std::stoi (qosorch.cpp WredMapHandler, sonic-swss), so a
# value must fit a signed 32-bit int even though YANG says uint64 and SAI uint32: the tightest
# of the three wins.
STOI_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1


class FieldType(ABC):
    """A leaf type: says why a value is refused, and which table a leafref points into."""

    @abstractmethod
    def problem(self, value: str) -> str | None: ...

    def referenced_table(self) -> str | None:
        return None


def _as_int(value: str) -> int | None:
    # YANG integers are plain decimal: no sign on unsigned values, no spaces, no "0x".
    if not re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        return None
    return int(value)


@dataclass(frozen=True)
class Integer(FieldType):
    lo: int
    hi: int

    def problem(self, value: str) -> str | None:
        number = _as_int(value)
        if number is None:
            return f"'{value}' is not an integer"
        if not self.lo <= number <= self.hi:
            return f"{number} is out of range {self.lo}..{self.hi}"
        return None


@dataclass(frozen=True)
class Decimal(FieldType):
    """A bounded decimal number; ``open_lo``/``open_hi`` exclude the bound. With
    ``fraction_digits`` it is a YANG decimal64: plain notation, at most that many digits
    after the point (libyang refuses "1e2" and "0.1234567" for fraction-digits 6)."""

    lo: float
    hi: float
    open_lo: bool = False
    open_hi: bool = False
    fraction_digits: int | None = None

    def problem(self, value: str) -> str | None:
        if self.fraction_digits is not None:
            if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", value):
                return f"'{value}' is not a decimal64 number"
            if len(value.partition(".")[2]) > self.fraction_digits:
                return f"'{value}' has more than {self.fraction_digits} fraction digits"
        if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", value):
            return f"'{value}' is not a decimal number"
        number = float(value)
        too_low = number <= self.lo if self.open_lo else number < self.lo
        too_high = number >= self.hi if self.open_hi else number > self.hi
        if not math.isfinite(number) or too_low or too_high:
            left = "(" if self.open_lo else "["
            right = ")" if self.open_hi else "]"
            return f"{value} is out of range {left}{self.lo:g}, {self.hi:g}{right}"
        return None


@dataclass(frozen=True)
class OneOf(FieldType):
    values: tuple[str, ...]

    def problem(self, value: str) -> str | None:
        if value not in self.values:
            return f"'{value}' is not one of {', '.join(self.values)}"
        return None


BOOLEAN = OneOf(("true", "false"))


@dataclass(frozen=True)
class Text(FieldType):
    pattern: str
    what: str

    def problem(self, value: str) -> str | None:
        if not re.fullmatch(self.pattern, value):
            return f"'{value}' is not {self.what}"
        return None


@dataclass(frozen=True)
class IntList(FieldType):
    """A comma list of distinct integers (``pfc_enable`` "3,4"); empty means none."""

    lo: int
    hi: int

    def problem(self, value: str) -> str | None:
        if value == "":
            return None
        items = value.split(",")
        for item in items:
            reason = Integer(self.lo, self.hi).problem(item)
            if reason:
                return f"list item {reason}"
        if len(set(items)) != len(items):
            return f"'{value}' repeats an item"
        return None


@dataclass(frozen=True)
class Ref(FieldType):
    """A leafref by plain object name (SONiC 202111 and later, sonic-swss orchagent/orch.cpp
    parseReference); '' means none."""

    table: str

    def referenced_table(self) -> str | None:
        return self.table

    def problem(self, value: str) -> str | None:
        if value.startswith("[") or value.endswith("]"):
            return (
                f"'{value}' must be a plain {self.table} name, not the pre-202111 "
                "[TABLE|key] form (must not be surrounded by [ ])"
            )
        return None


# A key rule returns the reason a key is refused, given the would-be config.
KeyRule = Callable[[str, Config], "str | None"]


@dataclass(frozen=True)
class Must:
    """One ``must`` statement of a YANG model, as an entry rule: the forms
    ``scripts/gen_sluice_yang.py`` reads from sonic-sluice-agent.yang (``vsonic/sluice_yang.py``
    lists them), each refusing with the model's own error-message.

    ``needs``: unless ``switch`` (``default`` when absent) is ``value``, every one of
    ``fields`` is present. ``only_when``: ``leaf``, when present, needs ``switch`` to be
    ``value``. ``at_least`` / ``at_most``: ``leaf``, when present, is a whole number at least
    (at most) ``other``'s, which must be present: XPath compares an absent node as false."""

    kind: Literal["needs", "only_when", "at_least", "at_most"]
    message: str
    leaf: str = ""
    switch: str = ""
    value: str = ""
    default: str | None = None
    fields: tuple[str, ...] = ()
    other: str = ""

    def __call__(self, entry: Mapping[str, str]) -> list[str]:
        if self.kind == "needs":
            if entry.get(self.switch, self.default) == self.value:
                return []
            missing = [name for name in self.fields if name not in entry]
            return [f"field '{missing[0]}': {self.message}"] if missing else []
        if self.leaf not in entry:
            return []
        if self.kind == "only_when":
            held = entry.get(self.switch, self.default) == self.value
            return [] if held else [f"field '{self.leaf}': {self.message}"]
        return self._compare(entry[self.leaf], entry.get(self.other))

    def _compare(self, mine: str, theirs: str | None) -> list[str]:
        if theirs is None:
            return [f"field '{self.leaf}': {self.message} ({self.other} missing)"]
        a, b = _as_int(mine), _as_int(theirs)
        if a is None or b is None:
            return []  # the field's own type refuses the value
        if a >= b if self.kind == "at_least" else a <= b:
            return []
        return [f"field '{self.leaf}': {self.message} ({a}; {self.other} {b})"]


def first_broken(
    musts: tuple[Must, ...], types: Mapping[str, FieldType]
) -> Callable[[Mapping[str, str]], list[str]]:
    """A model's musts as one entry rule, as libyang applies them: none while a field's own
    value is refused (that problem is the entry's), else the first one the entry breaks."""

    def rule(entry: Mapping[str, str]) -> list[str]:
        for name, value in entry.items():
            if name in types and types[name].problem(value) is not None:
                return []
        for must in musts:
            if broken := must(entry):
                return broken
        return []

    return rule


def name_key(pattern: str, what: str) -> KeyRule:
    def rule(key: str, config: Config) -> str | None:
        if not re.fullmatch(pattern, key):
            return f"key '{key}' is not {what}"
        return None

    return rule


def fixed_key(*allowed: str) -> KeyRule:
    def rule(key: str, config: Config) -> str | None:
        if key not in allowed:
            return f"key '{key}' must be {' or '.join(repr(a) for a in allowed)}"
        return None

    return rule


def _port_problem(port: str, config: Config, extra: tuple[str, ...]) -> str | None:
    if "," in port:
        return f"key names several ports '{port}'; YANG takes one port per key"
    if port in extra or ("PORT", port) in config:
        return None
    return f"key names port '{port}', which is not in the PORT table"


def port_key(*extra: str) -> KeyRule:
    """``<port>`` (or one of ``extra``, e.g. ``global``): an existing PORT, one per key."""

    def rule(key: str, config: Config) -> str | None:
        return _port_problem(key, config, extra)

    return rule


def port_queue_key(allow_range: bool, hi: int, *extra_ports: str) -> KeyRule:
    """``<port>|<q>`` or, with ``allow_range``, ``<port>|<q>-<q>``; q in 0..hi."""

    def rule(key: str, config: Config) -> str | None:
        port, sep, queues = key.partition("|")
        if not sep or "|" in queues:
            return f"key '{key}' is not <port>|<queue>"
        problem = _port_problem(port, config, extra_ports)
        if problem:
            return problem
        bounds = queues.split("-") if allow_range else [queues]
        numbers = [_as_int(b) for b in bounds]
        if len(bounds) > 2 or any(n is None or not 0 <= n <= hi for n in numbers):
            form = "X or X-Y" if allow_range else "one index"
            return f"key '{key}' queue part '{queues}' is not {form} with indexes 0..{hi}"
        first, last = numbers[0], numbers[-1]
        if first is not None and last is not None and first > last:
            return f"key '{key}' queue range '{queues}' runs backwards"
        return None

    return rule


def key_port(table: str, key: str) -> str | None:
    """The port a port-keyed entry belongs to, for the check that a PORT is not deleted."""
    if table in PORT_KEYED_TABLES:
        return key.partition("|")[0]
    return None


PORT_KEYED_TABLES = frozenset(
    {"QUEUE", "PORT_QOS_MAP", "BUFFER_QUEUE", "BUFFER_PG", "PFC_WD", "SLUICE_AGENT_QUEUE"}
)
