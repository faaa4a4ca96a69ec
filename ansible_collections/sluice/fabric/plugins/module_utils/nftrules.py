# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure rendering of ``sluice_dscp`` and ``sluice_pias`` into nftables tables (docs/hosts.md).

Each role owns one table whose name starts with ``sluice``; the whole table is rendered here
as nft script text and the module replaces it atomically. Rules only act on locally sent
packets (output hook), which is where a host marks its own traffic.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    CGROUP_RE,
    DSCP_CHAIN_PRIORITY,
    NAME_RE,
    PIAS_CHAIN_PRIORITY,
    PROTOCOLS,
    SchemaError,
    _fail,
    _int,
    _require_mapping,
)

TABLE_RE = re.compile(r"^sluice[a-z0-9_]{0,24}$")
FAMILIES = ("ip", "ip6")  # an inet table, one rule per IP version for the DSCP rewrite
MATCH_KEYS = {"protocol", "dports", "sports", "uid", "cgroup"}


def check_table(name: Any) -> str:
    if not isinstance(name, str) or not TABLE_RE.match(name):
        raise SchemaError(f"table: {name!r} must match {TABLE_RE.pattern} (sluice owns only those)")
    return name


def _ports(raw: Any, path: str) -> str:
    if not isinstance(raw, list) or not raw:
        raise _fail(path, "must be a non-empty list of ports or 'low-high' ranges")
    items: list[str] = []
    for index, item in enumerate(raw):
        if isinstance(item, str) and re.match(r"^\d{1,5}-\d{1,5}$", item):
            low, high = (int(part) for part in item.split("-"))
            if not 0 < low < high <= 65535:
                raise _fail(f"{path}[{index}]", f"bad range {item!r}")
            items.append(f"{low}-{high}")
        else:
            items.append(str(_int(item, f"{path}[{index}]", 1, 65535)))
    return "{ " + ", ".join(items) + " }"


def render_match(raw: Any, path: str) -> str:
    """The selector part of a rule; an empty mapping selects every locally sent packet."""
    spec = _require_mapping(raw, path, MATCH_KEYS, set())
    parts: list[str] = []
    protocol = spec.get("protocol")
    if protocol is not None:
        if protocol not in PROTOCOLS:
            raise _fail(f"{path}.protocol", f"{protocol!r} is not one of {list(PROTOCOLS)}")
        parts.append(f"meta l4proto {protocol}")
    for key, field in (("dports", "dport"), ("sports", "sport")):
        if key in spec:
            if protocol is None:
                raise _fail(f"{path}.{key}", "ports need a protocol")
            parts.append(f"th {field} {_ports(spec[key], f'{path}.{key}')}")
    if "uid" in spec:
        parts.append(f"meta skuid {_int(spec['uid'], f'{path}.uid', 0, 2**32 - 2)}")
    if "cgroup" in spec:
        cgroup = spec["cgroup"]
        if not isinstance(cgroup, str) or not CGROUP_RE.match(cgroup) or ".." in cgroup:
            raise _fail(f"{path}.cgroup", f"not a cgroup v2 path: {cgroup!r}")
        trimmed = cgroup.strip("/")
        # nft matches a socket's cgroup v2 ancestor at the depth of the given path.
        parts.append(f'socket cgroupv2 level {trimmed.count("/") + 1} "{trimmed}"')
    return " ".join(parts)


def _table(table: str, priority: int, rules: list[str], what: str) -> str:
    body = "\n".join(f"    {rule}" for rule in rules)
    return (
        f"table inet {table} {{\n"
        f'  comment "owned by sluice: {what}; replaced as a whole"\n'
        f"  chain output {{\n"
        f"    type filter hook output priority {priority}; policy accept;\n"
        f"{body}\n"
        f"  }}\n"
        f"}}\n"
    )


def _priority_text(value: Any, path: str) -> str:
    priority = _int(value, path, 0, 2**32 - 1)
    return f"{priority >> 16:x}:{priority & 0xFFFF:x}"


