"""QJUMP: n from the fan-in hosts observe, P from the packets they send at the levels.

The network epoch is 2nP/R + eps (QJUMP NSDI'15 §3.1, Eq. 2): n is the most hosts whose
packets can meet at one port (§3.1: "the maximum fan-in"), P the largest packet a bounded
level issues (the paper's "Configuring P": the most bytes a level sends per epoch at the
guaranteed latency). Both are fabric-wide, one epoch for every level.

* n' = ceil(max observed fan-in over the levels x (1 + ``FAN_IN_HEADROOM``)): a declared n
  far above what ever fans in makes the epoch, and every level's latency bound, longer than it
  need be; an n below the real fan-in breaks the bound, hence the headroom, and n rises at
  once when the fan-in grows past it (no hysteresis on the way up: safety first).
* P' = the largest packet seen at any bounded level, rounded up to 64 bytes, within 64..MTU:
  a P below the packets sent would let a level exceed its f x P bytes per epoch.
* The epoch and every level's rate are then recomputed with ``controller.qos.qjump``
  (``plan_levels``); a combination it refuses (a level above the line rate) is held.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.errors import IntentInvalid
from controller.qos.qjump import epoch_seconds, plan_levels
from controller.tuning.evidence import Change, Evidence, Value
from controller.tuning.stability import ChangeTimes, StabilityPolicy, guard
from controller.tuning.summary import QjumpLevelSummary

SOURCE = "QJUMP NSDI'15 §3.1 Eq. 2 (epoch = 2nP/R + eps); 'Configuring P'"
FAN_IN_HEADROOM = 0.25
PACKET_ROUNDING = 64
MIN_PACKET = 64


@dataclass(frozen=True, slots=True)
class QjumpParameters:
    hosts: int
    packet_bytes: int
    epsilon_us: float
    rate_bps: float  # R: the slowest edge link
    mtu_bytes: int
    factors: Mapping[int, float]


def tune_qjump(
    current: QjumpParameters,
    levels: Sequence[QjumpLevelSummary],
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> list[Change]:
    """Changes to n (``qjump/hosts``) and P (``qjump/packet_bytes``); none without data."""
    fan_ins = [lv.max_fan_in for lv in levels if lv.max_fan_in is not None]
    packets = [lv.max_packet_bytes for lv in levels if lv.max_packet_bytes is not None]
    inputs: dict[str, Value] = {
        "hosts": current.hosts,
        "packet_bytes": current.packet_bytes,
        "rate_bps": current.rate_bps,
        "epsilon_us": current.epsilon_us,
        **{f"level{lv.level}.max_fan_in": lv.max_fan_in for lv in levels},
        **{f"level{lv.level}.max_packet_bytes": lv.max_packet_bytes for lv in levels},
    }
    hosts, packet = current.hosts, current.packet_bytes
    changes: list[Change] = []
    if fan_ins:
        wanted_n = max(1, math.ceil(max(fan_ins) * (1 + FAN_IN_HEADROOM)))
        hosts, change = _guarded_int(
            "qjump/hosts",
            current.hosts,
            wanted_n,
            max(fan_ins),
            inputs,
            now_s,
            last_changed,
            policy,
        )
        changes.append(change)
    if packets:
        wanted_p = _round_packet(max(packets), current.mtu_bytes)
        packet, change = _guarded_int(
            "qjump/packet_bytes",
            current.packet_bytes,
            wanted_p,
            max(packets),
            inputs,
            now_s,
            last_changed,
            policy,
        )
        changes.append(change)
    return _with_plan(changes, current, hosts, packet)


def _round_packet(largest: int, mtu_bytes: int) -> int:
    rounded = math.ceil(largest / PACKET_ROUNDING) * PACKET_ROUNDING
    return min(max(rounded, MIN_PACKET), mtu_bytes)


def _guarded_int(
    key: str,
    current: int,
    wanted: int,
    observed: int,
    inputs: Mapping[str, Value],
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> tuple[int, Change]:
    """Lowering goes through every guard; raising to cover what was observed does not wait
    for the interval or the step (a value below the observation breaks QJUMP's bound)."""
    bounds: tuple[str, ...] = ()
    if observed > current:
        value, held = wanted, None
        bounds = (f"observed {observed} above {current}: raised at once, no interval or step",)
    else:
        guarded = guard(
            key,
            current,
            wanted,
            now_s=now_s,
            last_changed=last_changed,
            policy=policy,
            integer=True,
        )
        value, held, bounds = int(guarded.value), guarded.held, guarded.bounds
    outputs: dict[str, Value] = {"wanted": wanted, "value": value}
    change = Change(
        key,
        current,
        value,
        Evidence(f"qjump.{key.split('/')[1]}", SOURCE, inputs, outputs, bounds),
        held=(held or "no change") if value == current else None,
    )
    return value, change


def _with_plan(
    changes: list[Change], current: QjumpParameters, hosts: int, packet: int
) -> list[Change]:
    """Attach the recomputed epoch and level rates; hold everything if they are refused."""
    if not any(c.applies for c in changes):
        return changes
    epsilon_s = current.epsilon_us * 1e-6
    try:
        planned = plan_levels(hosts, packet, current.rate_bps, epsilon_s, current.factors)
    except IntentInvalid as error:
        reason = f"the new n/P give an invalid level plan: {error}"
        return [_held(c, reason) for c in changes]
    epoch_us = epoch_seconds(hosts, packet, current.rate_bps, epsilon_s) * 1e6
    related: dict[str, Value] = {"epoch_us": round(epoch_us, 3)}
    for level in planned:
        related[f"level{level.level}.rate_bps"] = math.floor(level.rate_bps)
        related[f"level{level.level}.bytes_per_epoch"] = level.bytes_per_epoch
    return [_related(c, related) for c in changes]


def _held(change: Change, reason: str) -> Change:
    return Change(
        change.parameter, change.current, change.current, change.evidence, reason, change.related
    )


def _related(change: Change, related: Mapping[str, Value]) -> Change:
    evidence = Evidence(
        change.evidence.rule,
        change.evidence.source,
        change.evidence.inputs,
        {**change.evidence.outputs, **related},
        change.evidence.bounds,
    )
    return Change(change.parameter, change.current, change.proposed, evidence, change.held, related)
