# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sluice-host-exporter: what only a host sees, as Prometheus metrics (sluice docs/tuning.md,
"How hosts report what the switches cannot see"; docs/hosts.md, ``sluice_host_exporter``).

- ``sluice_host_flow_size_bytes`` (histogram; ``host``, ``class``): one observation per
  finished connection, read from conntrack's events on a netfilter netlink socket: a TCP
  connection when conntrack sees it end (TIME_WAIT or CLOSE, an update event; its byte
  counters, which updates do not carry, are then asked for), any other when its entry is
  destroyed (the DESTROY event carries them; ``nf_conntrack_acct``). The size is the connection's
  larger direction (bytes including IP headers, the unit PIAS thresholds are compared with),
  observed by the host that sent that direction, so each connection is counted once across
  the fabric. The class is the low byte of the ct mark the hosts' DSCP rules set.
- ``sluice_host_flow_completion_seconds`` (histogram; ``host``, ``class``, ``size``): for the
  same TCP connections, observed when they end, the time from their conntrack entry's start
  (the first packet, ``nf_conntrack_timestamp``) to the end the exporter read; ``size`` is
  ``small`` (up to 100 kB), ``medium`` (up to 10 MB) or ``large``, the bands small-flow FCT
  is reported in (HDCQ, Information 2021, §5). Connections seen only at their DESTROY event
  (UDP, or a TCP entry already gone) have no end time (their entry outlived them by a timeout)
  and are left out.
- ``sluice_host_flow_events_lost_total``: events the kernel dropped (ENOBUFS on the socket).
- ``sluice_host_qjump_fan_in`` (gauge; ``host``, ``level``): the most distinct senders seen at
  the level within one sampling window since the last scrape, from an nftables set per level
  whose elements time out after that window.
- ``sluice_host_qjump_max_packet_bytes`` (gauge; ``host``, ``level``): the top of the largest
  64-byte length band whose counter grew since the last scrape.

Standard library only (the managed host needs nothing but Python 3.10+). ``supervise`` runs
the exporter as a child and restarts it when it exits; ``run`` is the exporter itself.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --- netlink constants (linux/netlink.h, linux/netfilter/nfnetlink*.h) -----------------------
NETLINK_NETFILTER = 12
NLMSG_HEADER = struct.Struct("=IHHII")  # len, type, flags, seq, pid
NFGEN_HEADER = struct.Struct("=BBH")  # family, version, res_id (big endian, unused)
NLA_HEADER = struct.Struct("=HH")
NLA_TYPE_MASK = 0x3FFF  # strips NLA_F_NESTED and NLA_F_NET_BYTEORDER
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLA_F_NESTED = 0x8000
NFNLGRP_CONNTRACK_UPDATE, NFNLGRP_CONNTRACK_DESTROY = 2, 3
NFNL_SUBSYS_CTNETLINK, NFNL_SUBSYS_NFTABLES = 1, 10
IPCTNL_MSG_CT_NEW, IPCTNL_MSG_CT_GET, IPCTNL_MSG_CT_DELETE = 0, 1, 2
NFT_MSG_GETSETELEM = 13
NFPROTO_INET = 1
# ctnetlink attributes (linux/netfilter/nfnetlink_conntrack.h)
CTA_TUPLE_ORIG, CTA_PROTOINFO, CTA_MARK, CTA_COUNTERS_ORIG, CTA_COUNTERS_REPLY = 1, 4, 8, 9, 10
CTA_ID, CTA_ZONE, CTA_TIMESTAMP, CTA_MARK_MASK = 12, 18, 20, 21
CTA_TIMESTAMP_START = 1  # ns since the epoch (the kernel's real clock), when the entry began
CTA_PROTOINFO_TCP, CTA_PROTOINFO_TCP_STATE = 1, 1
# enum tcp_conntrack (linux/netfilter/nf_conntrack_tcp.h): both FINs acknowledged, or reset
TCP_CONNTRACK_TIME_WAIT, TCP_CONNTRACK_CLOSE = 7, 8
CTA_TUPLE_IP = 1
CTA_IP_V4_SRC, CTA_IP_V6_SRC = 1, 3
CTA_COUNTERS_BYTES = 2
# nf_tables set element dumps (linux/netfilter/nf_tables.h)
NFTA_SET_ELEM_LIST_TABLE, NFTA_SET_ELEM_LIST_SET, NFTA_SET_ELEM_LIST_ELEMENTS = 1, 2, 3

