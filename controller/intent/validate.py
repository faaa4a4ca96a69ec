"""Cross-object intent rules: every problem at once, each naming its field and the reason.

Field-level rules (types, ranges, formats, unknown keys) are in ``models.py``. The rules here
look across objects: names and DSCP values used once, queues not shared, the scheduling that
an ECN mode, PIAS or QJUMP needs, and (in ``controller/intent/capacity.py``) the numbers that
must fit the hardware: thresholds in the buffer, QJUMP levels in the line rate, weights in
SONiC's 1..100. Every rule is a pure function ``Intent -> list[FieldProblem]``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence

from controller.errors import FieldProblem, IntentInvalid
from controller.intent.capacity import CAPACITY_RULES
from controller.intent.models import Dialect, EcnMode, Intent, SchedulingType, ServiceClass

Rule = Callable[[Intent], list[FieldProblem]]

# Port speeds SONiC configures (PORT table `speed`, in Mb/s there); an odd number here is
# almost always a typo (e.g. 10 written as 100 is not catchable, but 1000 for 100 is).
KNOWN_SPEEDS_GBPS = (1, 10, 25, 40, 50, 100, 200, 400, 800)

# A DNS name as RFC 1123 allows it: dot-separated labels of letters, digits and inner hyphens.
_HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def intent_problems(intent: Intent, resolve: AddressResolver | None = None) -> list[FieldProblem]:
    """Every cross-object problem in ``intent``, in rule order; empty when it is sound.
    ``resolve`` tells which addresses a DNS name stands for (none known by default)."""
    problems = unique_names(intent) + unique_endpoints(intent, resolve or no_names)
    for rule in RULES:
        problems.extend(rule(intent))
    return problems


def validate_intent(intent: Intent, resolve: AddressResolver | None = None) -> Intent:
    """``intent`` unchanged, or ``IntentInvalid`` listing every problem."""
    problems = intent_problems(intent, resolve)
    if problems:
        raise IntentInvalid(problems)
    return intent


# ---------------------------------------------------------------------------------------------
# helpers


def _repeats(entries: Iterable[tuple[str, Hashable]]) -> Iterator[tuple[str, Hashable, str]]:
    """``(path, value, first_path)`` for every entry whose value appeared before."""
    first: dict[Hashable, str] = {}
    for path, value in entries:
        if value in first:
            yield path, value, first[value]
        else:
            first[value] = path


def _classes(intent: Intent) -> Iterator[tuple[str, ServiceClass]]:
    for i, service_class in enumerate(intent.service_classes):
        yield f"service_classes[{i}]", service_class


# ---------------------------------------------------------------------------------------------
# names and identities


def unique_names(intent: Intent) -> list[FieldProblem]:
    """Switch, host, class and per-switch port names (endpoints: ``unique_endpoints``)."""
    groups: list[list[tuple[str, Hashable]]] = [
        [(f"credentials[{i}].name", c.name) for i, c in enumerate(intent.credentials)],
        [(f"switches[{i}].name", s.name) for i, s in enumerate(intent.switches)],
        [(f"hosts[{i}].name", h.name) for i, h in enumerate(intent.hosts)],
        [(f"{path}.name", c.name) for path, c in _classes(intent)],
    ]
    for i, switch in enumerate(intent.switches):
        groups.append(
            [(f"switches[{i}].ports[{j}].name", p.name) for j, p in enumerate(switch.ports)]
        )
    return [
        FieldProblem(path, f"duplicate name {value!r} (first used at {first})")
        for group in groups
        for path, value, first in _repeats(group)
    ]


# DNS names to the addresses each stands for (a name left out: unknown). Injected, so the
# rules stay pure: the API and ``sluice check`` pass the system's
# (``controller/southbound/resolve.py``), tests a table.
AddressResolver = Callable[[Sequence[str]], Mapping[str, Iterable[str]]]


def no_names(_names: Sequence[str]) -> dict[str, frozenset[str]]:
    """The resolver that knows no names: endpoints are compared by their literal forms."""
    return {}


def canonical_address(address: str) -> str | None:
    """The one spelling of an IP address (IPv4-mapped IPv6 as IPv4, IPv6 compressed and
    lower-case, brackets dropped); None for what is not an IP address."""
    try:
        ip = ipaddress.ip_address(address.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def dns_name(address: str) -> str:
    """A DNS name as it is compared: lower-case, without the root's trailing dot."""
    return address.strip().lower().rstrip(".")


