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
# What a TCP packet needs around its payload: Ethernet 14 B plus IPv4 20 B or IPv6 40 B plus
# TCP 20 B. The MSS option excludes all of it, so a QJUMP level of P-byte packets clamps the
# MSS to P minus these (the kernel subtracts TCP options such as timestamps from the MSS itself).
HEADER_BYTES = {"ip": 14 + 20 + 20, "ip6": 14 + 40 + 20}
NFPROTO = {"ip": "ipv4", "ip6": "ipv6"}
# Linux never sends segments below net.ipv4.tcp_min_snd_mss (default 48 B) whatever the peer
# advertises, so a P below the IPv6 headers plus 48 B cannot be held by clamping.
MIN_SND_MSS = 48
MIN_PACKET_BYTES = HEADER_BYTES["ip6"] + MIN_SND_MSS
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


def reply_match(raw: Any, path: str) -> dict[str, Any] | None:
    """The same flows seen from the other end: dports and sports swapped, so the server's
    replies (sent from the service port) are classified like the client's requests. None
    when the match names no ports (it already selects both directions)."""
    spec = _require_mapping(raw, path, MATCH_KEYS, set())
    if "dports" not in spec and "sports" not in spec:
        return None
    swapped = {k: v for k, v in spec.items() if k not in ("dports", "sports")}
    if "dports" in spec:
        swapped["sports"] = spec["dports"]
    if "sports" in spec:
        swapped["dports"] = spec["sports"]
    return swapped


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


def _table(
    table: str, priority: int, rules: list[str], what: str, input_rules: list[str] | None = None
) -> str:
    body = "\n".join(f"    {rule}" for rule in rules)
    text = (
        f"table inet {table} {{\n"
        f'  comment "owned by sluice: {what}; replaced as a whole"\n'
        f"  chain output {{\n"
        f"    type filter hook output priority {priority}; policy accept;\n"
        f"{body}\n"
        f"  }}\n"
    )
    if input_rules:
        inbound = "\n".join(f"    {rule}" for rule in input_rules)
        text += (
            f"  chain input {{\n"
            f"    type filter hook input priority {priority}; policy accept;\n"
            f"{inbound}\n"
            f"  }}\n"
        )
    return text + "}\n"


def _mss_clamps(
    spec: dict[str, Any], selectors: list[str], where: str
) -> tuple[list[str], list[str]]:
    """(output rules, input rules) clamping the MSS of a QJUMP level's TCP flows so no packet
    exceeds P (QJUMP NSDI 2015 §3.1: P is the largest packet a level issues). The peer
    sends at most the MSS we advertise (output SYN / SYN-ACK) and we send at most the MSS it
    advertises (input SYN / SYN-ACK), so both directions are clamped. Input rules match ports
    only: an incoming packet has no local socket owner (uid, cgroup) yet."""
    if "max_packet_bytes" not in spec:
        return [], []
    limit = _int(spec["max_packet_bytes"], f"{where}.max_packet_bytes", 1, 65535)
    match = spec["match"]
    if match.get("protocol", "tcp") != "tcp":
        return [], []  # no MSS to clamp; tbf's mtu still drops a packet larger than P
    if limit < MIN_PACKET_BYTES:
        raise _fail(
            f"{where}.max_packet_bytes",
            f"{limit} B is below {MIN_PACKET_BYTES} B, the smallest TCP packet Linux sends "
            f"(14 B Ethernet + 40 B IPv6 + 20 B TCP + net.ipv4.tcp_min_snd_mss {MIN_SND_MSS} B)",
        )
    # Inbound, only a port match can tell the class's flows apart (no socket owner yet): a
    # class matched by uid or cgroup alone gets no input clamp, which would otherwise clamp
    # every TCP flow of the host (docs/hosts.md: name the ports to bound what the host sends).
    ports_only = {k: v for k, v in match.items() if k in ("protocol", "dports", "sports")}
    inbound_specs: list[dict[str, Any]] = []
    if "dports" in ports_only or "sports" in ports_only:
        inbound_specs.append(ports_only)
        reply = reply_match(ports_only, f"{where}.match")
        if reply is not None:
            inbound_specs.append(reply)
    inbound = [render_match(m, f"{where}.match") for m in inbound_specs]
    output: list[str] = []
    input_rules: list[str] = []
    for family in FAMILIES:
        mss = limit - HEADER_BYTES[family]
        clamp = f"tcp flags & syn == syn tcp option maxseg size set {mss}"
        note = f'comment "class {spec["name"]} mss for {limit} B packets"'
        for selector in selectors:
            output.append(f"meta nfproto {NFPROTO[family]} {selector} {clamp} {note}")
        for selector in inbound:
            input_rules.append(f"meta nfproto {NFPROTO[family]} {selector} {clamp} {note}")
    return output, input_rules


def _priority_text(value: Any, path: str) -> str:
    priority = _int(value, path, 0, 2**32 - 1)
    return f"{priority >> 16:x}:{priority & 0xFFFF:x}"


