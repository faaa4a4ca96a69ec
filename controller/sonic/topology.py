"""The fabric as its switches' LLDP tables draw it, its base RTT, and the inventory. Pure.

``topology`` joins discoveries (``controller/sonic/discovery.py``) into links: a neighbour
whose system name is another discovered switch (its hostname, or the name it was discovered
by) and whose port id is one of that switch's ports (by name or alias; SONiC's lldpmgrd
advertises the alias) is a fabric link. Every other port with a neighbour faces a host; when
no host answers LLDP, the up ports that are not fabric links are taken as host-facing.

``estimate_rtt`` is the base round trip (no queueing) of the longest host-to-host path, the
one whose K = C x RTT x lambda matters most. Per link a frame is sent whole before the next
hop forwards it (store and forward) and propagates along the cable; per switch it waits a
forwarding delay. With queueing delay zero, the end-to-end delay is the sum of those terms
(Kurose & Ross, Computer Networking: A Top-Down Approach, §1.4, "Delay, Loss, and Throughput
in Packet-Switched Networks": d_nodal = d_proc + d_queue + d_trans + d_prop, and over N hops
d_end-end = N (d_proc + d_trans + d_prop)). The round trip sends one MTU frame one way and a
64-byte minimum frame (the ACK) back:

    RTT = sum over links (2 x L / v + (MTU + 64 B) x 8 / C) + 2 x switches x d_switch

with L the cable length (``CABLE_LENGTH``; 0 where the switch does not know it), v = 2 x 10^8
m/s (light in fibre, as Kurose & Ross §1.4 gives the propagation speed of fibre and copper),
C the link's speed (the slower end) and d_switch the per-hop forwarding delay the caller
gives (a platform figure: a cut-through data-centre ASIC forwards in well under a
microsecond, a store-and-forward one adds its own serialisation). Host stacks and NICs are
not in it: declare ``fabric.base_rtt_us`` to include them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.intent.models import Dialect
from controller.sonic.discovery import DiscoveredPort, Discovery

FIBRE_M_PER_S = 2.0e8
ACK_FRAME_BYTES = 64
DEFAULT_PER_HOP_US = 1.0
FORMULA = (
    "RTT = sum over links (2 x L / v + (MTU + 64 B) x 8 / C) + 2 x switches x d_switch "
    "(Kurose & Ross, Computer Networking, §1.4: no queueing)"
)


@dataclass(frozen=True, slots=True)
class Link:
    """A fabric link between two discovered switches."""

    a: str
    a_port: str
    b: str
    b_port: str
    speed_mbps: int | None
    cable_m: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "a_port": self.a_port,
            "b": self.b,
            "b_port": self.b_port,
            "speed_mbps": self.speed_mbps,
            "cable_m": self.cable_m,
        }


@dataclass(frozen=True)
class Topology:
    """Switches by name, fabric links, and each switch's host-facing ports."""

    switches: tuple[str, ...]
    links: tuple[Link, ...]
    host_ports: Mapping[str, tuple[str, ...]]

    def role(self, switch: str) -> str:
        """leaf when hosts hang off the switch, else spine."""
        return "leaf" if self.host_ports.get(switch) else "spine"

    def as_json(self) -> dict[str, Any]:
        return {
            "switches": list(self.switches),
            "links": [link.as_json() for link in self.links],
            "host_ports": {name: list(ports) for name, ports in self.host_ports.items()},
        }


def _names(discovery: Discovery) -> set[str]:
    return {n for n in (discovery.switch, discovery.hostname) if n}


def _peer_port(peer: Discovery, port_id: str, description: str) -> DiscoveredPort | None:
    for port in peer.ports:
        if port_id in (port.name, port.alias) or description == port.name:
            return port
    return None


def _slower(a: int | None, b: int | None) -> int | None:
    known = [s for s in (a, b) if s is not None]
    return min(known) if known else None