CLASS_MARK_MASK = 0xFF  # the DSCP rules keep the class index in the ct mark's low byte
BAND_BYTES = 64
RECV_BUFFER = 4 * 1024 * 1024
SO_RCVBUFFORCE = 33  # asm-generic/socket.h; not in Python's socket module everywhere
# Flow-size buckets: 1 kB x 2^k up to about 1 GB (docs/tuning.md).
FLOW_BUCKETS = tuple(1000 * 2**k for k in range(21))
# Completion-time buckets: 50 us x 2^k up to about 105 s.
FCT_BUCKETS = tuple(50e-6 * 2**k for k in range(22))
# Size bands of the completion times (bytes, inclusive upper bounds; the last is open).
SIZE_BANDS = (("small", 100_000), ("medium", 10_000_000), ("large", None))


# --- netlink parsing (pure) -----------------------------------------------------------------
def attributes(data: bytes) -> dict[int, bytes]:
    """A netlink attribute stream as {type: payload}; the last one of a type wins."""
    found: dict[int, bytes] = {}
    offset = 0
    while offset + NLA_HEADER.size <= len(data):
        length, kind = NLA_HEADER.unpack_from(data, offset)
        if length < NLA_HEADER.size:
            break
        found[kind & NLA_TYPE_MASK] = data[offset + NLA_HEADER.size : offset + length]
        offset += (length + 3) & ~3
    return found