def render_dscp_table(table: str, classes: Any, path: str = "sluice_dscp") -> str:
    """``sluice_dscp`` to a table: per class, set DSCP (and skb->priority if given) on the
    packets its match selects, then accept so the first matching class wins."""
    if not isinstance(classes, list):
        raise _fail(path, "must be a list of classes")
    seen: set[str] = set()
    rules: list[str] = []
    for index, raw in enumerate(classes):
        where = f"{path}[{index}]"
        spec = _require_mapping(
            raw, where, {"name", "dscp", "priority", "match"}, {"name", "dscp", "match"}
        )
        name = spec["name"]
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _fail(f"{where}.name", f"not a class name: {name!r}")
        if name in seen:
            raise _fail(f"{where}.name", f"class {name!r} appears twice")
        seen.add(name)
        dscp = _int(spec["dscp"], f"{where}.dscp", 0, 63)
        selector = render_match(spec["match"], f"{where}.match")
        priority = ""
        if "priority" in spec:
            priority = f" meta priority set {_priority_text(spec['priority'], f'{where}.priority')}"
        for family in FAMILIES:
            action = f"{family} dscp set {dscp}{priority} accept"
            rules.append(f'{selector} {action} comment "class {name}"'.lstrip())
    return _table(table, DSCP_CHAIN_PRIORITY, rules, "DSCP and priority per class")


def _stage_ranges(thresholds: list[int]) -> list[str]:
    """Byte-count conditions per stage: [0, t1), [t1, t2), ..., [tk, inf)."""
    conditions = [f"< {thresholds[0]}"]
    conditions += [f"{low}-{high - 1}" for low, high in itertools.pairwise(thresholds)]
    conditions.append(f">= {thresholds[-1]}")
    return conditions


def _pias_rules(raw: Any, where: str) -> list[str]:
    spec = _require_mapping(
        raw, where, {"name", "thresholds_bytes", "dscp", "match"}, {"thresholds_bytes", "dscp"}
    )
    thresholds = spec["thresholds_bytes"]
    if not isinstance(thresholds, list) or not thresholds:
        raise _fail(f"{where}.thresholds_bytes", "must be a non-empty list")
    values = [_int(t, f"{where}.thresholds_bytes[{i}]", 1) for i, t in enumerate(thresholds)]
    if any(later <= earlier for earlier, later in itertools.pairwise(values)):
        raise _fail(f"{where}.thresholds_bytes", f"must increase strictly, got {values}")
    dscps = spec["dscp"]
    if not isinstance(dscps, list) or len(dscps) != len(values) + 1:
        raise _fail(f"{where}.dscp", f"needs {len(values) + 1} stages (one more than thresholds)")
    stages = [_int(d, f"{where}.dscp[{i}]", 0, 63) for i, d in enumerate(dscps)]
    name = spec.get("name", "pias")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(f"{where}.name", f"not a class name: {name!r}")
    selector = render_match(spec.get("match", {}), f"{where}.match")
    rules: list[str] = []
    # PIAS tags by the bytes this host has sent on the flow (PIAS, NSDI 2015):
    # for a flow it opened that is the original direction's count, for a flow it answers
    # the reply direction's.
    for direction in ("original", "reply"):
        for stage, condition in enumerate(_stage_ranges(values)):
            for family in FAMILIES:
                match = f"{selector} ct direction {direction} ct {direction} bytes {condition}"
                action = f'{family} dscp set {stages[stage]} comment "{name} stage {stage}"'
                rules.append(f"{match.lstrip()} {action}")
    return rules


def render_pias_table(table: str, pias: Any, path: str = "sluice_pias") -> str:
    """``sluice_pias`` (one mapping or a list of them) to a table of conntrack byte-count
    rules that rewrite DSCP as a flow crosses each demotion threshold."""
    items = pias if isinstance(pias, list) else [pias]
    rules: list[str] = []
    for index, raw in enumerate(items):
        rules += _pias_rules(raw, f"{path}[{index}]" if isinstance(pias, list) else path)
    return _table(table, PIAS_CHAIN_PRIORITY, rules, "PIAS demotion by bytes sent")