def _longer(a: float | None, b: float | None) -> float | None:
    known = [c for c in (a, b) if c is not None]
    return max(known) if known else None


def topology(discoveries: Sequence[Discovery]) -> Topology:
    """Fabric links and host-facing ports of the discovered switches (module docstring)."""
    by_name = {name: d for d in discoveries for name in _names(d)}
    links: dict[frozenset[tuple[str, str]], Link] = {}
    fabric_ports: dict[str, set[str]] = {d.switch: set() for d in discoveries}
    host_ports: dict[str, list[str]] = {d.switch: [] for d in discoveries}
    for discovery in discoveries:
        for neighbour in discovery.neighbours:
            peer = by_name.get(neighbour.system_name)
            local = discovery.port(neighbour.port)
            if peer is None or peer is discovery or local is None:
                host_ports[discovery.switch].append(neighbour.port)
                continue
            remote = _peer_port(peer, neighbour.port_id, neighbour.port_description)
            if remote is None:
                continue
            fabric_ports[discovery.switch].add(local.name)
            ends = frozenset({(discovery.switch, local.name), (peer.switch, remote.name)})
            links.setdefault(
                ends,
                Link(
                    discovery.switch,
                    local.name,
                    peer.switch,
                    remote.name,
                    _slower(local.speed_mbps, remote.speed_mbps),
                    _longer(local.cable_m, remote.cable_m),
                ),
            )
    if not any(host_ports.values()):
        for discovery in discoveries:
            host_ports[discovery.switch] = [
                p.name
                for p in discovery.ports
                if p.admin_status == "up" and p.name not in fabric_ports[discovery.switch]
            ]
    ordered = sorted(links.values(), key=lambda link: (link.a, link.a_port, link.b, link.b_port))
    return Topology(
        tuple(d.switch for d in discoveries),
        tuple(ordered),
        {name: tuple(ports) for name, ports in host_ports.items()},
    )


@dataclass(frozen=True)
class RttEstimate:
    """The base RTT of the longest host-to-host path and how it was reached."""

    base_rtt_us: float
    path: tuple[str, ...]
    links: int
    switches: int
    transmission_us: float
    propagation_us: float
    forwarding_us: float
    unknown_cables: int
    mtu_bytes: int
    per_hop_us: float

    def as_json(self) -> dict[str, Any]:
        return {
            "base_rtt_us": self.base_rtt_us,
            "path": list(self.path),
            "links": self.links,
            "switches": self.switches,
            "transmission_us": self.transmission_us,
            "propagation_us": self.propagation_us,
            "forwarding_us": self.forwarding_us,
            "unknown_cables": self.unknown_cables,
            "mtu_bytes": self.mtu_bytes,
            "per_hop_us": self.per_hop_us,
            "formula": FORMULA,
        }


def _paths(topo: Topology, start: str) -> dict[str, list[Link]]:
    """Fewest-hop paths from ``start`` to every switch it reaches (breadth first)."""
    adjacent: dict[str, list[tuple[str, Link]]] = {}
    for link in topo.links:
        adjacent.setdefault(link.a, []).append((link.b, link))
        adjacent.setdefault(link.b, []).append((link.a, link))
    paths: dict[str, list[Link]] = {start: []}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for there, link in adjacent.get(here, ()):
            if there not in paths:
                paths[there] = [*paths[here], link]
                queue.append(there)
    return paths


def _edge(discovery: Discovery, ports: Sequence[str]) -> DiscoveredPort | None:
    """The slowest host-facing port (the longest serialisation)."""
    found = [p for p in (discovery.port(n) for n in ports) if p is not None and p.speed_mbps]
    return min(found, key=lambda p: p.speed_mbps or 0) if found else None


def _link_terms(speed_mbps: int | None, cable_m: float | None, mtu: int) -> tuple[float, float]:
    """(transmission, propagation) of one link, round trip, in µs."""
    transmission = (mtu + ACK_FRAME_BYTES) * 8 / (speed_mbps * 1e6) * 1e6 if speed_mbps else 0.0
    propagation = 2 * (cable_m or 0.0) / FIBRE_M_PER_S * 1e6
    return transmission, propagation