def address_forms(address: str, known: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """Every form under which ``address`` reaches a machine: its canonical IP address, or a
    DNS name and the canonical addresses ``known`` says it resolves to."""
    ip = canonical_address(address)
    if ip is not None:
        return frozenset({ip})
    name = dns_name(address)
    resolved = (canonical_address(a) for a in known.get(name, ()))
    return frozenset({name, *(a for a in resolved if a is not None)})


def _same_endpoints(
    entries: Sequence[tuple[str, str, str, tuple[int, str] | None]],
    known: Mapping[str, Iterable[str]],
    what: str,
) -> list[FieldProblem]:
    """``(path, owner, address, (port, target) or None)``: a problem for each entry that
    reaches the machine (and port, target) an earlier entry reaches, naming both."""
    seen: dict[tuple[str, object], tuple[str, str, str]] = {}
    problems = []
    for path, owner, address, rest in entries:
        forms = address_forms(address, known)
        clash = next((seen[(f, rest)] for f in sorted(forms) if (f, rest) in seen), None)
        if clash is None:
            seen.update({(form, rest): (path, owner, address) for form in forms})
            continue
        first_path, first_owner, first_address = clash
        where = address if rest is None else f"{address}:{rest[0]}{_target(rest[1])}"
        same = "" if first_address == address else f"; {first_address} and {address} are one"
        reason = f"{what} {where} already used at {first_path} ({first_owner} and {owner}{same})"
        problems.append(FieldProblem(path, reason))
    return problems


def _target(target: str) -> str:
    return f" target {target}" if target else ""


def unique_endpoints(intent: Intent, resolve: AddressResolver = no_names) -> list[FieldProblem]:
    """Two switches behind one gNMI endpoint would each overwrite the other's config, and two
    hosts at one address would get both hosts' settings. Endpoints are compared as machines:
    IPv4-mapped and IPv6 spellings, and names that ``resolve`` to the same address, are one.
    A fleet server tells its switches apart by the prefix target, so the target is part of
    the endpoint."""
    gnmi: list[tuple[str, str, str, tuple[int, str] | None]] = [
        (f"switches[{i}].gnmi", s.name, s.gnmi.address, (s.gnmi.port, s.gnmi.target or ""))
        for i, s in enumerate(intent.switches)
    ]
    hosts: list[tuple[str, str, str, tuple[int, str] | None]] = [
        (f"hosts[{i}].address", h.name, h.address, None) for i, h in enumerate(intent.hosts)
    ]
    addresses = [address for _, _, address, _ in gnmi + hosts]
    names = sorted({dns_name(a) for a in addresses if canonical_address(a) is None})
    known = resolve(names) if names else {}
    problems = _same_endpoints(gnmi, known, "gNMI endpoint")
    return problems + _same_endpoints(hosts, known, "address")


def dialects_supported(intent: Intent) -> list[FieldProblem]:
    """What an OpenConfig switch cannot carry yet, refused by name rather than dropped
    (docs/openconfig.md, "What does not map"): lossless classes (PFC, headroom and DCQCN's
    ECN compile to CONFIG_DB only; openconfig-qos spells no PFC); and a platform on a switch
    that is not an OpenConfig one (vendor deviations are OpenConfig's)."""
    openconfig = [
        i for i, switch in enumerate(intent.switches) if switch.dialect is Dialect.OPENCONFIG
    ]
    lossless = [c.name for c in intent.service_classes if c.lossless is not None]
    platforms = [
        FieldProblem(
            f"switches[{i}].platform",
            f"a platform names an openconfig switch's vendor; this switch's dialect is "
            f"{switch.dialect.value}",
        )
        for i, switch in enumerate(intent.switches)
        if switch.platform is not None and switch.dialect is not Dialect.OPENCONFIG
    ]
    if not openconfig or not lossless:
        return platforms
    reason = (
        f"an openconfig switch cannot carry the lossless classes {', '.join(lossless)}: "
        "PFC, headroom and DCQCN's ECN are written to SONiC's CONFIG_DB only"
    )
    return [FieldProblem(f"switches[{i}].dialect", reason) for i in openconfig] + platforms


def credentials_known(intent: Intent) -> list[FieldProblem]:
    """A switch's ``credential`` names a login in ``credentials``."""
    known = sorted(credential.name for credential in intent.credentials)
    listed = ", ".join(known) if known else "none"
    return [
        FieldProblem(
            f"switches[{i}].credential",
            f"no credential {switch.credential!r} in credentials (defined: {listed})",
        )
        for i, switch in enumerate(intent.switches)
        if switch.credential is not None and switch.credential not in known
    ]


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return _HOSTNAME_RE.match(text) is not None
    return True


def addresses_well_formed(intent: Intent) -> list[FieldProblem]:
    """gNMI and host addresses are dialled and put in an Ansible inventory: an IP address or a
    DNS name, never a URL or ``host:port`` (the gNMI port has its own field)."""
    fields = [
        (f"switches[{i}].gnmi.address", s.gnmi.address) for i, s in enumerate(intent.switches)
    ]
    fields += [(f"hosts[{i}].address", h.address) for i, h in enumerate(intent.hosts)]
    return [
        FieldProblem(path, f"{value!r} is not an IP address or a DNS name")
        for path, value in fields
        if not _is_address(value)
    ]


def exporter_addresses(intent: Intent) -> list[FieldProblem]:
    """The host exporter listens on the host's address, which a DNS name cannot be bound to."""
    if intent.fabric.host_exporter is None:
        return []
    problems = []
    for i, host in enumerate(intent.hosts):
        try:
            ipaddress.ip_address(host.address)
        except ValueError:
            reason = f"{host.address!r} must be an IP address: fabric.host_exporter listens on it"
            problems.append(FieldProblem(f"hosts[{i}].address", reason))
    return problems


def agent_timing(intent: Intent) -> list[FieldProblem]:
    """The agent calls its config stale after ``stale_after_ms``; anything not above one loop
    interval would make every loop stale."""
    agent = intent.fabric.agent
    if agent.stale_after_ms > agent.interval_ms:
        return []
    reason = f"must be greater than fabric.agent.interval_ms ({agent.interval_ms} ms)"
    return [FieldProblem("fabric.agent.stale_after_ms", reason)]


HEALTH_PAIRS = (
    "drops_per_s",
    "mark_fraction",
    "occupancy_pct",
    "agent_heartbeat_s",
    "counters_age_s",
    "collector_lag_s",
    "pfc_pause_per_s",
)


def health_thresholds_ordered(intent: Intent) -> list[FieldProblem]:
    """A critical threshold below its warn threshold would skip warn and confuse alerts."""
    health = intent.fabric.health
    problems = []
    for name in HEALTH_PAIRS:
        warn, critical = getattr(health, f"{name}_warn"), getattr(health, f"{name}_critical")
        if critical < warn:
            reason = f"must be at least fabric.health.{name}_warn ({warn})"
            problems.append(FieldProblem(f"fabric.health.{name}_critical", reason))
    return problems


def counter_intervals(intent: Intent) -> list[FieldProblem]:
    """Nothing may poll counters faster than the platform can (``fabric.counters`` floors,
    SONiC ``counterpoll``: queue and port 100 ms, watermarks 1 s). A dynamic agent's queue
    counters are polled at its interval, so that interval has the queue floor too."""
    fabric = intent.fabric
    counters = fabric.counters
    checks = [
        ("counters.queue_interval_ms", counters.queue_interval_ms, "queue_floor_ms"),
        ("counters.port_interval_ms", counters.port_interval_ms, "port_floor_ms"),
        ("counters.watermark_interval_ms", counters.watermark_interval_ms, "watermark_floor_ms"),
    ]
    if any(c.ecn.is_dynamic for c in intent.service_classes):
        checks.insert(0, ("agent.interval_ms", fabric.agent.interval_ms, "queue_floor_ms"))
    problems = []
    for path, value, floor_name in checks:
        floor = getattr(counters, floor_name)
        if value < floor:
            reason = (
                f"{value} ms is shorter than the switches can poll these counters "
                f"(fabric.counters.{floor_name} = {floor} ms)"
            )
            problems.append(FieldProblem(f"fabric.{path}", reason))
    return problems


def known_speeds(intent: Intent) -> list[FieldProblem]:
    """Port and NIC speeds SONiC and Linux actually run at."""
    known = ", ".join(str(s) for s in KNOWN_SPEEDS_GBPS)
    problems = [
        FieldProblem(
            f"switches[{i}].ports[{j}].speed_gbps",
            f"{port.speed_gbps} Gb/s is not a port speed SONiC configures ({known})",
        )
        for i, switch in enumerate(intent.switches)
        for j, port in enumerate(switch.ports)
        if port.speed_gbps not in KNOWN_SPEEDS_GBPS
    ]
    problems += [
        FieldProblem(
            f"hosts[{i}].nic_gbps", f"{host.nic_gbps} Gb/s is not a known NIC speed ({known})"
        )
        for i, host in enumerate(intent.hosts)
        if host.nic_gbps not in KNOWN_SPEEDS_GBPS
    ]
    return problems


# ---------------------------------------------------------------------------------------------
# DSCP values and queues


def _dscp_uses(intent: Intent) -> Iterator[tuple[str, Hashable]]:
    for path, service_class in _classes(intent):
        for k, dscp in enumerate(service_class.dscp):
            yield f"{path}.dscp[{k}]", dscp
        if service_class.pias is not None:
            for k, stage in enumerate(service_class.pias.demotions):
                yield f"{path}.pias.demotions[{k}].dscp", stage.dscp
        if service_class.hdcq is not None:
            yield f"{path}.hdcq.ack.dscp", service_class.hdcq.ack.dscp
            yield f"{path}.hdcq.long.dscp", service_class.hdcq.long.dscp


def dscp_used_once(intent: Intent) -> list[FieldProblem]:
    """A DSCP value maps to one traffic class, so it may appear once in the whole intent."""
    return [
        FieldProblem(path, f"DSCP {value} is already used at {first}")
        for path, value, first in _repeats(_dscp_uses(intent))
    ]


def _queue_uses(intent: Intent) -> Iterator[tuple[str, Hashable]]:
    for path, service_class in _classes(intent):
        yield f"{path}.queue", service_class.queue
        if service_class.pias is not None:
            for k, stage in enumerate(service_class.pias.demotions):
                yield f"{path}.pias.demotions[{k}].queue", stage.queue
        if service_class.hdcq is not None:
            yield f"{path}.hdcq.ack.queue", service_class.hdcq.ack.queue
            yield f"{path}.hdcq.long.queue", service_class.hdcq.long.queue


def queues_not_shared(intent: Intent) -> list[FieldProblem]:
    """Each queue carries one class (or one PIAS stage): its scheduler and ECN profile are
    per queue, so two owners would fight over them."""
    return [
        FieldProblem(path, f"queue {value} is already used at {first}")
        for path, value, first in _repeats(_queue_uses(intent))
    ]


def pfc_priorities_once(intent: Intent) -> list[FieldProblem]:
    """PFC pauses a priority, so two lossless classes on one would pause each other."""
    uses = [
        (f"{path}.lossless.pfc_priority", service_class.lossless.pfc_priority)
        for path, service_class in _classes(intent)
        if service_class.lossless is not None
    ]
    return [
        FieldProblem(path, f"PFC priority {value} is already used at {first}")
        for path, value, first in _repeats(uses)
    ]


def cnp_rides_a_lossy_class(intent: Intent) -> list[FieldProblem]:
    """DCQCN's CNPs slow the lossless senders down, so they must get through while the
    lossless queues are full: their DSCP is a lossy class's (whose queue the switches put
    them in), never a lossless one's (paused, and past Kmin dropped by the DCQCN ramp: CNPs
    are not ECN-capable), and their priority is not one PFC pauses."""
    platform = intent.fabric.lossless
    lossless = [c for c in intent.service_classes if c.lossless is not None]
    if platform is None or platform.cnp is None or not lossless:
        return []
    cnp, path = platform.cnp, "fabric.lossless.cnp"
    problems: list[FieldProblem] = []
    carrier = next((c for c in intent.service_classes if cnp.dscp in c.dscp), None)
    if carrier is None:
        reason = (
            f"no service class carries DSCP {cnp.dscp}: the switches would put CNPs in "
            "queue 0; give it to a lossy class on a strict or heavily weighted queue"
        )
        problems.append(FieldProblem(f"{path}.dscp", reason))
    elif carrier.lossless is not None:
        reason = (
            f"DSCP {cnp.dscp} is lossless class {carrier.name}'s: CNPs would wait behind "
            "the data they slow down, and its DCQCN ramp drops them (they are not ECN-capable)"
        )
        problems.append(FieldProblem(f"{path}.dscp", reason))
    paused = {c.lossless.pfc_priority: c.name for c in lossless if c.lossless is not None}
    if cnp.priority in paused:
        reason = f"priority {cnp.priority} is lossless class {paused[cnp.priority]}'s PFC priority"
        problems.append(FieldProblem(f"{path}.priority", reason))
    return problems


# ---------------------------------------------------------------------------------------------
# scheduling and what each feature needs of it


def scheduling_weights(intent: Intent) -> list[FieldProblem]:
    """DWRR shares the port by weight, so it needs one; STRICT ignores weights, so one there is
    a misunderstanding worth pointing out."""
    problems = []
    for path, service_class in _classes(intent):
        scheduling = service_class.scheduling
        if scheduling.type is SchedulingType.DWRR and scheduling.weight is None:
            problems.append(FieldProblem(f"{path}.scheduling.weight", "DWRR needs a weight"))
        if scheduling.type is SchedulingType.STRICT and scheduling.weight is not None:
            problems.append(
                FieldProblem(
                    f"{path}.scheduling.weight",
                    "STRICT scheduling takes no weight (strict priority ignores it)",
                )
            )
    return problems


def strict_where_required(intent: Intent) -> list[FieldProblem]:
    """PIAS is a multi-level feedback queue over strict priority (PIAS, NSDI 2015);
    QJUMP levels jump the queue on strict-priority queues (QJUMP, NSDI 2015)."""
    problems = []
    for path, service_class in _classes(intent):
        if service_class.scheduling.type is SchedulingType.STRICT:
            continue
        if service_class.pias is not None:
            problems.append(
                FieldProblem(
                    f"{path}.scheduling.type",
                    "a PIAS class must be STRICT: PIAS demotes flows across strict-priority queues",
                )
            )
        if service_class.qjump_level is not None:
            problems.append(
                FieldProblem(
                    f"{path}.scheduling.type",
                    "a QJUMP class must be STRICT: its packets jump the queue by priority",
                )
            )
    return problems


def ecn_modes(intent: Intent) -> list[FieldProblem]:
    """Per-queue-minimum and MQ-ECN scale K by the class's DWRR share; the agent runs one
    dynamic algorithm per switch (DESIGN.md, SLUICE_AGENT|global)."""
    problems = []
    first_dynamic: tuple[str, EcnMode] | None = None
    for path, service_class in _classes(intent):
        mode = service_class.ecn
        is_dwrr = service_class.scheduling.type is SchedulingType.DWRR
        if mode is EcnMode.MQECN and not is_dwrr:
            reason = "mqecn needs DWRR scheduling: it scales K by the round-robin fair share"
            problems.append(FieldProblem(f"{path}.ecn", reason))
        if mode is EcnMode.PER_QUEUE_MINIMUM and not is_dwrr:
            reason = "per-queue-minimum needs DWRR scheduling: K_i = w_i / sum(w) x K"
            problems.append(FieldProblem(f"{path}.ecn", reason))
        if not mode.is_dynamic:
            continue
        if first_dynamic is None:
            first_dynamic = (path, mode)
        elif first_dynamic[1] is not mode:
            reason = (
                f"{mode.value} conflicts with {first_dynamic[1].value} at {first_dynamic[0]}.ecn: "
                "the switch agent runs one dynamic algorithm for the whole fabric"
            )
            problems.append(FieldProblem(f"{path}.ecn", reason))
    return problems


# ---------------------------------------------------------------------------------------------
# hosts (configured through Ansible: docs/hosts.md)

# Host names that mean something else: /api/v1/hosts/runs lists host runs (a host "runs"
# could not be read there), and Ansible's implicit groups would make `--limit <batch>` select
# every host instead of one.
RESERVED_HOST_NAMES = {
    "runs": "GET /api/v1/hosts/runs lists host runs",
    "exporter-targets": "GET /api/v1/hosts/exporter-targets lists the hosts' exporters",
    "all": "Ansible's group of every host",
    "ungrouped": "an Ansible implicit group",
}


def hosts_reachable_as_root(intent: Intent) -> list[FieldProblem]:
    """The host modules write /proc/sys, tc and nftables: a login other than root needs
    ``become``; and a host name must not collide with the host-run API paths."""
    problems = []
    for i, host in enumerate(intent.hosts):
        if host.ssh.user != "root" and not host.ssh.become:
            reason = (
                f"user {host.ssh.user!r} cannot change sysctls, tc or nftables: log in as root "
                "or set hosts[].ssh.become"
            )
            problems.append(FieldProblem(f"hosts[{i}].ssh.become", reason))
        if host.name in RESERVED_HOST_NAMES:
            reason = f"{host.name!r} is reserved ({RESERVED_HOST_NAMES[host.name]})"
            problems.append(FieldProblem(f"hosts[{i}].name", reason))
    return problems


def hosts_match_distinct(intent: Intent) -> list[FieldProblem]:
    """Hosts mark a packet with the first class whose match selects it, so a class with the
    same match as an earlier one would never be marked."""
    matches = [
        (f"{path}.hosts_match", service_class.hosts_match)
        for path, service_class in _classes(intent)
        if service_class.hosts_match is not None
    ]
    return [
        FieldProblem(path, f"the same match as {first}: the first class wins, this one never")
        for path, _, first in _repeats(matches)
    ]


def hosts_match_ports_need_protocol(intent: Intent) -> list[FieldProblem]:
    """A port only means something within a transport protocol (nftables ``th dport``)."""
    problems = []
    for path, service_class in _classes(intent):
        match = service_class.hosts_match
        if match is None or match.protocol is not None:
            continue
        for key in ("dports", "sports"):
            if getattr(match, key) is not None:
                reason = "ports need a protocol (tcp, udp, sctp or dccp)"
                problems.append(FieldProblem(f"{path}.hosts_match.{key}", reason))
    return problems


def hdcq_layout(intent: Intent) -> list[FieldProblem]:
    """HDCQ's three queues (HDCQ 2021 §3.3.3): Priority 1 (ACKs) is served first, then
    Priority 2 before Priority 3. SONiC serves strict queues by queue index, highest first, so
    ack.queue > queue > long.queue. It is a host-tagging scheme like PIAS, not on top of it;
    the class itself must be STRICT (the ACK queue is strict in either layout)."""
    problems = []
    for path, service_class in _classes(intent):
        hdcq = service_class.hdcq
        if hdcq is None:
            continue
        if service_class.pias is not None:
            problems.append(FieldProblem(f"{path}.hdcq", "a class tags by PIAS or HDCQ, not both"))
        if not hdcq.ack.queue > service_class.queue > hdcq.long.queue:
            reason = (
                f"HDCQ needs ack.queue > queue > long.queue (strict priority serves the higher "
                f"queue first), got {hdcq.ack.queue}, {service_class.queue}, {hdcq.long.queue}"
            )
            problems.append(FieldProblem(f"{path}.hdcq", reason))
        if service_class.scheduling.type is not SchedulingType.STRICT:
            reason = "an HDCQ class must be STRICT: Priority 1 (ACKs) is served first"
            problems.append(FieldProblem(f"{path}.scheduling.type", reason))
        if service_class.hosts_match is None:
            reason = "HDCQ priorities are marked by the hosts: the class needs a hosts_match"
            problems.append(FieldProblem(f"{path}.hdcq", reason))
    return problems


# After ``unique_names`` and ``unique_endpoints`` (which takes the resolver).
RULES: tuple[Rule, ...] = (
    credentials_known,
    dialects_supported,
    addresses_well_formed,
    exporter_addresses,
    known_speeds,
    agent_timing,
    health_thresholds_ordered,
    counter_intervals,
    dscp_used_once,
    queues_not_shared,
    pfc_priorities_once,
    cnp_rides_a_lossy_class,
    scheduling_weights,
    strict_where_required,
    ecn_modes,
    hosts_reachable_as_root,
    hosts_match_distinct,
    hosts_match_ports_need_protocol,
    hdcq_layout,
    *CAPACITY_RULES,
)
