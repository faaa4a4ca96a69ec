"""What an OpenConfig switch's vendor platform does not support of the ``openconfig-qos``
leaves sluice writes, and the compiler's answer to each. Pure.

The source is openconfig/featureprofiles, which runs OpenConfig's QoS and ECN tests against
vendors' devices: each test's ``metadata.textproto`` lists, per vendor, the deviations it
needs (the fields of ``proto/metadata.proto`` ``Metadata.Deviations``, read through
``internal/deviations/deviations.go``). The table below holds the ones among the QoS tests'
(``feature/qos/**/metadata.textproto``) that touch a leaf sluice emits, each with the vendor
those tests set it for (a switch names its platform: ``switches[].platform``). Every one gets
an answer, never a silent drop:

- ``APPROXIMATED``: the payload is rewritten to what the platform takes (``adapt``), and the
  plan says so (``deviation_warnings``) whenever the rewrite changed the switch's payload;
- ``REFUSED``: what the intent needs cannot be written on the platform: the intent is refused
  naming the switch's ``platform`` and the deviation (``DeviationUnsupported``);
- ``SATISFIED``: sluice's payload already has what the platform requires (``check`` proves it
  on every payload; a payload that broke it would be refused the same way).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from controller.errors import DeviationUnsupported
from controller.intent.models import Platform

Json = dict[str, Any]

CISCO_ECN_MIN_MAX_GAP_BYTES = 6144
"""What a Cisco 8000 needs between a WRED profile's min and max thresholds: featureprofiles
internal/deviations/deviations.go, ``EcnSameMinMaxThresholdUnsupported``'s comment (the
difference "should be 6144"; feature/qos/tests/qos_ecn_config_test sets 8005632 and 8011776)."""

INERT_PROFILE = "SLUICE_WRED_DEFINED"
"""The profile written where a platform needs one defined and the intent marks nothing: it
neither marks nor drops, and no queue names it."""

SCHEDULER_WEIGHT_MAX = 100


class Answer(StrEnum):
    APPROXIMATED = "approximated"
    REFUSED = "refused"
    SATISFIED = "satisfied"


def _profiles(by_kind: Json) -> list[Json]:
    body = by_kind.get("queue-management-profiles", {})
    return list(body.get("queue-management-profile", []))


def _wred(profile: Json) -> Json:
    return dict(profile["wred"]["uniform"]["config"])


def _with_wred(by_kind: Json, rewrite: Callable[[Json], Json]) -> Json:
    out = copy.deepcopy(by_kind)
    for profile in _profiles(out):
        profile["wred"]["uniform"]["config"] = rewrite(_wred(profile))
    return out


def _min_below_max(by_kind: Json) -> Json:
    """Step marking (min = max = K) as a ramp from K to K + the gap: marking starts where
    the intent puts it, every packet above K + gap is marked."""

    def ramp(wred: Json) -> Json:
        if wred["min-threshold"] == wred["max-threshold"]:
            gap = int(wred["min-threshold"]) + CISCO_ECN_MIN_MAX_GAP_BYTES
            wred["max-threshold"] = str(gap)
        return wred

    return _with_wred(by_kind, ramp)


def _without(*leaves: str) -> Callable[[Json], Json]:
    def adapt(by_kind: Json) -> Json:
        return _with_wred(by_kind, lambda w: {k: v for k, v in w.items() if k not in leaves})

    return adapt


def _dropping_profiles(by_kind: Json) -> str | None:
    """A profile that drops without marking (DynaQ's thresholds: docs/algorithms.md) needs
    the ``drop`` leaf: without it the profile would do nothing."""
    named = [
        str(p["name"])
        for p in _profiles(by_kind)
        if _wred(p).get("drop") is True and _wred(p).get("enable-ecn") is False
    ]
    if not named:
        return None
    return (
        f"the drop-only WRED profiles {', '.join(named)} (DynaQ's drop thresholds) need the "
        "wred drop leaf, which the platform does not take"
    )


def _without_interface_ref(by_kind: Json) -> Json:
    out = copy.deepcopy(by_kind)
    for interface in out.get("interfaces", {}).get("interface", []):
        interface.pop("interface-ref", None)
    return out


def _profile_defined(by_kind: Json) -> Json:
    if _profiles(by_kind) or "queue-management-profiles" not in by_kind:
        return by_kind
    out = copy.deepcopy(by_kind)
    inert = {"enable-ecn": False, "drop": False}
    out["queue-management-profiles"]["queue-management-profile"] = [
        {
            "name": INERT_PROFILE,
            "config": {"name": INERT_PROFILE},
            "wred": {"uniform": {"config": inert}},
        }
    ]
    return out


def _weights_within_limit(by_kind: Json) -> str | None:
    over = [
        f"{entry['id']}={entry['config']['weight']}"
        for policy in by_kind.get("scheduler-policies", {}).get("scheduler-policy", [])
        for scheduler in policy["schedulers"]["scheduler"]
        for entry in scheduler["inputs"]["input"]
        if int(entry["config"].get("weight", 0)) > SCHEDULER_WEIGHT_MAX
    ]
    return f"scheduler input weights above 100: {', '.join(over)}" if over else None


def _queues_have_ids(by_kind: Json) -> str | None:
    queues = by_kind.get("queues", {}).get("queue", [])
    missing = [str(q["name"]) for q in queues if "queue-id" not in q["config"]]
    return f"queues without a queue-id: {', '.join(missing)}" if missing else None


def _interfaces_have(leaf: str, *path: str) -> Callable[[Json], str | None]:
    def check(by_kind: Json) -> str | None:
        missing = []
        for interface in by_kind.get("interfaces", {}).get("interface", []):
            node: Any = interface
            for name in path:
                node = node.get(name, {}) if isinstance(node, dict) else {}
            if not isinstance(node, dict) or leaf not in node:
                missing.append(str(interface["interface-id"]))
        return f"interfaces without their {leaf}: {', '.join(missing)}" if missing else None

    return check


@dataclass(frozen=True)
class Deviation:
    """One featureprofiles deviation (its ``proto/metadata.proto`` field name), the platforms
    the QoS tests set it for, sluice's answer and what it does (``what``, for the docs and
    the plan). ``adapt`` rewrites an approximated payload; ``check`` names what a refused or
    satisfied one cannot carry (None: nothing)."""

    name: str
    platforms: frozenset[Platform]
    answer: Answer
    what: str
    adapt: Callable[[Json], Json] | None = None
    check: Callable[[Json], str | None] | None = None


CISCO, JUNIPER = frozenset({Platform.CISCO_8000}), frozenset({Platform.JUNIPER})

DEVIATIONS = (
    Deviation(
        "ecn_same_min_max_threshold_unsupported",
        CISCO,
        Answer.APPROXIMATED,
        f"a WRED profile's max-threshold is its min-threshold + {CISCO_ECN_MIN_MAX_GAP_BYTES} "
        "bytes: marking starts at the threshold the intent computes and ramps to every packet "
        f"{CISCO_ECN_MIN_MAX_GAP_BYTES} bytes above it, where SONiC marks every packet above it",
        adapt=_min_below_max,
    ),
    Deviation(
        "qos_set_weight_config_unsupported",
        CISCO,
        Answer.APPROXIMATED,
        "no wred weight leaf: the platform's own queue averaging applies where sluice asks "
        "for the instantaneous queue (weight 0)",
        adapt=_without("weight"),
    ),
    Deviation(
        "drop_weight_leaves_unsupported",
        CISCO,
        Answer.APPROXIMATED,
        "no wred drop or weight leaf: a marking queue's non-ECT packets above its threshold "
        "get the platform's default; a drop-only queue (DynaQ) is refused, its profile would "
        "do nothing",
        adapt=_without("drop", "weight"),
        check=_dropping_profiles,
    ),
    Deviation(
        "interface_ref_config_unsupported",
        frozenset({Platform.ARISTA_CEOS}),
        Answer.APPROXIMATED,
        "no interface-ref on a QoS interface: its interface-id alone names the port",
        adapt=_without_interface_ref,
    ),
    Deviation(
        "ecn_profile_required_definition",
        JUNIPER,
        Answer.APPROXIMATED,
        f"an intent that marks nothing still defines one queue-management profile, "
        f"{INERT_PROFILE}, which neither marks nor drops and no queue names",
        adapt=_profile_defined,
    ),
    Deviation(
        "scheduler_input_weight_limit",
        JUNIPER,
        Answer.SATISFIED,
        "DWRR weights are normalised to 1..100 (docs/config-db.md), within the limit",
        check=_weights_within_limit,
    ),
    Deviation(
        "qos_queue_requires_id",
        frozenset({Platform.CISCO_8000, Platform.JUNIPER, Platform.NOKIA_SRL}),
        Answer.SATISFIED,
        "every queue carries its queue-id",
        check=_queues_have_ids,
    ),
    Deviation(
        "qos_buffer_allocation_config_required",
        frozenset({Platform.NOKIA_SRL}),
        Answer.SATISFIED,
        "every port names its buffer-allocation-profile",
        check=_interfaces_have("buffer-allocation-profile", "output", "config"),
    ),
    Deviation(
        "qos_scheduler_config_required",
        CISCO,
        Answer.SATISFIED,
        "every port names its scheduler policy",
        check=_interfaces_have("name", "output", "scheduler-policy", "config"),
    ),
)


def of_platform(platform: Platform | None) -> tuple[Deviation, ...]:
    return tuple(d for d in DEVIATIONS if platform is not None and platform in d.platforms)


def refusal(by_kind: Json, platform: Platform | None) -> tuple[Deviation, str] | None:
    """The first deviation of ``platform`` the payloads cannot be written around, and why."""
    if not by_kind:
        return None
    for deviation in of_platform(platform):
        problem = deviation.check(by_kind) if deviation.check is not None else None
        if problem is not None:
            return deviation, problem
    return None


def adapted(
    by_kind: Json, platform: Platform | None, where: str
) -> tuple[Json, tuple[Deviation, ...]]:
    """The payloads as ``platform`` takes them, and the approximations that changed them.
    Refuses what cannot be written around: ``DeviationUnsupported`` at ``where`` (the
    switch's ``platform`` field)."""
    refused = refusal(by_kind, platform)
    if refused is not None:
        deviation, problem = refused
        raise DeviationUnsupported(where, str(platform), deviation.name, problem)
    changed = []
    for deviation in of_platform(platform):
        if deviation.adapt is None or not by_kind:
            continue
        rewritten = deviation.adapt(by_kind)
        if rewritten != by_kind:
            changed.append(deviation)
            by_kind = rewritten
    return by_kind, tuple(changed)
