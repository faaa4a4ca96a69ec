# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure part of the host exporter's deployment (docs/hosts.md, ``sluice_host_exporter``).

From ``sluice_host_exporter``, ``sluice_dscp`` and ``sluice_qjump`` this derives the daemon's
config (which ct mark names which class, which DSCPs and P each QJUMP level has) and renders
``table inet sluice_host_exporter``: per level, a set of senders that time out after one
fan-in window (input) and per-64-byte length band counters of the packets sent (output).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    HTB_LEVEL_MINOR_BASE,
    HTB_MAJOR,
    QJUMP_LEVELS,
    SchemaError,
    _fail,
    _int,
    _require_mapping,
)

EXPORTER_TABLE = "sluice_host_exporter"
# After the DSCP (-150) and PIAS (-140) chains, so a priority the DSCP rules set is seen.
EXPORTER_CHAIN_PRIORITY = 0
DEFAULT_PORT = 9140
DEFAULT_FAN_IN_WINDOW_MS = 10
DEFAULT_REAP_INTERVAL_S = 5.0
DEFAULT_STATE_DIR = "/var/lib/sluice"
DEFAULT_MTU = 1500
EXPORTER_KEYS = {
    "listen_address",
    "port",
    "fan_in_window_ms",
    "reap_interval_s",
    "state_dir",
    "mtu_bytes",
}
BAND_BYTES = 64  # the daemon's band width (sluice_host_exporter.py BAND_BYTES)
LAST_BAND = 24  # bands 0..23 cover 0..1535 B; band 24 everything longer (a GSO packet)
PRIORITY_BASE = (HTB_MAJOR << 16) + HTB_LEVEL_MINOR_BASE
STATE_DIR_RE = re.compile(r"^/[A-Za-z0-9_./-]{0,200}$")


def _levels_of_classes(dscp_classes: list[dict[str, Any]]) -> dict[int, list[int]]:
    """QJUMP level -> the DSCPs of the classes whose priority selects it."""
    levels: dict[int, list[int]] = {}
    for entry in dscp_classes:
        priority = entry.get("priority")
        if isinstance(priority, int) and priority - PRIORITY_BASE in QJUMP_LEVELS:
            levels.setdefault(priority - PRIORITY_BASE, []).append(int(entry["dscp"]))
    return levels


def exporter_config(
    exporter: Any,
    dscp_classes: Any,
    qjump: Any,
    host: str,
    path: str = "sluice_host_exporter",
) -> dict[str, Any]:
    """The daemon's JSON config; a bad variable raises SchemaError naming the field."""
    spec = _require_mapping(exporter, path, EXPORTER_KEYS, {"listen_address"})
    try:
        address = str(ipaddress.ip_address(spec["listen_address"]))
    except ValueError as exc:
        raise _fail(f"{path}.listen_address", f"not an IP address: {exc}") from exc
    state_dir = spec.get("state_dir", DEFAULT_STATE_DIR)
    if not isinstance(state_dir, str) or not STATE_DIR_RE.match(state_dir) or ".." in state_dir:
        raise _fail(f"{path}.state_dir", f"not an absolute path: {state_dir!r}")
    reap = spec.get("reap_interval_s", DEFAULT_REAP_INTERVAL_S)
    if not isinstance(reap, int | float) or isinstance(reap, bool) or not 0.1 <= reap <= 3600:
        raise _fail(f"{path}.reap_interval_s", f"must be 0.1..3600 seconds, got {reap!r}")
    classes = dscp_classes if isinstance(dscp_classes, list) else []
    by_level = _levels_of_classes(classes)
    packet_bytes = None
    if isinstance(qjump, dict):
        for level in qjump.get("levels", []):
            by_level.setdefault(int(level["level"]), [])
        if qjump.get("packet_bytes") is not None:
            packet_bytes = int(qjump["packet_bytes"])
    return {
        "host": host,
        "listen_address": address,
        "port": _int(spec.get("port", DEFAULT_PORT), f"{path}.port", 1, 65535),
        "fan_in_window_ms": _int(
            spec.get("fan_in_window_ms", DEFAULT_FAN_IN_WINDOW_MS),
            f"{path}.fan_in_window_ms",
            1,
            60000,
        ),
        "reap_interval_s": float(reap),
        "state_dir": state_dir,
        "mtu_bytes": _int(spec.get("mtu_bytes", DEFAULT_MTU), f"{path}.mtu_bytes", 68, 65535),
        "table": EXPORTER_TABLE,
        # the DSCP rules mark a class's connections with its index + 1 (render_dscp_table)
        "classes": [str(entry["name"]) for entry in classes],
        "levels": [
            {"level": level, "dscp": sorted(set(dscps)), "packet_bytes": packet_bytes}
            for level, dscps in sorted(by_level.items())
        ],
    }


def _band_map(level: int, kind: str) -> str:
    pairs = [
        f'{band * BAND_BYTES}-{band * BAND_BYTES + BAND_BYTES - 1} : "l{level}_{kind}_{band}"'
        for band in range(LAST_BAND)
    ]
    pairs.append(f'{LAST_BAND * BAND_BYTES}-65535 : "l{level}_{kind}_{LAST_BAND}"')
    return "{ " + ", ".join(pairs) + " }"


def render_exporter_table(config: dict[str, Any]) -> str:
    """``table inet sluice_host_exporter`` for the config ``exporter_config`` made."""
    window = config["fan_in_window_ms"]
    lines = [
        f"table inet {EXPORTER_TABLE} {{",
        '  comment "owned by sluice: host exporter sets and counters; replaced as a whole"',
    ]
    inbound: list[str] = []
    outbound = [
        # A conntrack expression, so conntrack tracks this namespace's flows (and reports
        # their end) even on a host whose DSCP rules use none. No counter: its values would
        # make the live table differ from the rendered one at every run.
        "ct state new",
    ]
    for entry in config["levels"]:
        level = entry["level"]
        for family, addr in (("v4", "ipv4_addr"), ("v6", "ipv6_addr")):
            lines.append(
                f"  set l{level}_senders_{family} {{ type {addr}; flags dynamic,timeout; "
                f"timeout {window}ms; size 65536; }}"
            )
        for kind in ("tcp", "other"):
            lines += [f"  counter l{level}_{kind}_{band} {{ }}" for band in range(LAST_BAND + 1)]
        if entry["dscp"]:
            dscps = "{ " + ", ".join(str(d) for d in entry["dscp"]) + " }"
            inbound.append(f"ip dscp {dscps} update @l{level}_senders_v4 {{ ip saddr }}")
            inbound.append(f"ip6 dscp {dscps} update @l{level}_senders_v6 {{ ip6 saddr }}")
        priority = f"{HTB_MAJOR:x}:{HTB_LEVEL_MINOR_BASE + level:x}"
        outbound.append(
            f"meta priority {priority} meta l4proto tcp counter name meta length map "
            f"{_band_map(level, 'tcp')}"
        )
        outbound.append(
            f"meta priority {priority} meta l4proto != tcp counter name meta length map "
            f"{_band_map(level, 'other')}"
        )
    for chain, hook, rules in (("input", "input", inbound), ("output", "output", outbound)):
        lines.append(f"  chain {chain} {{")
        lines.append(
            f"    type filter hook {hook} priority {EXPORTER_CHAIN_PRIORITY}; policy accept;"
        )
        lines += [f"    {rule}" for rule in rules]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = ["EXPORTER_TABLE", "SchemaError", "exporter_config", "render_exporter_table"]
