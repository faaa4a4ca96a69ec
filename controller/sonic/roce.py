"""Is the running fabric ready for RoCE: ``check_roce``. Pure.

Lossless traffic stays lossless only if every hop treats it alike: a PFC pause means
something only if the port that receives it pauses the same priority, and a packet is
lossless at the next hop only if that hop's maps put its DSCP in a lossless class again. So
from the discoveries of the fabric's switches (``controller/sonic/discovery.py``) and the
links their LLDP tables draw (``controller/sonic/topology.py``), for every fabric link both
ends are compared on:

- ``pfc_priorities``: ``PORT_QOS_MAP|<port>.pfc_enable``, the priorities PFC pauses;
- ``dscp_to_tc``: the DSCP->TC map bound to the port (its own, else ``PORT_QOS_MAP|global``'s),
  each DSCP that either end sends to a lossless TC (a DSCP the map leaves out, or a port with no
  map, is TC 0: SAI's default, as ``controller/sonic/coexist.py`` takes it);
- ``tc_to_pg``: ``tc_to_pg_map``, each lossless TC's priority group (``none``: no map bound,
  SAI's "no map", saiport.h ``SAI_PORT_ATTR_QOS_TC_TO_PRIORITY_GROUP_MAP``);
- ``pfc_to_queue``: ``pfc_to_queue_map``, the queue a pause of each lossless priority stops
  (unbound: queue n for priority n, as coexist takes it);
- ``pfc_to_pg``: ``pfc_to_pg_map``, the priority group whose XOFF point sends each lossless
  priority's pauses (``none``: no map bound, SAI's "no map", saiport.h
  ``SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_PRIORITY_GROUP_MAP``). An end with no map whose platform
  is not one SONiC binds a map on (``controller/sonic/asic.py``) is left out of this
  comparison: there the ASIC gives each priority its group, and binding a map is what SONiC
  (and sluice) never do, so a mixed fabric is not a mismatch;
- ``mtu``: ``PORT|<port>.mtu`` (9100 where unset, sonic-port.yang's default).

The lossless priorities compared on a link are those of either end, so a priority lossless on
one end only shows once, as a ``pfc_priorities`` finding, and its map entries are compared too.
Which end is wrong: the fabric's ends mostly agree, so an end whose value differs from the
value most link ends have (a strict majority of the ends that have the entry, none tied with
it) is named, with that value expected; where no value is the fabric's, both ends are named,
each expecting its peer's value.

Every port with PFC on (fabric or host-facing), for each lossless priority:

- ``headroom``: a ``BUFFER_PG`` entry covering the priority's group (its ``tc_to_pg_map``
  entry; the priority itself where none is bound, SONiC's stock numbering) whose
  ``BUFFER_PROFILE`` has ``xoff``: headroom for what arrives after the pause. In SONiC's
  dynamic buffer model a group with profile ``NULL`` has its headroom computed by buffermgrd
  (SONiC's dynamic buffer calculation HLD, ``doc/qos/dynamically-headroom-calculation.md``),
  which counts as headroom;
- ``watchdog``: a ``PFC_WD|<port>`` entry, and the priority among those it watches
  (``pfcwd_sw_enable``; where the port has no such list, its ``pfc_enable``).

A switch that could not be read is an ``unreachable`` finding; its links are not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.sonic.asic import asic_of
from controller.sonic.buffermgrd import DYNAMIC
from controller.sonic.coexist import port_binding
from controller.sonic.discovery import Discovery
from controller.sonic.model import SwitchConfig
from controller.sonic.tables.buffer_profile import SONIC_DEFAULT_MTU
from controller.sonic.tables.port_qos_map import priority_list
from controller.sonic.topology import Link, Topology

PFC_PRIORITIES = "pfc_priorities"
DSCP_TO_TC = "dscp_to_tc"
TC_TO_PG = "tc_to_pg"
PFC_TO_QUEUE = "pfc_to_queue"
PFC_TO_PG = "pfc_to_pg"
MTU = "mtu"
HEADROOM = "headroom"
WATCHDOG = "watchdog"
UNREACHABLE = "unreachable"
LINK_KINDS = (PFC_PRIORITIES, DSCP_TO_TC, TC_TO_PG, PFC_TO_QUEUE, PFC_TO_PG, MTU)
NO_MAP = "none"
DSCP_COUNT = 64
DYNAMIC_PROFILE = "NULL"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong: what (``kind``), where (``switch``, ``port``, the CONFIG_DB
    ``field``), what was expected and what the switch has."""

    kind: str
    switch: str
    port: str | None
    field: str
    expected: str
    found: str
    reason: str

    @property
    def end(self) -> str:
        return self.switch if self.port is None else f"{self.switch}:{self.port}"

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "end": self.end,
            "switch": self.switch,
            "port": self.port,
            "field": self.field,
            "expected": self.expected,
            "found": self.found,
            "reason": self.reason,
        }


