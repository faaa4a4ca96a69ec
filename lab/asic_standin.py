"""A stand-in for the ASIC's counters on a switch made of SONiC's own software.

libsaivs, the virtual SAI under the real switch's syncd (``lab/realsonic.py``), forwards
nothing: every queue counter it reports is zero. The demo gives it traffic to report by
running vsonic's data plane (``vswitch-dataplane``, docs/dataplane.md) beside the switch's
redis, where it reads the CONFIG_DB that sluice rolled out (through the real GCU) and
simulates the queues; this module carries what it computes into libsaivs, so that SONiC's
own counter path publishes it: orchagent's flex counter groups (``FLEX_COUNTER_TABLE``),
syncd polling libsaivs at each group's interval, ``COUNTERS:<oid>`` in COUNTERS_DB, the
gNMI server streaming it.

- The data plane runs with ``--no-flex-counters``: it writes no ``COUNTERS:<oid>`` key of
  its own (syncd owns those), only its fresher feed, ``SLUICE_FAST_COUNTERS:<queue oid>``,
  every field of every queue it models, under the oids orchagent created
  (``COUNTERS_QUEUE_NAME_MAP``).
- Every ``interval`` this bridge reads that feed and sends each changed queue's counts to
  libsaivs on its test channel: a redis PUBLISH on ``SAI_VS_UNITTEST_CHANNEL`` of operation
  ``set_stats`` keyed by the object's real id (sonic-net/sonic-sairedis ``vslib/saivs.h``,
  and vslib's ``Sai::channelOpSetStats``: it sets the counts that libsaivs's ``get_stats``
  returns next). The message is swss-common's
  notification, a JSON array ``[op, key, field, value, ...]`` (sonic-swss-common
  ``common/notificationproducer.cpp``). COUNTERS_DB names objects by their virtual ids;
  libsaivs by its real ones: ASIC_DB's ``VIDTORID`` maps one to the other.

A port's octets do not pass this way: libsaivs reads a port's ``IF_OUT_OCTETS`` and packet
counts from the port's Linux netdev (sonic-sairedis ``vslib/SwitchState.cpp``,
``m_statIdMap``), and a switch here has none, so ``COUNTERS:<port oid>`` stays at zero.

It is a stand-in for the ASIC, and says so wherever the demo shows its counts.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis

log = logging.getLogger("lab.asic_standin")

CHANNEL = "SAI_VS_UNITTEST_CHANNEL"
SET_STATS = "set_stats"
FAST_PREFIX = "SLUICE_FAST_COUNTERS"
ASIC_DB, COUNTERS_DB = 1, 2
# The data plane's feed carries every queue field; libsaivs keeps these (SAI's queue stats).
QUEUE_STAT = "SAI_QUEUE_STAT_"
RESCAN_TICKS = 50  # the feed's keys are looked for again every RESCAN_TICKS intervals

Counts = Mapping[str, str]


def set_stats_message(rid: str, counts: Counts) -> str:
    """libsaivs's ``set_stats`` notification: the object's counts from now on."""
    flat: list[str] = [SET_STATS, rid]
    for name, value in sorted(counts.items()):
        flat += [name, value]
    return json.dumps(flat)


def queue_counts(fields: Counts) -> dict[str, str]:
    """The SAI queue stats of one feed entry (counts are decimal strings)."""
    return {k: v for k, v in fields.items() if k.startswith(QUEUE_STAT) and v.isdigit()}


def changed(sent: Mapping[str, Counts], now: Mapping[str, Counts]) -> dict[str, dict[str, str]]:
    """The objects whose counts differ from what was last sent, with their counts now."""
    return {vid: dict(counts) for vid, counts in now.items() if sent.get(vid) != counts}


@dataclass
class AsicStandIn:
    """The bridge (module docstring) for the switch whose redis listens on ``redis_port``."""

    redis_port: int
    interval_s: float = 0.1
    host: str = "127.0.0.1"
    _stop: threading.Event = field(default_factory=threading.Event)
    _sent: dict[str, Counts] = field(default_factory=dict)
    _rids: dict[str, str] = field(default_factory=dict)
    _unmapped: set[str] = field(default_factory=set)

    def _db(self, n: int) -> redis.Redis[str]:
        return redis.Redis(host=self.host, port=self.redis_port, db=n, decode_responses=True)

    def run(self) -> None:
        """Bridges until ``stop``; a lost redis is retried each interval."""
        counters, asic = self._db(COUNTERS_DB), self._db(ASIC_DB)
        keys: list[str] = []
        tick = 0
        while not self._stop.wait(self.interval_s):
            try:
                if not keys or tick % RESCAN_TICKS == 0:
                    keys = sorted(counters.scan_iter(f"{FAST_PREFIX}:*", count=1000))
                self.forward(counters, asic, keys)
            except redis.RedisError as why:
                log.warning("redis: %s", why)
                keys = []
            tick += 1

    def forward(
        self, counters: redis.Redis[str], asic: redis.Redis[str], keys: Sequence[str]
    ) -> int:
        """One round: the feed read in one pipeline, each changed queue sent; how many."""
        with counters.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(key)
            hashes: list[dict[str, str]] = pipe.execute()
        now = {
            key.split(":", 1)[1]: queue_counts(fields)
            for key, fields in zip(keys, hashes, strict=True)
            if fields
        }
        updates = changed(self._sent, now)
        self._resolve(asic, list(updates))
        with asic.pipeline(transaction=False) as pipe:
            sent = 0
            for vid, counts in updates.items():
                rid = self._rids.get(vid)
                if rid is None:
                    continue
                pipe.publish(CHANNEL, set_stats_message(rid, counts))
                self._sent[vid] = counts
                sent += 1
            pipe.execute()
        return sent

    def _resolve(self, asic: redis.Redis[str], vids: Sequence[str]) -> None:
        """Real ids of the virtual ones not seen yet (ASIC_DB ``VIDTORID``)."""
        new = [vid for vid in vids if vid not in self._rids]
        if not new:
            return
        rids: list[str | None] = asic.hmget("VIDTORID", new)
        for vid, rid in zip(new, rids, strict=True):
            if rid is not None:
                self._rids[vid] = rid
            elif vid not in self._unmapped:
                self._unmapped.add(vid)
                log.warning("%s has no real id in ASIC_DB VIDTORID: its counts stay unsent", vid)

    def stop(self) -> None:
        self._stop.set()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lab.asic_standin --redis-port N``: bridges until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="asic-standin", description=__doc__.splitlines()[0])
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--interval-ms", type=int, default=100)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    standin = AsicStandIn(args.redis_port, args.interval_ms / 1000)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: standin.stop())
    log.info("forwarding %s:* on redis port %d into libsaivs every %d ms", FAST_PREFIX,
             args.redis_port, args.interval_ms)  # fmt: skip
    standin.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