def messages(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(type, payload after the netlink header) for each message in one datagram."""
    offset = 0
    while offset + NLMSG_HEADER.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSG_HEADER.unpack_from(data, offset)
        if length < NLMSG_HEADER.size:
            break
        yield kind, data[offset + NLMSG_HEADER.size : offset + length]
        offset += (length + 3) & ~3


@dataclass(frozen=True)
class FinishedFlow:
    """One finished conntrack entry: who opened it, bytes each way, its mark, when it began."""

    source: str  # the original direction's source address
    original_bytes: int
    reply_bytes: int
    mark: int
    started_ns: int | None = None  # CTA_TIMESTAMP_START; None without nf_conntrack_timestamp


def _counter_bytes(raw: bytes | None) -> int:
    if raw is None:
        return 0
    value = attributes(raw).get(CTA_COUNTERS_BYTES)
    return int.from_bytes(value, "big") if value else 0


def parse_flow(payload: bytes) -> FinishedFlow | None:
    """A ctnetlink conntrack message (after the netlink header: a DESTROY event, or the
    answer to a GET) to a FinishedFlow; None when it carries no counters (accounting off) or
    no IP tuple."""
    top = attributes(payload[NFGEN_HEADER.size :])
    if CTA_COUNTERS_ORIG not in top or CTA_TUPLE_ORIG not in top:
        return None
    tuple_ip = attributes(attributes(top[CTA_TUPLE_ORIG]).get(CTA_TUPLE_IP, b""))
    if CTA_IP_V4_SRC in tuple_ip:
        source = socket.inet_ntop(socket.AF_INET, tuple_ip[CTA_IP_V4_SRC])
    elif CTA_IP_V6_SRC in tuple_ip:
        source = socket.inet_ntop(socket.AF_INET6, tuple_ip[CTA_IP_V6_SRC])
    else:
        return None
    mark = int.from_bytes(top[CTA_MARK], "big") if CTA_MARK in top else 0
    start = attributes(top.get(CTA_TIMESTAMP, b"")).get(CTA_TIMESTAMP_START)
    return FinishedFlow(
        source,
        _counter_bytes(top.get(CTA_COUNTERS_ORIG)),
        _counter_bytes(top.get(CTA_COUNTERS_REPLY)),
        mark,
        int.from_bytes(start, "big") if start else None,
    )


@dataclass(frozen=True)
class TcpEnd:
    """An update event saying a TCP connection ended: its conntrack id and what a GET for
    the entry needs (the family, the original tuple and zone as the event gave them)."""

    conntrack_id: int
    family: int
    lookup: bytes  # CTA_TUPLE_ORIG (and CTA_ZONE), whole attributes


def parse_tcp_end(payload: bytes) -> TcpEnd | None:
    """A ctnetlink update event whose TCP state became TIME_WAIT or CLOSE (the connection is
    over: both FINs acknowledged, or a reset), else None."""
    top = attributes(payload[NFGEN_HEADER.size :])
    tcp = attributes(attributes(top.get(CTA_PROTOINFO, b"")).get(CTA_PROTOINFO_TCP, b""))
    state = tcp.get(CTA_PROTOINFO_TCP_STATE)
    if not state or state[0] not in (TCP_CONNTRACK_TIME_WAIT, TCP_CONNTRACK_CLOSE):
        return None
    if CTA_ID not in top or CTA_TUPLE_ORIG not in top:
        return None
    lookup = _nla(CTA_TUPLE_ORIG | NLA_F_NESTED, top[CTA_TUPLE_ORIG])
    if CTA_ZONE in top:
        lookup += _nla(CTA_ZONE, top[CTA_ZONE])
    return TcpEnd(int.from_bytes(top[CTA_ID], "big"), payload[0], lookup)


def conntrack_id(payload: bytes) -> int | None:
    raw = attributes(payload[NFGEN_HEADER.size :]).get(CTA_ID)
    return int.from_bytes(raw, "big") if raw else None


def _nla(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    return (
        NLA_HEADER.pack(NLA_HEADER.size + len(payload), kind)
        + payload
        + b"\0" * (-len(payload) % 4)
    )


def get_request(end: TcpEnd, seq: int) -> bytes:
    """A ctnetlink GET for the entry ``end`` names (the kernel answers with its counters)."""
    body = NFGEN_HEADER.pack(end.family, 0, 0) + end.lookup
    kind = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET
    flags = NLM_F_REQUEST | NLM_F_ACK
    return NLMSG_HEADER.pack(NLMSG_HEADER.size + len(body), kind, flags, seq, 0) + body


class Reported:
    """The conntrack ids of connections already reported at their end, so their DESTROY
    event, up to TIME_WAIT later, is not counted again. Bounded: past ``limit`` the oldest
    are forgotten (an entry lives at most TIME_WAIT after its end)."""

    def __init__(self, limit: int = 65536) -> None:
        self._ids: dict[int, None] = {}
        self._limit = limit

    def add(self, conntrack: int) -> None:
        self._ids[conntrack] = None
        if len(self._ids) > self._limit:
            del self._ids[next(iter(self._ids))]

    def take(self, conntrack: int | None) -> bool:
        """Whether ``conntrack`` was reported (and forget it: its entry is gone)."""
        if conntrack is None or conntrack not in self._ids:
            return False
        del self._ids[conntrack]
        return True


def sent_size(flow: FinishedFlow, opened_here: bool) -> int | None:
    """The connection's size if this host sent its larger direction, else None (the peer
    reports it). Ties go to the host that opened it."""
    if flow.original_bytes >= flow.reply_bytes:
        return flow.original_bytes if opened_here else None
    return None if opened_here else flow.reply_bytes


def size_band(size: int) -> str:
    """``small``, ``medium`` or ``large`` (``SIZE_BANDS``)."""
    for name, bound in SIZE_BANDS:
        if bound is None or size <= bound:
            return name
    return SIZE_BANDS[-1][0]


def completion_s(flow: FinishedFlow, ended_ns: int) -> float | None:
    """Seconds from the entry's start to ``ended_ns`` (the same real clock); None without a
    start, or if the clock stepped back past it."""
    if flow.started_ns is None or ended_ns < flow.started_ns:
        return None
    return (ended_ns - flow.started_ns) / 1e9


def class_of(mark: int, classes: list[str]) -> str:
    """The class the DSCP rules named in the mark (index + 1), or "" for none."""
    index = mark & CLASS_MARK_MASK
    return classes[index - 1] if 0 < index <= len(classes) else ""


def band_top(band: int, protocol_tcp: bool, packet_cap: int | None, mtu: int) -> int:
    """The largest packet a length band stands for. nftables sees a TCP GSO super-packet
    whole; its segments are at most the clamped MSS (P) or the MTU, so TCP bands above that
    stand for packets of that size. A non-TCP packet is as long as it is (up to the MTU)."""
    top = (band + 1) * BAND_BYTES
    if protocol_tcp and packet_cap is not None:
        return min(top, packet_cap)
    return min(top, mtu)


def render_bucket_line(name: str, labels: str, le: str, value: int) -> str:
    return f'{name}_bucket{{{labels},le="{le}"}} {value}'


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# --- state (shared between the reader threads and the HTTP handler) -------------------------
@dataclass
class Histogram:
    bounds: tuple[float, ...] = FLOW_BUCKETS
    buckets: list[int] = field(default_factory=list)
    count: int = 0
    total: float = 0

    def __post_init__(self) -> None:
        self.buckets = self.buckets or [0] * len(self.bounds)

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.buckets[index] += 1

    def lines(self, name: str, labels: str) -> list[str]:
        """The histogram's samples in the text format (bounds as Python writes them)."""
        found = [
            render_bucket_line(name, labels, _number(bound), count)
            for bound, count in zip(self.bounds, self.buckets, strict=True)
        ]
        found.append(render_bucket_line(name, labels, "+Inf", self.count))
        found.append(f"{name}_count{{{labels}}} {self.count}")
        found.append(f"{name}_sum{{{labels}}} {_number(self.total)}")
        return found


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


