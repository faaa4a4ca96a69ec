"""A leaf-spine fabric whose switches are ready for RoCE, discovered, and alterations of one
switch's CONFIG_DB: the worked fabrics of the RoCE check's tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from controller.sonic.discovery import Discovery, SwitchRead, discover
from controller.sonic.model import SwitchConfig
from controller.sonic.roce import RoceCheck, check_roce
from controller.sonic.topology import topology
from vsonic.seed import Neighbour, lldp_entry, roce_ready_config

# Two leaves, two spines: each leaf's Ethernet48 to spine1 and Ethernet52 to spine2; each leaf
# has a host on Ethernet0.
CABLING: dict[str, list[tuple[str, str, str]]] = {
    "leaf1": [("Ethernet48", "spine1", "Ethernet0"), ("Ethernet52", "spine2", "Ethernet0")],
    "leaf2": [("Ethernet48", "spine1", "Ethernet4"), ("Ethernet52", "spine2", "Ethernet4")],
    "spine1": [("Ethernet0", "leaf1", "Ethernet48"), ("Ethernet4", "leaf2", "Ethernet48")],
    "spine2": [("Ethernet0", "leaf1", "Ethernet52"), ("Ethernet4", "leaf2", "Ethernet52")],
}
PORTS = {
    "leaf1": ["Ethernet0", "Ethernet48", "Ethernet52"],
    "leaf2": ["Ethernet0", "Ethernet48", "Ethernet52"],
    "spine1": ["Ethernet0", "Ethernet4"],
    "spine2": ["Ethernet0", "Ethernet4"],
}
Alter = Callable[[str, SwitchConfig], None]


def switch_config(name: str, ports: Sequence[str], buffer_model: str) -> SwitchConfig:
    config: SwitchConfig = {
        ("DEVICE_METADATA", "localhost"): {"hostname": name, "buffer_model": buffer_model}
    }
    for port in ports:
        config[("PORT", port)] = {"speed": "40000", "mtu": "9100", "admin_status": "up"}
    for table, entries in roce_ready_config(ports).items():
        for key, fields in entries.items():
            config[(table, key)] = dict(fields)
    return config


def discovered(
    alter: Alter | None = None,
    *,
    cabling: Mapping[str, list[tuple[str, str, str]]] = CABLING,
    buffer_model: str = "traditional",
) -> list[Discovery]:
    """The fabric, every switch ready for RoCE, after ``alter(switch, its CONFIG_DB)``."""
    found = []
    for name, links in cabling.items():
        ports = sorted({port for port, _, _ in links} | set(PORTS.get(name, ())))
        config = switch_config(name, ports, buffer_model)
        if alter is not None:
            alter(name, config)
        lldp = {
            port: lldp_entry(Neighbour(port, peer, peer_port), i)
            for i, (port, peer, peer_port) in enumerate(links)
        }
        found.append(discover(name, SwitchRead(config, {}, lldp, 3)))
    return found


def checked(discoveries: list[Discovery], errors: Mapping[str, str] | None = None) -> RoceCheck:
    return check_roce(discoveries, topology(discoveries), errors or {})


def on(switch: str, table: str, key: str, **fields: str) -> Alter:
    """An alteration: set ``fields`` of ``table|key`` on ``switch`` only."""

    def alter(name: str, config: SwitchConfig) -> None:
        if name == switch:
            config[(table, key)] = {**config.get((table, key), {}), **fields}

    return alter


def drop(switch: str, table: str, key: str) -> Alter:
    def alter(name: str, config: SwitchConfig) -> None:
        if name == switch:
            del config[(table, key)]

    return alter
