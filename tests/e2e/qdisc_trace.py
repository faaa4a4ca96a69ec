"""When a device's root qdisc takes each packet in and lets it out, from the kernel's
``qdisc:qdisc_enqueue`` and ``qdisc:qdisc_dequeue`` trace events (Linux
include/trace/events/qdisc.h), stamped with CLOCK_MONOTONIC (tracefs ``trace_clock`` mono).

A token bucket qdisc bounds when it lets packets out; a capture point after it (tcpdump's tap
in the transmit path) stamps each packet some time later, by an amount no qdisc controls: a
virtual CPU descheduled between the two stamps shifts one packet by hundreds of microseconds
and bunches it with the next. The dequeue event is stamped right where the root qdisc hands
the packet on, as close to the limiter's own clock as a record gets (a stall between the two
still shows; sliding's ``release_jitter_us`` is the allowance for it).

Events go to a private tracefs instance (its own buffer and clock), removed on exit; tracefs
is mounted on a temporary directory when it is not at /sys/kernel/tracing. Tracing is global:
ifindexes and the handle "1:" repeat across network namespaces (other hosts of other tests), so
the events are printed with their fields (``options/fields``) and grouped by the qdisc they
came from; the caller picks its own qdisc's group.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("qdisc_enqueue", "qdisc_dequeue")
HTB_ROOT_HANDLE = 0x10000  # "1:"
LINE = re.compile(
    r"\s(?P<time>\d+\.\d+): qdisc_(?P<event>enqueue|dequeue): qdisc=(?P<qdisc>0x[0-9a-f]+) "
    r".*?(?:packets=0x[0-9a-f]+ \((?P<packets>\d+)\) )?skbaddr=(?P<skb>0x[0-9a-f]+) "
)


@dataclass(frozen=True)
class Release:
    """One packet the root qdisc let out: its place in the qdisc's sequence of releases
    (``seq``) and when (s, monotonic); when it was taken in, and how many packets the qdisc
    had let out by then (both None for a segment the qdisc cut from a larger packet: it was
    never enqueued whole)."""

    seq: int
    time: float
    enqueued: float | None
    released_before_enqueue: int | None = None


class QdiscTrace:
    def __init__(self, instance: Path) -> None:
        self.instance = instance

    def _enable(self, on: bool) -> None:
        for event in EVENTS:
            (self.instance / "events" / "qdisc" / event / "enable").write_text("1" if on else "0")

    def released(self) -> dict[str, list[Release]]:
        """Every packet let out so far, in order, by qdisc (its kernel address)."""
        return releases((self.instance / "trace").read_text())

    def stop(self) -> dict[str, list[Release]]:
        """Stop recording; ``released``."""
        self._enable(False)
        return self.released()


def releases(text: str) -> dict[str, list[Release]]:
    """The trace's dequeued packets in order by qdisc, each with its enqueue time (same qdisc
    and skb address, the latest enqueue before it). A bulk dequeue reports its first packet's
    address only: the packets after it count with no enqueue time."""
    enqueued: dict[tuple[str, str], tuple[float, int]] = {}
    out: dict[str, list[Release]] = {}
    for line in text.splitlines():
        match = LINE.search(line)
        if match is None:
            continue
        time = float(match.group("time"))
        key = (match.group("qdisc"), match.group("skb"))
        ours = out.setdefault(key[0], [])
        if match.group("event") == "enqueue":
            enqueued[key] = (time, len(ours))
            continue
        packets = int(match.group("packets") or 0)
        if packets < 1:
            continue
        taken_in, before = enqueued.pop(key, (None, None))
        ours.append(Release(len(ours), time, taken_in, before))
        ours += [Release(len(ours) + n, time, None) for n in range(packets - 1)]
    return out


# A capture and a trace cannot start and stop at the same instant: a packet the device sends
# in between is in one and not the other (an ssh FIN, an IPv6 neighbour message).
UNMATCHED_AT_THE_ENDS = 3


def the_qdisc_that_sent(
    frames: int, before: dict[str, list[Release]], after: dict[str, list[Release]]
) -> list[Release]:
    """The one qdisc's releases since ``before`` that number ``frames`` (the packets a capture
    on its device saw meanwhile), give or take what either missed at the ends."""
    since = {q: packets[len(before.get(q, [])) :] for q, packets in after.items()}
    matching = [p for p in since.values() if abs(len(p) - frames) <= UNMATCHED_AT_THE_ENDS]
    if len(matching) != 1:
        counts = {q: len(packets) for q, packets in since.items()}
        raise AssertionError(f"not one qdisc let out the {frames} captured frames: {counts}")
    return matching[0]


@contextmanager
def root_qdisc_trace(ifindex: int, handle: int = HTB_ROOT_HANDLE) -> Iterator[QdiscTrace]:
    """Record the root qdisc ``handle`` of device ``ifindex`` (ifindexes are per network
    namespace: the handle narrows the filter; the caller checks the count it gets)."""
    mounted: Path | None = None
    root = TRACEFS
    if not (root / "instances").is_dir():
        mounted = Path(tempfile.mkdtemp(prefix="sluice-tracefs-"))
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(mounted)], check=True)
        root = mounted
    instance = root / "instances" / f"sluice-qdisc-{os.getpid()}"
    try:
        instance.mkdir()
        trace = QdiscTrace(instance)
        (instance / "trace_clock").write_text("mono")
        (instance / "options" / "fields").write_text("1")
        (instance / "buffer_size_kb").write_text("16384")
        for event in EVENTS:
            where = instance / "events" / "qdisc" / event / "filter"
            where.write_text(f"ifindex == {ifindex} && handle == {handle}")
        trace._enable(True)
        yield trace
    finally:
        if instance.is_dir():
            QdiscTrace(instance)._enable(False)
            instance.rmdir()
        if mounted is not None:
            subprocess.run(["umount", str(mounted)], check=True)
            mounted.rmdir()
