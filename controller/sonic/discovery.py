"""What a running switch is: its ports, neighbours and QoS tables, as SONiC keeps them. Pure.

The southbound reads a switch once per database it needs (``controller/southbound/gnmi.py``
``read_for_discovery``: SONiC's gNMI server answers one database per GetRequest, its
``ParseTarget`` refuses paths of two): the CONFIG_DB tables of ``CONFIG_TABLES``, STATE_DB
``PORT_TABLE`` and APPL_DB ``LLDP_ENTRY_TABLE``. ``discover`` turns that ``SwitchRead`` into
a ``Discovery``:

- ports from CONFIG_DB ``PORT`` (speed in Mb/s, lanes, alias, ``mtu``, ``admin_status``,
  whose default is down, sonic-port.yang), ``BREAKOUT_CFG`` (``brkout_mode``) and ``CABLE_LENGTH``
  (``<metres>m`` per port); the operational state from STATE_DB ``PORT_TABLE``;
- ``DEVICE_METADATA|localhost``: hostname, hwsku, platform, ``buffer_model`` (``dynamic``
  when it says so, else ``traditional``, as SONiC's buffer manager reads it:
  ``controller/sonic/buffermgrd.py``), ``type`` (ToRRouter, LeafRouter, ...);
- LLDP neighbours from APPL_DB ``LLDP_ENTRY_TABLE:<port>``, with the field names SONiC's lldp
  syncd writes (sonic-net/sonic-dbsyncd src/lldp_syncd/daemon.py ``parse_update``:
  ``lldp_rem_sys_name``, ``lldp_rem_port_id``, ``lldp_rem_port_desc``, ``lldp_rem_chassis_id``);
- the QoS tables as they stand (``QOS_TABLES``): what adoption will keep as the operator's.

``port_problems`` checks an intent switch's declared ports and speeds against what the switch
reports, one problem per port; the rollout runs it before anything is written, and the API
against the last discovery. ``controller/sonic/topology.py`` joins discoveries into links
and estimates the fabric's base RTT; ``inventory`` writes them as the intent's ``switches``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.errors import FieldProblem
from controller.intent.models import Dialect, Switch
from controller.sonic.buffermgrd import (
    BUFFER_MODEL,
    CABLE_LENGTH,
    DEVICE_METADATA,
    LOCALHOST,
    PLATFORM,
    buffer_model,
)
from controller.sonic.coexist import BASELINE_TABLES, lossless_ports
from controller.sonic.model import Fields, SwitchConfig

PORT = "PORT"
BREAKOUT_CFG = "BREAKOUT_CFG"
# The QoS tables discovery reports (and dry runs plan from before adoption): the operator's
# config an adoption keeps, and PFC's watchdog, the 802.1p map and the cable lengths that
# size lossless headroom besides.
QOS_TABLES: tuple[str, ...] = tuple(
    sorted(
        {
            *BASELINE_TABLES,
            "PFC_WD",
            "DOT1P_TO_TC_MAP",
            CABLE_LENGTH,
        }
    )
)
CONFIG_TABLES: tuple[str, ...] = tuple(sorted({*QOS_TABLES, PORT, DEVICE_METADATA, BREAKOUT_CFG}))
STATE_PORT_TABLE = "PORT_TABLE"  # STATE_DB
LLDP_TABLE = "LLDP_ENTRY_TABLE"  # APPL_DB
_CABLE = re.compile(r"([0-9]+(?:\.[0-9]+)?)m")
_SONIC_PORT = re.compile(r"Ethernet[0-9]{1,4}")


@dataclass(frozen=True, slots=True)
class SwitchRead:
    """What the southbound read of one switch for discovery: CONFIG_DB's tables, STATE_DB
    ``PORT_TABLE`` and APPL_DB ``LLDP_ENTRY_TABLE`` (each by key), and how many Gets it took."""

    config: SwitchConfig
    state_ports: Mapping[str, Fields]
    lldp: Mapping[str, Fields]
    gets: int


@dataclass(frozen=True, slots=True)
class DiscoveredPort:
    name: str
    speed_mbps: int | None
    lanes: tuple[int, ...] = ()
    alias: str | None = None
    admin_status: str = "down"
    oper_status: str | None = None
    breakout_mode: str | None = None
    cable_m: float | None = None
    mtu: int | None = None  # PORT mtu; None where CONFIG_DB has none (SONiC then runs 9100)

    @property
    def speed_gbps(self) -> float | None:
        return None if self.speed_mbps is None else self.speed_mbps / 1000

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "speed_mbps": self.speed_mbps,
            "speed_gbps": self.speed_gbps,
            "lanes": list(self.lanes),
            "alias": self.alias,
            "admin_status": self.admin_status,
            "oper_status": self.oper_status,
            "breakout_mode": self.breakout_mode,
            "cable_m": self.cable_m,
            "mtu": self.mtu,
        }


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One LLDP neighbour of a local port."""

    port: str
    system_name: str
    port_id: str
    port_description: str = ""
    chassis_id: str = ""

    def as_json(self) -> dict[str, str]:
        return {
            "port": self.port,
            "system_name": self.system_name,
            "port_id": self.port_id,
            "port_description": self.port_description,
            "chassis_id": self.chassis_id,
        }


