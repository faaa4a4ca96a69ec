"""The cable length each port's lossless headroom is sized for, and where it came from. Pure.

A port's headroom grows with its cable (docs/lossless.md, "Headroom"): what was on the cable
when XOFF left, and what the peer sends while XOFF travels back. The intent may declare a
port's length (``switches[].ports[].cable_length_m``); a running switch may know it too, in
CONFIG_DB ``CABLE_LENGTH|<name>`` (``{<port>: "<metres>m"}``, the table SONiC's buffer
managers size their own lossless profiles from), which discovery reads
(``controller/sonic/discovery.py``). A fabric link is one cable, so the switch on its other
end (its LLDP neighbour, joined as ``controller/sonic/topology.py`` joins them) may know the
length where this one does not. ``resolve_cables`` takes, per port of the intent, the first
of:

1. the length the intent declares for the port (``intent``);
2. the switch's own ``CABLE_LENGTH`` and the peer end's, where the peer is a discovered switch
   of the fabric: the one that is known (``CABLE_LENGTH`` or ``peer CABLE_LENGTH``); where
   both ends know it and disagree, the longer (more headroom is safe, less may lose
   packets), and the disagreement is a ``CableFinding``;
3. ``fabric.lossless.cable_length_m`` (``fabric default``).

A length a switch reports outside what the intent accepts (above 0, at most
``CABLE_LENGTH_MAX_M``) is not used, and is a finding. ``sized_intent`` writes the discovered
lengths into the ports that declare none, so the compiler and the intent's capacity check
size headroom for them with no I/O of their own; an intent without lossless classes, or a
switch never discovered, is sized exactly as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from controller.errors import FieldProblem
from controller.intent.models import CABLE_LENGTH_MAX_M, Intent, Port, Switch
from controller.sonic.buffermgrd import CABLE_LENGTH
from controller.sonic.compile import port_cable_and_mtu
from controller.sonic.discovery import Discovery
from controller.sonic.model import SwitchConfig
from controller.sonic.tables.buffer_profile import lossless_name
from controller.sonic.topology import topology


class CableSource(StrEnum):
    """Where a port's cable length came from, in the order it is taken."""

    INTENT = "intent"
    CABLE_LENGTH = "CABLE_LENGTH"
    PEER = "peer CABLE_LENGTH"
    DEFAULT = "fabric default"

    @property
    def discovered(self) -> bool:
        return self in (CableSource.CABLE_LENGTH, CableSource.PEER)


@dataclass(frozen=True, slots=True)
class PortCable:
    """The length one port's headroom is sized for. ``peer``: the link's other end
    (``switch:port``) where LLDP names a discovered switch of the fabric."""

    switch: str
    port: str
    metres: float
    source: CableSource
    peer: str | None = None

    def describe(self) -> str:
        """``5 m from CABLE_LENGTH``, ``40 m fabric default`` (what a plan shows)."""
        if self.source is CableSource.INTENT:
            return f"{self.metres:g} m declared"
        if self.source is CableSource.DEFAULT:
            return f"{self.metres:g} m fabric default"
        if self.source is CableSource.PEER:
            return f"{self.metres:g} m from {self.peer}'s CABLE_LENGTH"
        return f"{self.metres:g} m from CABLE_LENGTH"

    def as_json(self) -> dict[str, Any]:
        return {
            "switch": self.switch,
            "port": self.port,
            "cable_m": self.metres,
            "source": self.source.value,
            "peer": self.peer,
            "reason": self.describe(),
        }


