"""Intent to an Ansible inventory with per-host variables in the schema of docs/hosts.md. Pure.

Each host gets:

- ``sluice_ecn``: ``net.ipv4.tcp_ecn`` (and the congestion control, if the fabric names one);
- ``sluice_qjump``: one HTB class per QJUMP level at f_i x P bytes per network epoch
  (QJUMP, NSDI 2015 §3, ``controller.qos.qjump.plan_levels``);
- ``sluice_dscp``: per class with a ``hosts_match``, its first DSCP and, for a QJUMP class, the
  socket priority that selects the level's HTB class;
- ``sluice_pias``: per PIAS class with a ``hosts_match``, the demotion thresholds computed from
  the workload's flow-size CDF and load (``controller.qos.pias.demotion_thresholds``) and the
  DSCP of each stage;
- ``sluice_lossless``: the host's NIC and, per lossless class, its DSCP values, its PFC
  priority and whether DCQCN reacts on it (the class's switch queue marks ECN); with
  ``fabric.lossless.cnp``, the DSCP and priority its NIC sends CNPs with;
- ``sluice_host_exporter``: only with ``fabric.host_exporter``, the exporter on the host's
  address.

``sluice_dscp``, ``sluice_pias`` and ``sluice_lossless`` are always rendered (an empty list
removes what sluice set on the host), so a class dropped from the intent is also dropped from
the hosts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from controller.intent.models import (
    EcnMode,
    Host,
    HostsMatch,
    Intent,
    Pias,
    Qjump,
    ServiceClass,
)
from controller.intent.validate import validate_intent
from controller.qos.pias import demotion_thresholds, load_workload
from controller.qos.pias_chain import chain_thresholds
from controller.qos.qjump import HostLimiter, epoch_seconds, host_limiter, plan_levels
from controller.types import JsonObject

# HTB looks skb->priority up as a class id, and level L lives in class 1:(0x10 + L)
# (docs/hosts.md), so priority 0x10010 + L puts a packet in level L's rate limiter.
QJUMP_PRIORITY_BASE = 0x10010
# Classes whose switch queue marks ECN; their senders must negotiate ECN to benefit.
ECN_MARKING_MODES = frozenset(
    {EcnMode.STANDARD, EcnMode.PER_QUEUE_MINIMUM, EcnMode.MQECN, EcnMode.HDCQ}
)
TCP_ECN_REQUEST = 1  # ask for ECN on outgoing connections
TCP_ECN_LINUX_DEFAULT = 2  # answer ECN, never ask
# tc's own default burst for an HTB class is one timer tick at the rate plus an MTU
# (rate / HZ + mtu, HZ = 1000 here): used for the unmarked level, which QJUMP does not bound.
KERNEL_HZ = 1000


@dataclass(frozen=True, slots=True)
class CompiledHosts:
    """The inventory (YAML-ready) and, per host, the ``sluice_*`` variables in it."""

    inventory: dict[str, Any]
    host_vars: dict[str, JsonObject]

    @property
    def hosts(self) -> list[str]:
        return list(self.host_vars)

    def yaml(self) -> str:
        return yaml.safe_dump(self.inventory, sort_keys=False)


def compile_hosts(intent: Intent, *, group_vars: Mapping[str, Any] | None = None) -> CompiledHosts:
    """The inventory for every host of ``intent`` (validated first: a bad intent raises
    ``IntentInvalid`` and nothing is rendered). ``group_vars`` are the control node's
    connection settings for all hosts (e.g. ``ansible_ssh_common_args``), never per intent."""
    validate_intent(intent)
    all_vars = dict(host_vars(intent, host) for host in intent.hosts)
    hosts = {host.name: {**connection_vars(host), **all_vars[host.name]} for host in intent.hosts}
    inventory = {"all": {"hosts": hosts, "vars": dict(group_vars or {})}}
    return CompiledHosts(inventory=inventory, host_vars=all_vars)


def host_vars(intent: Intent, host: Host) -> tuple[str, JsonObject]:
    """``(name, {sluice_ecn, sluice_qjump?, sluice_dscp, sluice_pias, sluice_lossless,
    sluice_host_exporter?})`` for one host."""
    values: JsonObject = {"sluice_ecn": ecn_vars(intent)}
    qjump = qjump_vars(intent, host)
    if qjump is not None:
        values["sluice_qjump"] = qjump
    values["sluice_dscp"] = dscp_vars(intent)
    values["sluice_pias"] = pias_vars(intent)
    values["sluice_lossless"] = lossless_vars(intent, host)
    exporter = exporter_vars(intent, host)
    if exporter is not None:
        values["sluice_host_exporter"] = exporter
    return host.name, values


def lossless_vars(intent: Intent, host: Host) -> JsonObject:
    """``sluice_lossless`` (docs/hosts.md): what the host's NIC needs for each lossless class,
    the same DSCP and priority the switches pause (docs/lossless.md). The NIC trusts DSCP, as
    the switches classify by it. DCQCN's reaction and notification points are on where the
    class's queue marks ECN; a lossless class with ``ecn: off`` has no marks to react to.
    ``cnp``: what the NIC sends CNPs with, where the fabric declares it
    (``fabric.lossless.cnp``, the DSCP the switches put in a lossy class)."""
    classes: list[JsonObject] = [
        {
            "name": c.name,
            "dscp": list(c.dscp),
            "pfc_priority": c.lossless.pfc_priority,
            "dcqcn": c.dcqcn is not None,
        }
        for c in intent.service_classes
        if c.lossless is not None
    ]
    out: JsonObject = {"device": host.device, "trust": "dscp", "classes": classes}
    cnp = intent.fabric.lossless.cnp if intent.fabric.lossless is not None else None
    if cnp is not None and classes:
        out["cnp"] = {"dscp": cnp.dscp, "priority": cnp.priority}
    return out


def exporter_vars(intent: Intent, host: Host) -> JsonObject | None:
    """``sluice_host_exporter`` (docs/hosts.md): on the host's address, or None when the
    fabric runs no exporter."""
    exporter = intent.fabric.host_exporter
    if exporter is None:
        return None
    return {
        "listen_address": host.address,
        "port": exporter.port,
        "fan_in_window_ms": exporter.fan_in_window_ms,
        "reap_interval_s": exporter.reap_interval_s,
        "mtu_bytes": intent.fabric.mtu_bytes,
    }


def exporter_targets(intent: Intent) -> list[JsonObject]:
    """The hosts' exporters as Prometheus service-discovery target groups (the file_sd and
    http_sd format): one group per host, labelled with its name."""
    exporter = intent.fabric.host_exporter
    if exporter is None:
        return []
    return [
        {"targets": [_target(host.address, exporter.port)], "labels": {"host": host.name}}
        for host in intent.hosts
    ]


def _target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def connection_vars(host: Host) -> JsonObject:
    """How Ansible reaches the host; the interpreter is always named (never discovered)."""
    values: JsonObject = {
        "ansible_host": host.address,
        "ansible_port": host.ssh.port,
        "ansible_user": host.ssh.user,
        "ansible_python_interpreter": host.python,
    }
    if host.ssh.key_ref is not None:
        values["ansible_ssh_private_key_file"] = host.ssh.key_ref.removeprefix("file:")
    if host.ssh.become:
        values["ansible_become"] = True
    return values


def ecn_vars(intent: Intent) -> JsonObject:
    transport = intent.fabric.host_transport
    tcp_ecn = transport.tcp_ecn
    if tcp_ecn is None:
        marks = any(c.ecn in ECN_MARKING_MODES for c in intent.service_classes)
        tcp_ecn = TCP_ECN_REQUEST if marks else TCP_ECN_LINUX_DEFAULT
    values: JsonObject = {"tcp_ecn": tcp_ecn}
    if transport.congestion_control is not None:
        values["congestion_control"] = transport.congestion_control
    return values


def qjump_vars(intent: Intent, host: Host) -> JsonObject | None:
    """The HTB levels for ``host``, or None when the fabric runs no QJUMP.

    R in the epoch 2nP/R + eps is the slowest edge link of the fabric (QJUMP, NSDI 2015
    §3.1, Eq. 1-2; §4 "R, the rate of the slowest edge link"), the same R validation checks
    the levels against: every host must use one epoch, or a fast host would send more per
    epoch than the bound assumes. The host's own NIC rate is its HTB line rate.
    """
    qjump = intent.fabric.qjump
    if qjump is None:
        return None
    fabric_rate_bps = min(h.nic_gbps for h in intent.hosts) * 1e9
    line_rate_bps = host.nic_gbps * 10**9
    epsilon_s = qjump.epsilon_us * 1e-6
    planned = plan_levels(
        qjump.hosts, qjump.packet_bytes, fabric_rate_bps, epsilon_s, qjump.factors
    )
    epoch_s = epoch_seconds(qjump.hosts, qjump.packet_bytes, fabric_rate_bps, epsilon_s)
    jitter_s = qjump.release_jitter_us * 1e-6
    levels = [
        _bounded_level(
            p.level, host_limiter(p, qjump.packet_bytes, epoch_s, qjump.window, jitter_s)
        )
        for p in planned
    ]
    if 0 not in qjump.factors:
        levels.insert(0, _unbounded_level(line_rate_bps, intent.fabric.mtu_bytes))
    return {
        "device": host.device,
        "line_rate_bps": line_rate_bps,
        "default_level": 0,
        # P: every bounded level gets an exact tbf limiter passing packets of at most P bytes
        "packet_bytes": qjump.packet_bytes,
        "levels": levels,
    }


def _bounded_level(level: int, limiter: HostLimiter) -> JsonObject:
    """A bounded level's ``sluice_qjump`` entry; ``queue_packets`` and ``mpu_bytes`` (every
    packet charged as P, queued by count) only where the fabric's window sets them
    (``sliding``), else the host's default queue (the bucket in bytes, at least P) and
    packets charged their length."""
    entry: JsonObject = {
        "level": level,
        "rate_bps": limiter.rate_bps,
        "burst_bytes": limiter.bucket_bytes,
    }
    if limiter.queue_bytes is not None:
        entry["queue_bytes"] = limiter.queue_bytes
    if limiter.queue_packets is not None:
        entry["queue_packets"] = limiter.queue_packets
    if limiter.charge_bytes is not None:
        entry["mpu_bytes"] = limiter.charge_bytes
    return entry


def _unbounded_level(line_rate_bps: int, mtu_bytes: int) -> JsonObject:
    """Level 0 for unmarked traffic when the intent gives it no factor: the paper's
    maximum-throughput level (f = n, "full network throughput", §3.2) at the line rate, so
    traffic that asked for no level is not slowed by a bounded one."""
    burst = math.ceil(line_rate_bps / 8 / KERNEL_HZ) + mtu_bytes
    return {"level": 0, "rate_bps": line_rate_bps, "burst_bytes": burst}


def epoch_us(qjump: Qjump, slowest_nic_gbps: int) -> float:
    """The network epoch in microseconds (for reports): 2nP/R + eps."""
    seconds = epoch_seconds(
        qjump.hosts, qjump.packet_bytes, slowest_nic_gbps * 1e9, qjump.epsilon_us * 1e-6
    )
    return seconds * 1e6


def match_vars(match: HostsMatch) -> JsonObject:
    """The ``match`` mapping of docs/hosts.md: only the keys the intent gives."""
    data = match.model_dump(mode="json", exclude_none=True)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


def _marked(intent: Intent) -> list[tuple[ServiceClass, HostsMatch]]:
    return [(c, c.hosts_match) for c in intent.service_classes if c.hosts_match is not None]


def dscp_vars(intent: Intent) -> list[JsonObject]:
    """One entry per class the hosts mark, in intent order (the first match wins)."""
    entries: list[JsonObject] = []
    for service_class, match in _marked(intent):
        entry: JsonObject = {"name": service_class.name, "dscp": service_class.dscp[0]}
        if service_class.qjump_level is not None:
            entry["priority"] = QJUMP_PRIORITY_BASE + service_class.qjump_level
            if intent.fabric.qjump is not None:
                # the level's TCP MSS is clamped so no packet exceeds P (docs/hosts.md)
                entry["max_packet_bytes"] = intent.fabric.qjump.packet_bytes
        entry["match"] = match_vars(match)
        entries.append(entry)
    return entries


def pias_vars(intent: Intent) -> list[JsonObject]:
    """One entry per PIAS class the hosts mark: stage 0 is the class's first DSCP, stage k
    the k-th demotion's; K = stages queues give K - 1 thresholds."""
    entries: list[JsonObject] = []
    for service_class, match in _marked(intent):
        if service_class.hdcq is not None:
            entries.append(hdcq_entry(service_class, match))
        pias = service_class.pias
        if pias is None:
            continue
        thresholds = pias_thresholds(pias)
        stages = [service_class.dscp[0], *(stage.dscp for stage in pias.demotions)]
        entries.append(
            {
                "name": service_class.name,
                "thresholds_bytes": thresholds,
                "dscp": stages,
                "match": match_vars(match),
            }
        )
    return entries


def pias_thresholds(pias: Pias) -> list[int]:
    """The demotion thresholds the hosts run: ``thresholds_bytes`` when the intent gives them
    (the tuner writes them, docs/tuning.md), else derived from the workload and load."""
    if pias.thresholds_bytes is not None:
        return list(pias.thresholds_bytes)
    derive = chain_thresholds if pias.derivation == "mm1_chain" else demotion_thresholds
    return derive(load_workload(pias.workload.value), pias.load, len(pias.demotions) + 1)


def hdcq_entry(service_class: ServiceClass, match: HostsMatch) -> JsonObject:
    """HDCQ's host tagging as a PIAS-table entry (HDCQ 2021 §3.3.1, Algorithm 1): one
    threshold, flow_type_thresh; the class's DSCP below it (Priority 2), ``long`` above it
    (Priority 3), and ``ack_dscp`` on pure ACKs whatever the count (Priority 1)."""
    hdcq = service_class.hdcq
    assert hdcq is not None  # the caller checked
    return {
        "name": service_class.name,
        "thresholds_bytes": [hdcq.flow_type_thresh_bytes],
        "dscp": [service_class.dscp[0], hdcq.long.dscp],
        "ack_dscp": hdcq.ack.dscp,
        "match": match_vars(match),
    }