def render_dscp_table(
    table: str, classes: Any, path: str = "sluice_dscp", *, conntrack_marks: bool = False
) -> str:
    """``sluice_dscp`` to a table: per class, set DSCP (and skb->priority if given) on the
    packets its match selects, then accept so the first matching class wins. With
    ``conntrack_marks`` the rule also puts the class's index + 1 in the ct mark's low byte,
    so the host exporter names the class of a finished connection (docs/hosts.md)."""
    if not isinstance(classes, list):
        raise _fail(path, "must be a list of classes")
    seen: set[str] = set()
    rules: list[str] = []
    input_rules: list[str] = []
    for index, raw in enumerate(classes):
        where = f"{path}[{index}]"
        spec = _require_mapping(
            raw,
            where,
            {"name", "dscp", "priority", "match", "max_packet_bytes"},
            {"name", "dscp", "match"},
        )
        name = spec["name"]
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _fail(f"{where}.name", f"not a class name: {name!r}")
        if name in seen:
            raise _fail(f"{where}.name", f"class {name!r} appears twice")
        seen.add(name)
        dscp = _int(spec["dscp"], f"{where}.dscp", 0, 63)
        selectors = [render_match(spec["match"], f"{where}.match")]
        reply = reply_match(spec["match"], f"{where}.match")
        if reply is not None:
            selectors.append(render_match(reply, f"{where}.match"))
        statements = ""
        if "priority" in spec:
            statements = (
                f" meta priority set {_priority_text(spec['priority'], f'{where}.priority')}"
            )
        if conntrack_marks:
            # low byte only: other users of the ct mark keep the upper bits
            statements += f" ct mark set ct mark and 0xffffff00 or {index + 1}"
        clamps, inbound = _mss_clamps(spec, selectors, where)
        rules += [rule.replace("  ", " ") for rule in clamps]
        input_rules += [rule.replace("  ", " ") for rule in inbound]
        for selector in selectors:
            for family in FAMILIES:
                action = f"{family} dscp set {dscp}{statements} accept"
                rules.append(f'{selector} {action} comment "class {name}"'.lstrip())
    return _table(table, DSCP_CHAIN_PRIORITY, rules, "DSCP and priority per class", input_rules)


def _stage_ranges(thresholds: list[int]) -> list[str]:
    """Byte-count conditions per stage: [0, t1), [t1, t2), ..., [tk, inf)."""
    conditions = [f"< {thresholds[0]}"]
    conditions += [f"{low}-{high - 1}" for low, high in itertools.pairwise(thresholds)]
    conditions.append(f">= {thresholds[-1]}")
    return conditions


def _pias_rules(raw: Any, where: str) -> list[str]:
    spec = _require_mapping(
        raw,
        where,
        {"name", "thresholds_bytes", "dscp", "match", "ack_dscp"},
        {"thresholds_bytes", "dscp"},
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
    match = spec.get("match", {})
    selector = render_match(match, f"{where}.match")
    reply = reply_match(match, f"{where}.match")
    # The answering end sends from the service port: its selector has the ports swapped.
    selectors = {
        "original": selector,
        "reply": selector if reply is None else render_match(reply, f"{where}.match"),
    }
    rules: list[str] = []
    # PIAS tags by the bytes this host has sent on the flow (PIAS, NSDI 2015):
    # for a flow it opened that is the original direction's count, for a flow it answers
    # the reply direction's.
    for direction in ("original", "reply"):
        selector = selectors[direction]
        for stage, condition in enumerate(_stage_ranges(values)):
            for family in FAMILIES:
                match = f"{selector} ct direction {direction} ct {direction} bytes {condition}"
                action = f'{family} dscp set {stages[stage]} comment "{name} stage {stage}"'
                rules.append(f"{match.lstrip()} {action}")
    if "ack_dscp" in spec:
        ack = _int(spec["ack_dscp"], f"{where}.ack_dscp", 0, 63)
        rules += _pure_ack_rules([selectors["original"], selectors["reply"]], ack, name)
    return rules


# A pure ACK carries no payload: its IP length is exactly the IP and TCP headers, 4 x doff
# bytes of TCP (20-60 with options). IPv4 with a 20 B header (ihl 5; options are not used by
# hosts), IPv6's payload length is the TCP header alone (no extension headers).
TCP_DOFF = range(5, 16)
ACK_ONLY = "tcp flags & (fin | syn | rst | ack) == ack"


def _pure_ack_rules(selectors: list[str], dscp: int, name: str) -> list[str]:
    """HDCQ Priority 1 (HDCQ 2021 §3.3.1): pure ACKs of the class's flows, in either
    direction, get ``dscp``; placed after the byte-count stages so they overwrite them."""
    rules: list[str] = []
    note = f'comment "{name} pure ack"'
    for selector in dict.fromkeys(selectors):
        for doff in TCP_DOFF:
            v4 = f"ip hdrlength 5 tcp doff {doff} ip length {20 + 4 * doff}"
            v6 = f"ip6 nexthdr tcp tcp doff {doff} ip6 length {4 * doff}"
            for family, shape in (("ip", v4), ("ip6", v6)):
                rule = f"{selector} {shape} {ACK_ONLY} {family} dscp set {dscp} {note}"
                rules.append(rule.lstrip())
    return rules


def render_pias_table(table: str, pias: Any, path: str = "sluice_pias") -> str:
    """``sluice_pias`` (one mapping or a list of them) to a table of conntrack byte-count
    rules that rewrite DSCP as a flow crosses each demotion threshold."""
    items = pias if isinstance(pias, list) else [pias]
    rules: list[str] = []
    for index, raw in enumerate(items):
        rules += _pias_rules(raw, f"{path}[{index}]" if isinstance(pias, list) else path)
    return _table(table, PIAS_CHAIN_PRIORITY, rules, "PIAS demotion by bytes sent")