@dataclass(frozen=True, slots=True)
class CableFinding:
    """A discovered length that was not taken as it stood: two ends of one link that
    disagree (the longer is taken), or a length out of range (not used)."""

    switch: str
    port: str
    field: str  # CONFIG_DB CABLE_LENGTH|<key>.<port> of the end named
    reason: str

    def as_json(self) -> dict[str, str]:
        return {
            "switch": self.switch,
            "port": self.port,
            "field": self.field,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class CableSizing:
    """Every lossless port's cable length by (switch, port), and the findings."""

    ports: Mapping[tuple[str, str], PortCable]
    findings: tuple[CableFinding, ...] = ()

    def only(self, switches: Collection[str]) -> CableSizing:
        """The ports and findings of ``switches``."""
        wanted = set(switches)
        return CableSizing(
            {key: cable for key, cable in self.ports.items() if key[0] in wanted},
            tuple(f for f in self.findings if f.switch in wanted),
        )

    def discovered(self) -> dict[tuple[str, str], float]:
        """(switch, port) -> metres, for the ports whose length a switch reported."""
        return {key: c.metres for key, c in self.ports.items() if c.source.discovered}


NO_SIZING = CableSizing({})


def has_lossless(intent: Intent) -> bool:
    """Whether any port's headroom is sized at all: a lossless class and the platform."""
    classes = any(c.lossless is not None for c in intent.service_classes)
    return classes and intent.fabric.lossless is not None


def _cable_key(discovery: Discovery, port: str) -> str:
    """The CONFIG_DB field that holds ``port``'s length (``CABLE_LENGTH|AZURE.Ethernet0``)."""
    for (table, key), fields in sorted(discovery.qos.items()):
        if table == CABLE_LENGTH and port in fields:
            return f"{CABLE_LENGTH}|{key}.{port}"
    return f"{CABLE_LENGTH}.{port}"


def _usable(discovery: Discovery, port: str, findings: list[CableFinding]) -> float | None:
    """The switch's own length of ``port``, None where it has none or one out of range."""
    found = discovery.port(port)
    metres = None if found is None else found.cable_m
    if metres is None or 0 < metres <= CABLE_LENGTH_MAX_M:
        return metres
    reason = (
        f"{discovery.switch}:{port} reports a {metres:g} m cable, outside (0, "
        f"{CABLE_LENGTH_MAX_M:g}] m: not used"
    )
    findings.append(CableFinding(discovery.switch, port, _cable_key(discovery, port), reason))
    return None


def _peers(discovered: Mapping[str, Discovery]) -> dict[tuple[str, str], tuple[str, str]]:
    """Each fabric link end (switch, port) -> the other end, as LLDP joins them."""
    ends: dict[tuple[str, str], tuple[str, str]] = {}
    for link in topology(list(discovered.values())).links:
        ends[(link.a, link.a_port)] = (link.b, link.b_port)
        ends[(link.b, link.b_port)] = (link.a, link.a_port)
    return ends


def resolve_cables(intent: Intent, discovered: Mapping[str, Discovery]) -> CableSizing:
    """Each port's cable length and its source (module docstring), for every port of an
    intent with lossless classes; ``discovered``: the newest discoveries (the intent's
    switches and any other of the fabric). Empty without a lossless class."""
    if not has_lossless(intent) or intent.fabric.lossless is None:
        return NO_SIZING
    default_m = intent.fabric.lossless.cable_length_m
    found = {d.switch: d for d in discovered.values()}
    peers = _peers(found)
    findings: list[CableFinding] = []
    ports: dict[tuple[str, str], PortCable] = {}
    for switch, port in _ports(intent):
        key = (switch.name, port.name)
        if port.cable_length_m is not None:
            ports[key] = PortCable(*key, port.cable_length_m, CableSource.INTENT)
            continue
        cable = _discovered(key, found, peers, findings)
        end = peers.get(key)
        peer = None if end is None else f"{end[0]}:{end[1]}"
        ports[key] = cable or PortCable(*key, default_m, CableSource.DEFAULT, peer)
    return CableSizing(ports, tuple(dict.fromkeys(findings)))


def discovered_cables(discovered: Mapping[str, Discovery]) -> CableSizing:
    """Every discovered port's length where its switch or the link's other end knows it
    (``CABLE_LENGTH`` or ``peer CABLE_LENGTH``, the longer where both do): what an inventory
    proposes as the ports' ``cable_length_m``."""
    found = {d.switch: d for d in discovered.values()}
    peers = _peers(found)
    findings: list[CableFinding] = []
    ports: dict[tuple[str, str], PortCable] = {}
    for discovery in found.values():
        for port in discovery.ports:
            cable = _discovered((discovery.switch, port.name), found, peers, findings)
            if cable is not None:
                ports[(discovery.switch, port.name)] = cable
    return CableSizing(ports, tuple(dict.fromkeys(findings)))


def _ports(intent: Intent) -> Iterator[tuple[Switch, Port]]:
    for switch in intent.switches:
        for port in switch.ports:
            yield switch, port


def _discovered(
    key: tuple[str, str],
    found: Mapping[str, Discovery],
    peers: Mapping[tuple[str, str], tuple[str, str]],
    findings: list[CableFinding],
) -> PortCable | None:
    """The length a switch reports for its port or the link's other end does (the longer
    where both do and disagree, the disagreement a finding); None where neither does."""
    switch, port = key
    here = found.get(switch)
    own = None if here is None else _usable(here, port, findings)
    end = peers.get(key)
    if end is None:
        return None if own is None else PortCable(switch, port, own, CableSource.CABLE_LENGTH)
    peer = found[end[0]]
    there = _usable(peer, end[1], findings)
    named = f"{end[0]}:{end[1]}"
    if own is not None and there is not None and own != there:
        ends = {switch: here, end[0]: peer}
        findings.append(_disagreement((switch, port, own), (end[0], end[1], there), ends))
    if own is not None and (there is None or own >= there):
        return PortCable(switch, port, own, CableSource.CABLE_LENGTH, named)
    if there is not None:
        return PortCable(switch, port, there, CableSource.PEER, named)
    return None


End = tuple[str, str, float]  # switch, port, metres


def _disagreement(here: End, there: End, by_name: Mapping[str, Discovery | None]) -> CableFinding:
    """Both ends know the link's length and disagree: the shorter end is named (its
    headroom would be too small for the longer), the longer taken. The same finding from
    either end, so a link whose two ends are both in the intent is reported once."""
    short, long = sorted((here, there), key=lambda end: (end[2], end[0], end[1]))
    a, b = sorted((here, there))
    reason = (
        f"{a[0]}:{a[1]} says {a[2]:g} m, {b[0]}:{b[1]} {b[2]:g} m for one cable: headroom "
        f"sized for the longer, {long[2]:g} m"
    )
    holder = by_name.get(short[0])
    key = f"{CABLE_LENGTH}.{short[1]}" if holder is None else _cable_key(holder, short[1])
    return CableFinding(short[0], short[1], key, reason)


def sized_intent(intent: Intent, sizing: CableSizing) -> Intent:
    """``intent`` with each port that declares no cable carrying its discovered length:
    what the compiler and the capacity check size headroom from. The intent itself when
    nothing was discovered (its compiled versions stay as they were)."""
    lengths = sizing.discovered()
    if not lengths:
        return intent
    switches = tuple(
        switch.model_copy(
            update={
                "ports": tuple(
                    port.model_copy(update={"cable_length_m": lengths[(switch.name, port.name)]})
                    if (switch.name, port.name) in lengths
                    else port
                    for port in switch.ports
                )
            }
        )
        for switch in intent.switches
    )
    return intent.model_copy(update={"switches": switches})


def stale_headroom(
    intent: Intent, sizing: CableSizing, desired: Mapping[str, SwitchConfig], version: int
) -> list[FieldProblem]:
    """Ports whose stored desired state (``version``'s, compiled when it was written) names
    a lossless profile for another length than ``sizing`` gives now: a discovery recorded
    since reported other cables. Writing the intent again sizes it anew."""
    problems: list[FieldProblem] = []
    for switch, port in _ports(intent):
        cable = sizing.ports.get((switch.name, port.name))
        config = desired.get(switch.name)
        if cable is None or config is None:
            continue
        _, mtu = port_cable_and_mtu(intent.fabric, port)
        wanted = lossless_name(port.speed_gbps, cable.metres, mtu)
        stored = sorted(
            {
                fields["profile"]
                for (table, key), fields in config.items()
                if table == "BUFFER_PG" and key.split("|")[0] == port.name and "profile" in fields
            }
        )
        if stored and wanted not in stored:
            reason = (
                f"version {version} sizes its headroom for {', '.join(stored)}; the switches "
                f"now report {cable.describe()}: write the intent again to size it for that"
            )
            problems.append(FieldProblem(f"switches.{switch.name}.ports.{port.name}", reason))
    return problems
