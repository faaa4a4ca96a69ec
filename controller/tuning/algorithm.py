"""The agent's algorithm per class, where the evidence says another fits better.

An ECN-marking algorithm (standard, per-queue minimum, MQ-ECN, HDCQ) only works for traffic
whose senders react to marks. A queue that never marks yet drops carries traffic that is not
ECN-capable (or a threshold never reached before the buffer overflows): marking does nothing
for it, and DynaQ, which moves per-queue drop thresholds and needs no ECN (DynaQ slides,
"Design"; docs/algorithms.md), protects the other queues' buffer shares instead.

Evidence, over the window and every port of the class: mark fraction below ``NO_MARKS`` on
every port, drops above ``DROPS`` packets/s on at least one, and traffic sent. The minimum
interval applies; the rule has no numeric step or band (the switch is all or nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.intent.models import EcnMode
from controller.tuning.evidence import Change, Evidence, Value
from controller.tuning.stability import ChangeTimes, StabilityPolicy
from controller.tuning.summary import QueueSummary

SOURCE = "DynaQ (per-queue drop thresholds, no ECN needed); MQ-ECN/HDCQ need ECN-capable senders"
NO_MARKS = 0.001
DROPS = 0.1
MARKING_MODES = (EcnMode.STANDARD, EcnMode.PER_QUEUE_MINIMUM, EcnMode.MQECN, EcnMode.HDCQ)


def parameter_key(service_class: str) -> str:
    return f"algorithm/{service_class}"


def tune_algorithm(
    service_class: str,
    mode: EcnMode,
    queues: Sequence[QueueSummary],
    *,
    now_s: float,
    last_changed: ChangeTimes,
    policy: StabilityPolicy,
) -> Change | None:
    """DynaQ for a marking class whose traffic ignores ECN; None when the rule has nothing
    to say (not a marking class, or no measurement)."""
    if mode not in MARKING_MODES:
        return None
    measured = [q for q in queues if q.mark_fraction is not None]
    if not measured:
        return None
    max_marks = max(q.mark_fraction or 0.0 for q in measured)
    max_drops = max(q.dropped_packets_per_s or 0.0 for q in measured)
    sent = sum(q.tx_bytes_per_s or 0.0 for q in measured)
    inputs: dict[str, Value] = {
        "class": service_class,
        "mode": mode.value,
        "ports": len(measured),
        "mark_fraction_max": round(max_marks, 6),
        "dropped_packets_per_s_max": round(max_drops, 6),
        "tx_bytes_per_s_sum": round(sent, 3),
    }
    key = parameter_key(service_class)
    evidence = Evidence("agent.algorithm", SOURCE, inputs, {"mode": EcnMode.DYNAQ.value})
    if not (max_marks < NO_MARKS and max_drops > DROPS and sent > 0):
        reason = "traffic marks, or does not drop: ECN is working"
        return Change(key, mode.value, mode.value, evidence, held=reason)
    since = last_changed.get(key)
    if since is not None and now_s - since < policy.min_interval_s:
        reason = f"changed {now_s - since:.0f} s ago, minimum interval {policy.min_interval_s:g} s"
        return Change(key, mode.value, mode.value, evidence, held=reason)
    return Change(key, mode.value, EcnMode.DYNAQ.value, evidence)