@dataclass(frozen=True)
class Discovery:
    """One switch as it runs."""

    switch: str
    hostname: str | None
    hwsku: str | None
    platform: str | None
    buffer_model: str | None
    device_type: str | None
    ports: tuple[DiscoveredPort, ...]
    neighbours: tuple[Neighbour, ...]
    qos: SwitchConfig = field(repr=False)
    gets: int = 0
    # What it speaks, from its gNMI Capabilities: an OpenConfig switch's SONiC databases are
    # not read (it has none): no ports, neighbours or QoS tables are known of it.
    dialect: Dialect = Dialect.SONIC

    def port(self, name: str) -> DiscoveredPort | None:
        return next((p for p in self.ports if p.name == name), None)

    def qos_counts(self) -> dict[str, int]:
        """Entries per QoS table the switch holds."""
        counts: dict[str, int] = {}
        for table, _ in self.qos:
            counts[table] = counts.get(table, 0) + 1
        return dict(sorted(counts.items()))

    def config(self) -> SwitchConfig:
        """What discovery keeps of the switch's CONFIG_DB: its QoS tables and its buffer
        model and platform (``DEVICE_METADATA|localhost``), where it has them."""
        metadata = {
            name: value
            for name, value in ((BUFFER_MODEL, self.buffer_model), (PLATFORM, self.platform))
            if value is not None
        }
        if not metadata:
            return dict(self.qos)
        return {**self.qos, (DEVICE_METADATA, LOCALHOST): metadata}

    def lossless(self) -> dict[str, list[int]]:
        """Each port's lossless priorities (``pfc_enable``)."""
        return {port: sorted(found.priorities) for port, found in lossless_ports(self.qos).items()}

    def as_json(self) -> dict[str, Any]:
        return {
            "switch": self.switch,
            "hostname": self.hostname,
            "hwsku": self.hwsku,
            "platform": self.platform,
            "buffer_model": self.buffer_model,
            "device_type": self.device_type,
            "ports": [p.as_json() for p in self.ports],
            "neighbours": [n.as_json() for n in self.neighbours],
            "qos": {f"{t}|{k}": dict(v) for (t, k), v in self.qos.items()},
            "gets": self.gets,
            "dialect": self.dialect.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Discovery:
        qos: SwitchConfig = {}
        for joined, fields in dict(data.get("qos") or {}).items():
            table, _, key = str(joined).partition("|")
            qos[(table, key)] = {str(k): str(v) for k, v in dict(fields).items()}
        return cls(
            str(data["switch"]),
            data.get("hostname"),
            data.get("hwsku"),
            data.get("platform"),
            data.get("buffer_model"),
            data.get("device_type"),
            tuple(
                DiscoveredPort(
                    str(p["name"]),
                    p.get("speed_mbps"),
                    tuple(p.get("lanes") or ()),
                    p.get("alias"),
                    str(p.get("admin_status") or "down"),
                    p.get("oper_status"),
                    p.get("breakout_mode"),
                    p.get("cable_m"),
                    p.get("mtu"),
                )
                for p in data.get("ports") or ()
            ),
            tuple(Neighbour(**n) for n in data.get("neighbours") or ()),
            qos,
            int(data.get("gets") or 0),
            Dialect(str(data.get("dialect") or Dialect.SONIC.value)),
        )


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _lanes(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (text or "").split(",") if p.strip().isdigit())


def cable_lengths(config: SwitchConfig) -> dict[str, float]:
    """Each port's cable length in metres (``CABLE_LENGTH|<name>``: ``{port: "5m"}``)."""
    found: dict[str, float] = {}
    for (table, _), fields in sorted(config.items()):
        if table != CABLE_LENGTH:
            continue
        for port, text in fields.items():
            match = _CABLE.fullmatch(text.strip())
            if match:
                found[port] = float(match.group(1))
    return found


def ports_of(
    config: SwitchConfig, state_ports: Mapping[str, Fields] | None = None
) -> dict[str, DiscoveredPort]:
    """The switch's Ethernet ports by name, from CONFIG_DB (and STATE_DB where given)."""
    cables = cable_lengths(config)
    state = state_ports or {}
    found: dict[str, DiscoveredPort] = {}
    for (table, name), fields in sorted(config.items(), key=lambda item: _port_order(item[0])):
        if table != PORT or not _SONIC_PORT.fullmatch(name):
            continue
        oper = state.get(name, {})
        found[name] = DiscoveredPort(
            name,
            _int(fields.get("speed")),
            _lanes(fields.get("lanes")),
            fields.get("alias"),
            fields.get("admin_status", "down"),
            oper.get("oper_status") or oper.get("netdev_oper_status"),
            config.get((BREAKOUT_CFG, name), {}).get("brkout_mode"),
            cables.get(name),
            _int(fields.get("mtu")),
        )
    return found


def _port_order(entry: tuple[str, str]) -> tuple[str, int, str]:
    table, key = entry
    digits = key.removeprefix("Ethernet")
    return (table, int(digits) if digits.isdigit() else -1, key)


def _neighbours(lldp: Mapping[str, Fields]) -> tuple[Neighbour, ...]:
    """Front-panel ports only: lldp syncd also writes the management port (``eth0``)."""
    return tuple(
        Neighbour(
            port,
            fields.get("lldp_rem_sys_name", ""),
            fields.get("lldp_rem_port_id", ""),
            fields.get("lldp_rem_port_desc", ""),
            fields.get("lldp_rem_chassis_id", ""),
        )
        for port, fields in sorted(lldp.items(), key=lambda item: _port_order(("", item[0])))
        if _SONIC_PORT.fullmatch(port)
    )


def discover(switch: str, read: SwitchRead) -> Discovery:
    """The ``Discovery`` of one switch from what the southbound read of it."""
    metadata = read.config.get((DEVICE_METADATA, LOCALHOST), {})
    qos = {key: dict(fields) for key, fields in read.config.items() if key[0] in QOS_TABLES}
    return Discovery(
        switch,
        metadata.get("hostname"),
        metadata.get("hwsku"),
        metadata.get("platform"),
        buffer_model(metadata),
        metadata.get("type"),
        tuple(ports_of(read.config, read.state_ports).values()),
        _neighbours(read.lldp),
        qos,
        read.gets,
    )


def openconfig_discovery(switch: str) -> Discovery:
    """A switch whose Capabilities say it speaks OpenConfig: its dialect, nothing read."""
    return Discovery(switch, None, None, None, None, None, (), (), {}, 0, Dialect.OPENCONFIG)


def inventory_problems(switch: Switch, found: Discovery) -> list[FieldProblem]:
    """What an intent switch's inventory entry gets wrong about the switch as last
    discovered: its dialect (``dialect_problems``), then, on a SONiC switch, its ports."""
    problems = dialect_problems(switch, found)
    if found.dialect is Dialect.SONIC:
        problems += port_problems(switch, {p.name: p for p in found.ports})
    return problems


def dialect_problems(switch: Switch, found: Discovery) -> list[FieldProblem]:
    """A switch whose Capabilities say another dialect than its entry does; an entry that
    does not say one means ``sonic``, so an OpenConfig switch must be said to be one."""
    if found.dialect is switch.dialect:
        return []
    said = (
        f"declared {switch.dialect.value}"
        if "dialect" in switch.model_fields_set
        else f"not declared, so {switch.dialect.value}"
    )
    listed = "sonic-db" if found.dialect is Dialect.SONIC else "openconfig-qos and not sonic-db"
    return [
        FieldProblem(
            f"switches.{switch.name}.dialect",
            f"{said}; the switch's gNMI Capabilities list {listed}: it speaks "
            f"{found.dialect.value} (say dialect: {found.dialect.value})",
        )
    ]


def port_problems(switch: Switch, ports: Mapping[str, DiscoveredPort]) -> list[FieldProblem]:
    """One problem per declared port the switch lacks or runs at another speed, named
    ``switches.<switch>.ports.<port>``. Empty when every declared port matches."""
    problems: list[FieldProblem] = []
    for port in switch.ports:
        where = f"switches.{switch.name}.ports.{port.name}"
        found = ports.get(port.name)
        if found is None:
            problems.append(FieldProblem(where, "the switch has no such port (CONFIG_DB PORT)"))
        elif found.speed_mbps is None:
            problems.append(FieldProblem(where, "the switch reports no speed for it"))
        elif found.speed_mbps != port.speed_gbps * 1000:
            problems.append(
                FieldProblem(
                    f"{where}.speed_gbps",
                    f"declared {port.speed_gbps} Gb/s, the switch runs {found.speed_gbps:g} Gb/s "
                    f"(PORT|{port.name} speed {found.speed_mbps}): thresholds, K and the "
                    "buffer split follow the declared speed",
                )
            )
    return problems