@dataclass
class LevelState:
    fan_in_max: int = 0
    band_counts: dict[tuple[bool, int], int] = field(default_factory=dict)  # (tcp, band): packets


@dataclass
class Exporter:
    """Everything the metrics page shows; one lock around it."""

    host: str
    classes: list[str]
    levels: dict[int, dict[str, Any]]
    mtu: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    flows: dict[str, Histogram] = field(default_factory=dict)
    completions: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    lost: int = 0
    events: int = 0
    level_state: dict[int, LevelState] = field(default_factory=dict)
    restarts: int = 0

    def __post_init__(self) -> None:
        # Every class's series from the start at zero: Prometheus' increase() counts nothing
        # for a series' first sample, so one born at its first flow would lose that flow.
        for klass in self.classes:
            self.flows.setdefault(klass, Histogram())
            for band, _bound in SIZE_BANDS:
                self.completions.setdefault((klass, band), Histogram(FCT_BUCKETS))

    def record_flow(self, klass: str, size: int, completion: float | None = None) -> None:
        with self.lock:
            self.flows.setdefault(klass, Histogram()).observe(size)
            if completion is not None:
                key = (klass, size_band(size))
                self.completions.setdefault(key, Histogram(FCT_BUCKETS)).observe(completion)

    def render(self, bands: dict[int, dict[tuple[bool, int], int]]) -> str:
        """The exposition; the per-scrape gauges (fan-in, largest packet) restart here."""
        host = _escape(self.host)
        lines = [
            "# HELP sluice_host_flow_size_bytes Finished connections by larger direction's bytes.",
            "# TYPE sluice_host_flow_size_bytes histogram",
        ]
        with self.lock:
            for klass, hist in sorted(self.flows.items()):
                labels = f'host="{host}",class="{_escape(klass)}"'
                lines += hist.lines("sluice_host_flow_size_bytes", labels)
            lines += [
                "# HELP sluice_host_flow_completion_seconds Finished TCP connections' durations.",
                "# TYPE sluice_host_flow_completion_seconds histogram",
            ]
            for (klass, band), hist in sorted(self.completions.items()):
                labels = f'host="{host}",class="{_escape(klass)}",size="{band}"'
                lines += hist.lines("sluice_host_flow_completion_seconds", labels)
            lines += [
                "# HELP sluice_host_flow_events_lost_total Conntrack events lost (ENOBUFS).",
                "# TYPE sluice_host_flow_events_lost_total counter",
                f'sluice_host_flow_events_lost_total{{host="{host}"}} {self.lost}',
                "# HELP sluice_host_flow_events_total Connection ends read from conntrack.",
                "# TYPE sluice_host_flow_events_total counter",
                f'sluice_host_flow_events_total{{host="{host}"}} {self.events}',
                "# HELP sluice_host_exporter_restarts_total Times the supervisor restarted it.",
                "# TYPE sluice_host_exporter_restarts_total counter",
                f'sluice_host_exporter_restarts_total{{host="{host}"}} {self.restarts}',
            ]
            fan_in, packets = self._per_level(bands)
        lines += [
            "# HELP sluice_host_qjump_fan_in Most distinct senders at a level in one window.",
            "# TYPE sluice_host_qjump_fan_in gauge",
            *(f'sluice_host_qjump_fan_in{{host="{host}",level="{lv}"}} {v}' for lv, v in fan_in),
            "# HELP sluice_host_qjump_max_packet_bytes Largest packet sent at a level.",
            "# TYPE sluice_host_qjump_max_packet_bytes gauge",
            *(
                f'sluice_host_qjump_max_packet_bytes{{host="{host}",level="{lv}"}} {v}'
                for lv, v in packets
            ),
        ]
        return "\n".join(lines) + "\n"

    def _per_level(
        self, bands: dict[int, dict[tuple[bool, int], int]]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Per level: the fan-in maximum since the last scrape, and the largest band that
        grew since then (0 when nothing was sent); both restart for the next scrape."""
        fan_in: list[tuple[int, int]] = []
        packets: list[tuple[int, int]] = []
        for level in sorted(self.levels):
            state = self.level_state.setdefault(level, LevelState())
            if self.watches_senders(level):
                fan_in.append((level, state.fan_in_max))
            state.fan_in_max = 0
            now = bands.get(level, {})
            # a count below the last one: the table was reloaded (counters from zero)
            grown = [key for key, n in now.items() if n and n != state.band_counts.get(key, 0)]
            cap = self.levels[level].get("packet_bytes")
            tops = [band_top(band, tcp, cap, self.mtu) for tcp, band in grown]
            packets.append((level, max(tops, default=0)))
            state.band_counts = dict(now)
        return fan_in, packets

    def watches_senders(self, level: int) -> bool:
        """A level no class marks with a DSCP has no input rule: nothing to count there."""
        return bool(self.levels[level].get("dscp"))

    def prime(self, bands: dict[int, dict[tuple[bool, int], int]]) -> None:
        """Start from the counters as they are: what was sent before this process started
        (the table outlives a restart) is no packet of the first scrape."""
        with self.lock:
            for level in self.levels:
                self.level_state.setdefault(level, LevelState()).band_counts = bands.get(level, {})

    def record_fan_in(self, level: int, senders: int) -> None:
        with self.lock:
            state = self.level_state.setdefault(level, LevelState())
            state.fan_in_max = max(state.fan_in_max, senders)


# --- I/O: conntrack events ------------------------------------------------------------------
class LocalAddresses:
    """Whether an address is this host's: bind() succeeds only on a local address. Cached,
    and forgotten now and then so a changed address is noticed."""

    def __init__(self, limit: int = 4096) -> None:
        self._known: dict[str, bool] = {}
        self._limit = limit

    def __contains__(self, address: str) -> bool:
        if address not in self._known:
            if len(self._known) >= self._limit:
                self._known.clear()
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                try:
                    probe.bind((address, 0))
                    self._known[address] = True
                except OSError:
                    self._known[address] = False
        return self._known[address]


def conntrack_socket() -> socket.socket:
    events = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    try:  # root may go past net.core.rmem_max (CAP_NET_ADMIN); a burst of ends needs room
        events.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECV_BUFFER)
    except OSError:
        events.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
    groups = (1 << (NFNLGRP_CONNTRACK_UPDATE - 1)) | (1 << (NFNLGRP_CONNTRACK_DESTROY - 1))
    events.bind((0, groups))
    return events


def read_conntrack_events(exporter: Exporter, events: socket.socket) -> None:
    """Forever: each connection that ended becomes one flow observation (or none, see
    sent_size): a TCP one at its TIME_WAIT or CLOSE update (its counters asked for with a
    GET), any other at its DESTROY event; a DESTROY of one already reported is skipped."""
    local = LocalAddresses()
    reported = Reported()
    update = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW
    destroy = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE
    seq = 0
    while True:
        try:
            data = events.recv(65536)
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:  # the kernel dropped events: count, carry on
                with exporter.lock:
                    exporter.lost += 1
                continue
            raise
        ended_ns = time.time_ns()  # the ends this datagram reports were read now
        for kind, payload in messages(data):
            flow = None
            if kind == destroy and not reported.take(conntrack_id(payload)):
                flow = parse_flow(payload)
            elif kind == update and (end := parse_tcp_end(payload)) is not None:
                seq += 1
                flow = ended_flow(end, seq)
                if flow is not None:
                    reported.add(end.conntrack_id)
            if flow is None:
                continue
            with exporter.lock:
                exporter.events += 1
            size = sent_size(flow, flow.source in local)
            if size is not None:
                completion = completion_s(flow, ended_ns) if kind == update else None
                exporter.record_flow(class_of(flow.mark, exporter.classes), size, completion)


def ended_flow(end: TcpEnd, seq: int) -> FinishedFlow | None:
    """The ended connection's entry with its counters; None when it is already gone (its
    DESTROY event, read next, reports it) or has no counters."""
    try:
        answers = _request(get_request(end, seq))
    except OSError:
        return None
    for _kind, payload in answers:
        return parse_flow(payload)
    return None


def reap_request(seq: int) -> bytes:
    """A conntrack dump filtered on a mark nothing carries: the kernel evicts every expired
    entry it walks past (emitting its DESTROY event) and sends back nothing else. Without it
    an expired entry waits for conntrack's garbage collector, up to a minute."""
    body = NFGEN_HEADER.pack(socket.AF_UNSPEC, 0, 0)
    for kind in (CTA_MARK, CTA_MARK_MASK):
        body += NLA_HEADER.pack(8, kind) + struct.pack(">I", 0xFFFFFFFF)
    kind = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET
    header = NLMSG_HEADER.pack(
        NLMSG_HEADER.size + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, seq, 0
    )
    return header + body


