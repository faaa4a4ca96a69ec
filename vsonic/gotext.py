"""Go's text for the values sonic-gnmi puts into its error messages, so that vsonic's messages
read as the real server's: ``fmt``'s ``%v`` of decoded JSON (``map[k:v]``, ``[a b]``, float64
numbers), ``time.Duration``'s ``String``, and the protobuf text of a gNMI path. Pure.

Sources: Go's fmt (``%v`` prints map keys sorted), strconv ``FormatFloat(f, 'g', -1, 64)``
(``%v`` of a float64), time ``Duration.String``, and the prototext of
openconfig/gnmi ``proto/gnmi/gnmi.proto`` ``Path`` (fields in number order: origin 2, elem 3,
target 4). Go's prototext puts one or two spaces between fields at random to keep it from
being parsed; vsonic puts one, and a comparison of messages collapses white space.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v", v)`` of a value ``encoding/json`` decoded into ``interface{}``."""
    if isinstance(value, dict):
        items = sorted(value.items())
        return "map[" + " ".join(f"{go_value(k)}:{go_value(v)}" for k, v in items) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_float(float(value))
    return str(value)


def go_float(number: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``: the shortest digits, in exponent form when the
    exponent is below -4 or at least 6 (JSON numbers decode to float64 in Go)."""
    if number == 0:
        return "0"
    if number != number or number in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(number)]
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point
    exp = point - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return minus + text + "0" * (point - len(text))
    return f"{minus}{text[:point]}.{text[point:]}"


def go_duration(ns: int) -> str:
    """``time.Duration(ns).String()``: ``500ms``, ``1.5s``, ``1m30s``."""
    if ns == 0:
        return "0s"
    minus = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return minus + _fraction(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _fraction(rest, 1_000_000_000) + "s"
    if hours:
        return f"{minus}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{minus}{minutes}m{seconds}"
    return minus + seconds


def _fraction(value: int, unit: int) -> str:
    whole, part = divmod(value, unit)
    if not part:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(part).rjust(digits, '0').rstrip('0')}"


def go_path(path: Any) -> str:
    """The protobuf text of a gNMI ``Path`` message (``%v`` of ``*gnmipb.Path``)."""
    parts = []
    if path.origin:
        parts.append(f"origin:{_quoted(path.origin)}")
    for elem in path.elem:
        keys = "".join(
            f" key:{{key:{_quoted(k)} value:{_quoted(v)}}}" for k, v in sorted(elem.key.items())
        )
        parts.append(f"elem:{{name:{_quoted(elem.name)}{keys}}}")
    if path.target:
        parts.append(f"target:{_quoted(path.target)}")
    return " ".join(parts)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
