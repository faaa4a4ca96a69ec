"""``vsonic up --inventory FILE``: which switches to start, read from a YAML list.

The file is anything with a ``switches:`` list in the shape of sluice's intent (an intent
file, or the inventory ``vsonic up`` writes): each switch has a ``name``, ``gnmi.port`` and
``ports`` with ``name`` and ``speed_gbps``. vsonic reads only those fields and never imports
the controller, so it stays a stand-in for a switch, not a part of sluice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vsonic.seed import PortSeed

LOOPBACK = {"127.0.0.1", "localhost"}
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
PORT_RE = re.compile(r"Ethernet[0-9]{1,4}")


class InventoryError(ValueError):
    """The inventory cannot be served; the message names the switch and the field."""


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    gnmi_port: int
    ports: tuple[PortSeed, ...]
    role: str = "leaf"

    def port_list(self) -> list[str]:
        """``NAME:GBPS`` per port, the form ``python -m vsonic.serve --port-list`` takes."""
        return [f"{p.name}:{p.speed_gbps}" for p in self.ports]


def parse_port_list(items: Sequence[str]) -> tuple[PortSeed, ...]:
    """``["Ethernet0:25", "Ethernet48:100"]`` -> port seeds."""
    ports = []
    for item in items:
        name, _, speed = item.partition(":")
        if not PORT_RE.fullmatch(name) or not speed.isdigit() or int(speed) < 1:
            raise InventoryError(f"port {item!r} is not NAME:GBPS (e.g. Ethernet0:25)")
        ports.append(PortSeed(name, int(speed)))
    return tuple(ports)


def _field(switch: dict[str, Any], where: str, *path: str) -> Any:
    value: Any = switch
    for part in path:
        if not isinstance(value, dict) or part not in value:
            raise InventoryError(f"{where}: '{'.'.join(path)}' is missing")
        value = value[part]
    return value


def _ports(raw: Any, where: str) -> tuple[PortSeed, ...]:
    if not isinstance(raw, list) or not raw:
        raise InventoryError(f"{where}: 'ports' must be a non-empty list")
    items = []
    for i, port in enumerate(raw):
        name = _field(port, f"{where}.ports[{i}]", "name")
        speed = _field(port, f"{where}.ports[{i}]", "speed_gbps")
        items.append(f"{name}:{speed}")
    seeds = parse_port_list(items)
    if len({p.name for p in seeds}) != len(seeds):
        raise InventoryError(f"{where}: port names must be unique")
    return seeds


def _spec(switch: Any, index: int) -> SwitchSpec:
    where = f"switches[{index}]"
    name = _field(switch, where, "name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InventoryError(f"{where}.name: {name!r} is not a switch name")
    port = _field(switch, where, "gnmi", "port")
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise InventoryError(f"{where}.gnmi.port: {port!r} is not a TCP port")
    address = switch["gnmi"].get("address", "127.0.0.1")
    if address not in LOOPBACK:
        raise InventoryError(f"{where}.gnmi.address: vsonic serves on 127.0.0.1, not {address}")
    role = switch.get("role", "leaf")
    if role not in ("leaf", "spine"):
        raise InventoryError(f"{where}.role: {role!r} is not leaf or spine")
    return SwitchSpec(name, port, _ports(switch.get("ports"), where), role)


def specs_from(document: Any) -> tuple[SwitchSpec, ...]:
    switches = document.get("switches") if isinstance(document, dict) else None
    if not isinstance(switches, list) or not switches:
        raise InventoryError("the file has no 'switches' list")
    specs = tuple(_spec(switch, i) for i, switch in enumerate(switches))
    for label, values in (
        ("names", [s.name for s in specs]),
        ("gNMI ports", [s.gnmi_port for s in specs]),
    ):
        if len(set(values)) != len(values):
            raise InventoryError(f"switch {label} must be unique")
    return specs


def load_inventory(path: Path) -> tuple[SwitchSpec, ...]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise InventoryError(f"cannot read {path}: {error}") from None
    return specs_from(document)


def inventory_document(
    specs: Sequence[SwitchSpec], host: str, credential_ref: str
) -> dict[str, Any]:
    """The inventory ``up`` writes for these switches (intent ``Switch`` shape)."""
    return {
        "switches": [
            {
                "name": spec.name,
                "role": spec.role,
                "gnmi": {"address": host, "port": spec.gnmi_port},
                "credential_ref": credential_ref,
                "ports": [{"name": p.name, "speed_gbps": p.speed_gbps} for p in spec.ports],
            }
            for spec in specs
        ]
    }