def estimate_rtt(
    topo: Topology,
    discoveries: Sequence[Discovery],
    *,
    mtu_bytes: int,
    per_hop_us: float = DEFAULT_PER_HOP_US,
) -> RttEstimate | None:
    """The base RTT of the longest host-to-host path (module docstring); None when no
    switch has a host-facing port."""
    by_switch = {d.switch: d for d in discoveries}
    edges = {name: ports for name, ports in topo.host_ports.items() if ports}
    best: tuple[int, str, str, list[Link]] | None = None
    for start in sorted(edges):
        for end, path in sorted(_paths(topo, start).items()):
            if end in edges and (best is None or len(path) > best[0]):
                best = (len(path), start, end, path)
    if best is None:
        return None
    _, start, end, path = best
    ends = [_edge(by_switch[start], edges[start]), _edge(by_switch[end], edges[end])]
    terms = [_link_terms(p.speed_mbps, p.cable_m, mtu_bytes) for p in ends if p is not None]
    terms += [_link_terms(link.speed_mbps, link.cable_m, mtu_bytes) for link in path]
    unknown = sum(1 for p in ends if p is not None and p.cable_m is None)
    unknown += sum(1 for link in path if link.cable_m is None)
    switches = len(path) + 1
    transmission = sum(t for t, _ in terms)
    propagation = sum(p for _, p in terms)
    forwarding = 2 * switches * per_hop_us
    hops = [start, *_walk(start, path)]
    return RttEstimate(
        round(transmission + propagation + forwarding, 3),
        ("host", *hops, "host"),
        len(terms),
        switches,
        round(transmission, 3),
        round(propagation, 3),
        round(forwarding, 3),
        unknown,
        mtu_bytes,
        per_hop_us,
    )


def _walk(start: str, path: Sequence[Link]) -> list[str]:
    here, names = start, []
    for link in path:
        here = link.b if link.a == here else link.a
        names.append(here)
    return names


def inventory(
    discoveries: Sequence[Discovery],
    topo: Topology,
    endpoints: Mapping[str, Mapping[str, Any]],
    rtt: RttEstimate | None,
    cables: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, Any]:
    """What discovery found as intent YAML to review: ``switches`` (each with its admin-up
    ports at whole Gb/s speeds, with ``cable_length_m`` where ``cables`` has the port's
    (switch, port): the length the switches reported, ``controller/sonic/cables.py``, so an
    adopted fabric's lossless headroom is sized as before; the role the topology gives it,
    and ``endpoints[name]``: its ``gnmi`` and ``credential_ref``) and, when estimated,
    ``fabric.base_rtt_us``."""
    lengths = cables or {}
    switches = []
    for discovery in discoveries:
        ports = [
            _inventory_port(p.name, p.speed_mbps // 1000, lengths.get((discovery.switch, p.name)))
            for p in discovery.ports
            if p.admin_status == "up" and p.speed_mbps and p.speed_mbps % 1000 == 0
        ]
        entry = {
            "name": discovery.switch,
            "role": topo.role(discovery.switch),
            **dict(endpoints.get(discovery.switch, {})),
            "ports": ports,
        }
        if discovery.dialect is not Dialect.SONIC:  # from its Capabilities; sonic: the default
            entry["dialect"] = discovery.dialect.value
        switches.append(entry)
    document: dict[str, Any] = {"switches": switches}
    if rtt is not None:
        document["fabric"] = {"base_rtt_us": rtt.base_rtt_us}
    return document


def _inventory_port(name: str, speed_gbps: int, cable_m: float | None) -> dict[str, Any]:
    port: dict[str, Any] = {"name": name, "speed_gbps": speed_gbps}
    if cable_m is not None:
        port["cable_length_m"] = cable_m
    return port
