"""One tuning pass: the intent, a telemetry summary and the time in; every rule's Change out.

Pure: the caller reads Prometheus (``controller/telemetry/tuning_summary.py``), the times
each parameter last changed and each one's last applied change (the stored proposals), and
decides what to do with the result
(``fabric.tuning.mode``: off, propose, auto).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from controller.intent.capacity import lowest_xoff_point_bytes
from controller.intent.models import EcnMode, Intent, SchedulingType, ServiceClass
from controller.tuning import algorithm, dcqcn, ecn, pias, qjump, weights
from controller.tuning.apply import class_lambda, lambda_class
from controller.tuning.evidence import Change, LastApplied
from controller.tuning.stability import ChangeTimes, StabilityPolicy
from controller.tuning.summary import QueueSummary, TelemetrySummary


def propose(
    intent: Intent,
    summary: TelemetrySummary,
    *,
    now_s: float,
    last_changed: ChangeTimes,
    sized: Intent | None = None,
    last_applied: LastApplied | None = None,
) -> list[Change]:
    """Every rule's verdict, held ones included (they explain why nothing moved). ``sized``
    is the intent with each lossless port's cable as the switches reported it
    (``controller.sonic.cables.sized_intent``), what a version written from the proposal is
    checked against: a DCQCN ramp stays below its XOFF points. None: the intent's own.
    ``last_applied``: each parameter's last applied change, from which the DCQCN rule judges
    its last step (None: no history)."""
    tuning = intent.fabric.tuning
    policy = StabilityPolicy.from_intent(tuning)
    by_class: dict[str, list[QueueSummary]] = defaultdict(list)
    for queue in summary.queues:
        by_class[queue.service_class].append(queue)
    changes: list[Change] = []
    changes += _ecn(intent, by_class, policy, now_s, last_changed)
    for group in _dcqcn_groups(intent, sized or intent):
        key = dcqcn.parameter_key(group.service_class)
        ramp = dcqcn.tune_dcqcn(
            group,
            by_class.get(group.service_class, []),
            now_s=now_s,
            last_changed=last_changed,
            policy=policy,
            last=dcqcn.last_step((last_applied or {}).get(key)),
        )
        changes += [ramp] if ramp is not None else []
    changes += weights.tune_weights(
        _weight_ranges(intent.service_classes),
        summary.queues,
        now_s=now_s,
        last_changed=last_changed,
        policy=policy,
    )
    changes += _qjump(intent, summary, policy, now_s, last_changed)
    for service_class in intent.service_classes:
        if service_class.pias is not None:
            found = pias.tune_pias(
                pias.PiasInUse(
                    service_class.name,
                    service_class.pias.workload.value,
                    service_class.pias.load,
                    len(service_class.pias.demotions) + 1,
                    service_class.pias.thresholds_bytes,
                ),
                summary.flow_sizes.get(service_class.name),
                ks_threshold=tuning.pias_ks_threshold,
                min_flows=tuning.pias_min_flows,
                now_s=now_s,
                last_changed=last_changed,
                policy=policy,
            )
            changes += [found] if found is not None else []
        verdict = algorithm.tune_algorithm(
            service_class.name,
            service_class.ecn,
            by_class.get(service_class.name, []),
            now_s=now_s,
            last_changed=last_changed,
            policy=policy,
        )
        changes += [verdict] if verdict is not None else []
    return changes


def _ecn(
    intent: Intent,
    by_class: dict[str, list[QueueSummary]],
    policy: StabilityPolicy,
    now_s: float,
    last_changed: ChangeTimes,
) -> list[Change]:
    tuning = intent.fabric.tuning
    bounds = ecn.EcnBounds(tuning.ecn_lambda_min, tuning.ecn_lambda_max, tuning.utilisation_target)
    # A class has one lambda over its port speeds (controller/tuning/apply.py): a change asked
    # for by one of its groups changed it for all of them, so each group's minimum interval
    # counts from the latest of its class's.
    last_changed = {**last_changed, **_class_lambda_times(intent, by_class, last_changed)}
    dwrr = [c for c in intent.service_classes if c.scheduling.type is SchedulingType.DWRR]
    total = sum(c.scheduling.weight or 0 for c in dwrr) or None
    changes: list[Change] = []
    for service_class in intent.service_classes:
        if service_class.ecn in (EcnMode.OFF, EcnMode.DYNAQ) or service_class.lossless:
            continue  # a lossless class marks on its DCQCN ramp (_dcqcn), not on K
        by_speed: dict[float, list[QueueSummary]] = defaultdict(list)
        for queue in by_class.get(service_class.name, []):
            by_speed[queue.speed_gbps].append(queue)
        for speed, queues in sorted(by_speed.items()):
            group = ecn.EcnGroup(
                service_class.name,
                speed,
                class_lambda(intent, service_class.name),
                intent.fabric.base_rtt_us,
                intent.fabric.mtu_bytes,
                service_class.scheduling.weight if service_class in dwrr else None,
                total if service_class in dwrr else None,
            )
            found = ecn.tune_lambda(
                group, queues, bounds, now_s=now_s, last_changed=last_changed, policy=policy
            )
            changes += [found] if found is not None else []
    return changes


def _dcqcn_groups(intent: Intent, sized: Intent) -> list[dcqcn.DcqcnGroup]:
    """Each lossless class's DCQCN ramp (``controller/tuning/dcqcn.py``), Kmax below the
    lowest XOFF point of the ports as ``sized`` for their cables."""
    xoff = lowest_xoff_point_bytes(sized)
    if xoff is None:
        return []
    tuning = intent.fabric.tuning
    return [
        dcqcn.DcqcnGroup(
            c.name,
            c.dcqcn,
            intent.fabric.base_rtt_us,
            tuning.ecn_lambda_min,
            xoff - 1,
            tuning.utilisation_target,
        )
        for c in intent.service_classes
        if c.dcqcn is not None
    ]


def _class_lambda_times(
    intent: Intent, by_class: dict[str, list[QueueSummary]], last_changed: ChangeTimes
) -> dict[str, float]:
    """Every group key of a class whose lambda changed, at the latest change of the class."""
    latest: dict[str, float] = {}
    for key, at in last_changed.items():
        name = lambda_class(key)
        if name is not None:
            latest[name] = max(at, latest.get(name, at))
    return {
        ecn.parameter_key(c.name, q.speed_gbps): latest[c.name]
        for c in intent.service_classes
        if c.name in latest
        for q in by_class.get(c.name, [])
    }


def _weight_ranges(classes: Sequence[ServiceClass]) -> list[weights.WeightRange]:
    ranges = []
    for service_class in classes:
        scheduling = service_class.scheduling
        if scheduling.type is not SchedulingType.DWRR or scheduling.weight is None:
            continue
        low = scheduling.weight_min or scheduling.weight
        high = scheduling.weight_max or scheduling.weight
        ranges.append(weights.WeightRange(service_class.name, scheduling.weight, low, high))
    return ranges


def _qjump(
    intent: Intent,
    summary: TelemetrySummary,
    policy: StabilityPolicy,
    now_s: float,
    last_changed: ChangeTimes,
) -> list[Change]:
    settings = intent.fabric.qjump
    if settings is None or not intent.hosts or not summary.qjump_levels:
        return []
    current = qjump.QjumpParameters(
        settings.hosts,
        settings.packet_bytes,
        settings.epsilon_us,
        min(h.nic_gbps for h in intent.hosts) * 1e9,
        intent.fabric.mtu_bytes,
        settings.factors,
    )
    return qjump.tune_qjump(
        current, summary.qjump_levels, now_s=now_s, last_changed=last_changed, policy=policy
    )