def _request(request: bytes) -> list[tuple[int, bytes]]:
    """Send one ctnetlink or nf_tables request; its answers up to the done or ack message."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER) as channel:
        channel.settimeout(5)
        channel.bind((0, 0))
        channel.send(request)
        replies: list[tuple[int, bytes]] = []
        while True:
            for kind, payload in messages(channel.recv(1 << 20)):
                if kind == NLMSG_DONE:
                    return replies
                if kind == NLMSG_ERROR:
                    code = struct.unpack_from("=i", payload)[0]
                    if code != 0:
                        raise OSError(-code, os.strerror(-code))
                    return replies
                replies.append((kind, payload))


def reap_expired(interval_s: float) -> None:
    seq = 0
    while True:
        time.sleep(interval_s)
        seq += 1
        with contextlib.suppress(OSError):
            _request(reap_request(seq))


# --- I/O: nftables sets and counters --------------------------------------------------------
def _nla_string(kind: int, text: str) -> bytes:
    return _nla(kind, text.encode() + b"\0")


def set_size(table: str, name: str, seq: int) -> int:
    """How many live elements the set holds (expired ones are not dumped)."""
    body = NFGEN_HEADER.pack(NFPROTO_INET, 0, 0)
    body += _nla_string(NFTA_SET_ELEM_LIST_TABLE, table) + _nla_string(NFTA_SET_ELEM_LIST_SET, name)
    kind = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM
    header = NLMSG_HEADER.pack(
        NLMSG_HEADER.size + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, seq, 0
    )
    total = 0
    for _kind, payload in _request(header + body):
        elements = attributes(payload[NFGEN_HEADER.size :]).get(NFTA_SET_ELEM_LIST_ELEMENTS, b"")
        offset = 0
        while offset + NLA_HEADER.size <= len(elements):
            length = NLA_HEADER.unpack_from(elements, offset)[0]
            total += 1
            offset += max((length + 3) & ~3, NLA_HEADER.size)
    return total


def sample_fan_in(exporter: Exporter, table: str, window_s: float) -> None:
    """Every window: per level, the senders its sets hold (each element lives one window)."""
    seq = 0
    while True:
        time.sleep(window_s)
        for level in [lv for lv in exporter.levels if exporter.watches_senders(lv)]:
            senders = 0
            for family in ("v4", "v6"):
                seq += 1
                with contextlib.suppress(OSError):
                    senders += set_size(table, f"l{level}_senders_{family}", seq)
            exporter.record_fan_in(level, senders)


def read_bands(table: str) -> dict[int, dict[tuple[bool, int], int]]:
    """Per level, packets per (tcp, band) from the table's named counters
    (``l<level>_<tcp|other>_<band>``)."""
    done = subprocess.run(
        ["nft", "-j", "list", "counters", "table", "inet", table],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    bands: dict[int, dict[tuple[bool, int], int]] = {}
    if done.returncode != 0:
        return bands
    for item in json.loads(done.stdout).get("nftables", []):
        counter = item.get("counter")
        if not counter or not counter["name"].startswith("l"):
            continue
        level, kind, band = counter["name"][1:].split("_")
        if counter["packets"]:
            bands.setdefault(int(level), {})[(kind == "tcp", int(band))] = counter["packets"]
    return bands


# --- the HTTP side --------------------------------------------------------------------------
def serve(exporter: Exporter, address: str, port: int, table: str) -> ThreadingHTTPServer:
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = exporter.render(read_bands(table)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    class Server(ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

    return Server((address, port), Metrics)


def run(config_path: str) -> None:
    with open(config_path) as handle:
        config = json.load(handle)
    exporter = Exporter(
        host=config["host"],
        classes=list(config["classes"]),
        levels={int(level["level"]): level for level in config["levels"]},
        mtu=int(config.get("mtu_bytes", 1500)),
        restarts=int(os.environ.get("SLUICE_EXPORTER_RESTARTS", "0")),
    )
    table = config["table"]
    exporter.prime(read_bands(table))
    events = conntrack_socket()  # before serving: no flow finishes unseen once we answer
    server = serve(exporter, config["listen_address"], int(config["port"]), table)
    workers = [
        threading.Thread(target=read_conntrack_events, args=(exporter, events), daemon=True),
        threading.Thread(target=reap_expired, args=(config["reap_interval_s"],), daemon=True),
        threading.Thread(
            target=sample_fan_in,
            args=(exporter, table, config["fan_in_window_ms"] / 1000),
            daemon=True,
        ),
    ]
    for worker in workers:
        worker.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


def detach(log_path: str) -> None:
    """Carry on in a new session with stdio on the log; the caller (the Ansible module) gets
    its exit status at once and the supervisor outlives the SSH connection."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)