def _judged(
    where: dict[str, Any], priorities: tuple[int, ...], findings: tuple[Finding, ...]
) -> dict[str, Any]:
    return {
        **where,
        "priorities": list(priorities),
        "ok": not findings,
        "findings": [f.as_json() for f in findings],
    }


@dataclass(frozen=True)
class LinkCheck:
    """One fabric link's two ends compared."""

    a: str
    a_port: str
    b: str
    b_port: str
    priorities: tuple[int, ...]  # lossless on either end
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_json(self) -> dict[str, Any]:
        ends = {"a": f"{self.a}:{self.a_port}", "b": f"{self.b}:{self.b_port}"}
        return _judged(ends, self.priorities, self.findings)


@dataclass(frozen=True)
class PortCheck:
    """One port with PFC on: its lossless priorities' headroom and watchdog."""

    switch: str
    port: str
    priorities: tuple[int, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_json(self) -> dict[str, Any]:
        return _judged({"port": f"{self.switch}:{self.port}"}, self.priorities, self.findings)


@dataclass(frozen=True)
class RoceCheck:
    """The fabric's RoCE check: per link, per lossless port, and the switches not read."""

    links: tuple[LinkCheck, ...]
    ports: tuple[PortCheck, ...]
    unreachable: tuple[Finding, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        return (
            *self.unreachable,
            *(f for link in self.links for f in link.findings),
            *(f for port in self.ports for f in port.findings),
        )

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "findings": len(self.findings),
            "links": [link.as_json() for link in self.links],
            "ports": [port.as_json() for port in self.ports],
            "unreachable": [f.as_json() for f in self.unreachable],
        }


def _priorities(text: str | None) -> frozenset[int]:
    return frozenset(int(p) for p in (text or "").split(",") if p.strip().isdigit())


def _int_map(fields: Mapping[str, str] | None) -> dict[int, int]:
    return {int(k): int(v) for k, v in (fields or {}).items() if k.isdigit() and v.isdigit()}


@dataclass(frozen=True)
class _PortQos:
    """What one port does with lossless traffic, as its CONFIG_DB says."""

    switch: str
    port: str
    priorities: frozenset[int]
    mtu: int
    dscp_map: str | None
    tc_of_dscp: Mapping[int, int]
    pg_map: str | None
    pg_of_tc: Mapping[int, int]
    queue_map: str | None
    queue_of_pfc: Mapping[int, int]
    pfc_pg_map: str | None
    pg_of_pfc: Mapping[int, int]
    takes_pfc_pg_map: bool  # its platform is one SONiC binds the map on, or not known

    def tc(self, dscp: int) -> int:
        return self.tc_of_dscp.get(dscp, 0)

    def lossless_dscps(self, priorities: frozenset[int]) -> frozenset[int]:
        return frozenset(d for d in range(DSCP_COUNT) if self.tc(d) in priorities)

    def _field(self, table: str, name: str | None, binding: str, entry: int) -> str:
        if name is None:
            return f"PORT_QOS_MAP|{self.port}.{binding}"
        return f"{table}|{name}.{entry}"

    def items(
        self, priorities: frozenset[int], dscps: frozenset[int]
    ) -> dict[tuple[str, str], tuple[str, str]]:
        """(kind, entry) -> (the CONFIG_DB field, its value) for what a link compares."""
        items = {
            (PFC_PRIORITIES, ""): (
                f"PORT_QOS_MAP|{self.port}.pfc_enable",
                priority_list(self.priorities) or NO_MAP,
            ),
            (MTU, ""): (f"PORT|{self.port}.mtu", str(self.mtu)),
        }
        for dscp in sorted(dscps):
            field = self._field("DSCP_TO_TC_MAP", self.dscp_map, "dscp_to_tc_map", dscp)
            items[(DSCP_TO_TC, f"DSCP {dscp}")] = (field, str(self.tc(dscp)))
        for tc in sorted(priorities):
            field = self._field("TC_TO_PRIORITY_GROUP_MAP", self.pg_map, "tc_to_pg_map", tc)
            pg = self.pg_of_tc.get(tc)
            items[(TC_TO_PG, f"TC {tc}")] = (field, NO_MAP if pg is None else str(pg))
        for priority in sorted(priorities):
            field = self._field(
                "MAP_PFC_PRIORITY_TO_QUEUE", self.queue_map, "pfc_to_queue_map", priority
            )
            queue = self.queue_of_pfc.get(priority, priority)
            items[(PFC_TO_QUEUE, f"priority {priority}")] = (field, str(queue))
            if self.pfc_pg_map is None and not self.takes_pfc_pg_map:
                continue
            field = self._field(
                "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", self.pfc_pg_map, "pfc_to_pg_map", priority
            )
            pg = self.pg_of_pfc.get(priority)
            items[(PFC_TO_PG, f"priority {priority}")] = (field, NO_MAP if pg is None else str(pg))
        return items


def _port_qos(discovery: Discovery, port: str) -> _PortQos:
    config = discovery.qos
    fields = config.get(("PORT_QOS_MAP", port), {})
    dscp_map = port_binding(config, port, "dscp_to_tc_map")
    pg_map = fields.get("tc_to_pg_map")
    queue_map = fields.get("pfc_to_queue_map")
    pfc_pg_map = fields.get("pfc_to_pg_map")
    found = discovery.port(port)
    mtu = found.mtu if found is not None else None
    return _PortQos(
        discovery.switch,
        port,
        _priorities(fields.get("pfc_enable")),
        mtu or SONIC_DEFAULT_MTU,
        dscp_map,
        _int_map(config.get(("DSCP_TO_TC_MAP", dscp_map or ""))),
        pg_map,
        _int_map(config.get(("TC_TO_PRIORITY_GROUP_MAP", pg_map or ""))),
        queue_map,
        _int_map(config.get(("MAP_PFC_PRIORITY_TO_QUEUE", queue_map or ""))),
        pfc_pg_map,
        _int_map(config.get(("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", pfc_pg_map or ""))),
        not discovery.platform or asic_of(discovery.platform) is not None,
    )


@dataclass(frozen=True)
class _Pair:
    link: Link
    priorities: frozenset[int]
    a: dict[tuple[str, str], tuple[str, str]]
    b: dict[tuple[str, str], tuple[str, str]]


def _pair(link: Link, by_switch: Mapping[str, Discovery]) -> _Pair:
    a = _port_qos(by_switch[link.a], link.a_port)
    b = _port_qos(by_switch[link.b], link.b_port)
    priorities = a.priorities | b.priorities
    dscps = a.lossless_dscps(priorities) | b.lossless_dscps(priorities)
    return _Pair(link, priorities, a.items(priorities, dscps), b.items(priorities, dscps))


def _consensus(pairs: Iterable[_Pair]) -> dict[tuple[str, str], str]:
    """Per compared entry, the value a strict plurality of link ends has (no tie)."""
    counts: dict[tuple[str, str], Counter[str]] = {}
    for pair in pairs:
        for items in (pair.a, pair.b):
            for key, (_, value) in items.items():
                counts.setdefault(key, Counter())[value] += 1
    found: dict[tuple[str, str], str] = {}
    for key, counter in counts.items():
        ranked = counter.most_common(2)
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            found[key] = ranked[0][0]
    return found


def _describe(kind: str, entry: str) -> str:
    what = {
        PFC_PRIORITIES: "PFC priorities",
        DSCP_TO_TC: f"{entry}'s traffic class",
        TC_TO_PG: f"{entry}'s priority group",
        PFC_TO_QUEUE: f"the queue a pause of {entry} stops",
        PFC_TO_PG: f"the priority group that sends {entry}'s pauses",
        MTU: "MTU",
    }
    return what[kind]


def _link_findings(pair: _Pair, consensus: Mapping[tuple[str, str], str]) -> list[Finding]:
    link = pair.link
    ends = ((link.a, link.a_port, pair.a), (link.b, link.b_port, pair.b))
    findings: list[Finding] = []
    # Both ends have every entry but a pfc_to_pg one, which an end whose ASIC gives each
    # priority its group leaves out (_PortQos.items): compared only where both have it.
    for key in sorted(pair.a.keys() & pair.b.keys(), key=_key_order):
        a_value, b_value = pair.a[key][1], pair.b[key][1]
        if a_value == b_value:
            continue
        fabric = consensus.get(key)
        kind, entry = key
        for (switch, port, items), (peer, peer_port, peer_items) in (ends, ends[::-1]):
            field, value = items[key]
            peer_value = peer_items[key][1]
            if fabric is not None and value == fabric:
                continue
            expected = fabric if fabric is not None else peer_value
            basis = (
                "most of the fabric's link ends have it"
                if fabric is not None
                else "no value is the fabric's"
            )
            findings.append(
                Finding(
                    kind,
                    switch,
                    port,
                    field,
                    expected,
                    value,
                    f"{_describe(kind, entry)} {value} here, {peer_value} at {peer}:{peer_port} "
                    f"({basis})",
                )
            )
    return findings


def _key_order(key: tuple[str, str]) -> tuple[int, int, str]:
    kind, entry = key
    digits = entry.rsplit(" ", 1)[-1]
    return (LINK_KINDS.index(kind), int(digits) if digits.isdigit() else -1, entry)


def _pg_entries(config: SwitchConfig, port: str) -> list[tuple[int, int, str, str]]:
    """``port``'s ``BUFFER_PG`` entries: (first group, last group, key, profile)."""
    found = []
    for (table, key), fields in config.items():
        name, _, groups = key.partition("|")
        if table != "BUFFER_PG" or name != port:
            continue
        low, _, high = groups.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            found.append((int(low), int(high or low), key, fields.get("profile", "")))
    return sorted(found)


def _profile_name(reference: str) -> str:
    """``pg_lossless_100000_5m_profile``, also from SONiC's older ``[BUFFER_PROFILE|name]``."""
    inner = reference.strip().removeprefix("[").removesuffix("]")
    return inner.removeprefix("BUFFER_PROFILE|")


def _headroom_finding(discovery: Discovery, qos: _PortQos, priority: int) -> Finding | None:
    group = qos.pg_of_tc.get(priority, priority) if qos.pg_map is not None else priority
    port = qos.port
    covering = [e for e in _pg_entries(discovery.qos, port) if e[0] <= group <= e[1]]
    expected = "a BUFFER_PG with a lossless profile (xoff, xon)"

    def finding(field: str, found: str, why: str) -> Finding:
        return Finding(
            HEADROOM,
            discovery.switch,
            port,
            field,
            expected,
            found,
            f"priority {priority} (group {group}) {why}",
        )

    if not covering:
        return finding(f"BUFFER_PG|{port}|{group}", NO_MAP, "has no headroom: no BUFFER_PG")
    _, _, key, reference = covering[0]
    field = f"BUFFER_PG|{key}.profile"
    name = _profile_name(reference)
    if name == DYNAMIC_PROFILE:
        if discovery.buffer_model == DYNAMIC:
            return None  # buffermgrd computes its headroom
        return finding(field, name, "has profile NULL outside SONiC's dynamic buffer model")
    profile = discovery.qos.get(("BUFFER_PROFILE", name))
    if profile is None:
        return finding(field, name, f"names a profile CONFIG_DB has no BUFFER_PROFILE|{name} of")
    if not profile.get("xoff"):
        return finding(field, name, f"has a lossy profile: BUFFER_PROFILE|{name} has no xoff")
    return None


def _watchdog_finding(discovery: Discovery, qos: _PortQos, priority: int) -> Finding | None:
    port = qos.port
    if ("PFC_WD", port) not in discovery.qos:
        return Finding(
            WATCHDOG,
            discovery.switch,
            port,
            f"PFC_WD|{port}",
            "a PFC watchdog (detection_time, restoration_time)",
            NO_MAP,
            f"priority {priority} has no watchdog: a PFC storm would stop it for good",
        )
    listed = discovery.qos.get(("PORT_QOS_MAP", port), {}).get("pfcwd_sw_enable")
    if listed is not None and priority not in _priorities(listed):
        return Finding(
            WATCHDOG,
            discovery.switch,
            port,
            f"PORT_QOS_MAP|{port}.pfcwd_sw_enable",
            f"{priority} listed",
            listed or NO_MAP,
            f"the watchdog does not watch priority {priority}",
        )
    return None


def _port_checks(discovery: Discovery) -> list[PortCheck]:
    checks = []
    for (table, port), fields in sorted(discovery.qos.items()):
        priorities = _priorities(fields.get("pfc_enable"))
        if table != "PORT_QOS_MAP" or not priorities:
            continue
        qos = _port_qos(discovery, port)
        findings = [
            found
            for priority in sorted(priorities)
            for found in (
                _headroom_finding(discovery, qos, priority),
                _watchdog_finding(discovery, qos, priority),
            )
            if found is not None
        ]
        checks.append(PortCheck(discovery.switch, port, tuple(sorted(priorities)), tuple(findings)))
    return checks


def check_roce(
    discoveries: Sequence[Discovery], topology: Topology, errors: Mapping[str, str]
) -> RoceCheck:
    """The RoCE check of the discovered fabric (module docstring); ``errors``: the switches
    that could not be read, and why."""
    by_switch = {d.switch: d for d in discoveries}
    pairs = [
        _pair(link, by_switch)
        for link in topology.links
        if link.a in by_switch and link.b in by_switch
    ]
    consensus = _consensus(pairs)
    links = tuple(
        LinkCheck(
            pair.link.a,
            pair.link.a_port,
            pair.link.b,
            pair.link.b_port,
            tuple(sorted(pair.priorities)),
            tuple(_link_findings(pair, consensus)),
        )
        for pair in pairs
    )
    ports = tuple(check for d in discoveries for check in _port_checks(d))
    unreachable = tuple(
        # The worker's reason may start with the switch's name, which the finding's end says.
        Finding(
            UNREACHABLE,
            switch,
            None,
            "",
            "read over gNMI",
            "not read",
            reason.removeprefix(f"{switch}: "),
        )
        for switch, reason in sorted(errors.items())
    )
    return RoceCheck(links, ports, unreachable)