def supervise(config_path: str, pidfile: str) -> None:
    """Run the exporter as a child and start it again when it exits (1 s apart, so a broken
    config does not spin); SIGTERM stops both."""
    stopping = threading.Event()
    children: list[subprocess.Popen[bytes]] = []

    def stop(*_: Any) -> None:
        # Only signal here: the main thread is inside the child's wait(), holding the lock a
        # second wait() would spin on; it returns once the child is gone.
        stopping.set()
        if children:
            with contextlib.suppress(ProcessLookupError):
                children[-1].terminate()

    signal.signal(signal.SIGTERM, stop)
    with open(pidfile, "w") as handle:
        handle.write(f"{os.getpid()}\n")
    restarts = 0
    while not stopping.is_set():
        env = {**os.environ, "SLUICE_EXPORTER_RESTARTS": str(restarts)}
        children[:] = [subprocess.Popen([sys.executable, __file__, "run", config_path], env=env)]
        if stopping.is_set():  # SIGTERM came while it was starting
            children[0].terminate()
        children[0].wait()
        if stopping.wait(1.0):
            break
        restarts += 1
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pidfile)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sluice-host-exporter")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="the exporter itself")
    run_parser.add_argument("config")
    sup = sub.add_parser("supervise", help="run the exporter, restart it when it exits")
    sup.add_argument("config")
    sup.add_argument("--pidfile", required=True)
    sup.add_argument("--detach-log", help="detach into a new session, stdio on this file")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.config)
        return
    if args.detach_log:
        detach(args.detach_log)
    supervise(args.config, args.pidfile)


if __name__ == "__main__":
    main()
