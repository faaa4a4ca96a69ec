"""The compiled per-switch model -> ``openconfig-qos`` payloads (RFC 7951 JSON). Pure.

The same ``SwitchContext`` the CONFIG_DB table builders read (``controller/sonic/compile.py``
``switch_context``) is written in the OpenConfig QoS model's terms (openconfig/public
release/models/qos: openconfig-qos, -elements, -interfaces, -mem-mgmt):

- ``queues``: one queue per queue index, ``SLUICE_Q<n>`` with ``queue-id`` n;
- ``forwarding-groups``: ``SLUICE_FG<n>`` sends to queue ``SLUICE_Q<n>`` (SONiC's TC = queue);
- ``classifiers``: ``SLUICE_DSCP_IPV4`` and ``SLUICE_DSCP_IPV6``, one term per queue matching
  its DSCPs (``dscp-set``) with the queue's forwarding group as target (DSCP_TO_TC_MAP);
- ``scheduler-policies``: ``SLUICE``: one strict-priority scheduler per STRICT queue, highest
  queue first, then one scheduler whose inputs are the DWRR queues with their weights. On
  SONiC the platform fixes the order of strict queues (by index, highest first, which the
  HDCQ and PIAS layouts assume, ``controller/intent/validate.py``); OpenConfig states it, so
  sluice writes that order;
- ``queue-management-profiles``: WRED with min = max = the queue's threshold (step marking,
  MQ-ECN NSDI 2016 §2), ``enable-ecn`` when the queue marks, ``drop`` for non-ECT packets,
  ``weight`` 0 (the instantaneous queue, as qosorch sets SAI_WRED_ATTR_WEIGHT); a dynamic
  queue gets its static fallback: no agent runs on an OpenConfig switch (docs/openconfig.md);
- ``buffer-allocation-profiles``: the BUFFER_PROFILE's reserve and dynamic shared limit
  (alpha = 2^dynamic_th, the model's ``dynamic-limit-scaling-factor`` is that exponent);
- ``interfaces``: each port's input classifiers, output scheduler policy, buffer allocation
  profile and queue -> queue-management-profile.

``check_references`` confirms every name a leafref carries exists among the payloads, before
anything can reach a switch (the CONFIG_DB side has ``compile.check_references``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from controller.errors import CompiledConfigInvalid, FieldProblem
from controller.intent.models import Dialect, Intent, SchedulingType, Switch
from controller.openconfig.deviations import Deviation, adapted
from controller.sonic.compile import switch_context
from controller.sonic.context import PREFIX, PortProfile, QueueProfile, SwitchContext
from controller.sonic.tables._common import unique_profiles

Json = dict[str, Any]

QOS = "openconfig-qos:qos"
"""The model's top container, as RFC 7951 names it (module-qualified)."""

# Referenced kinds come before the kinds that reference them: the order a Set writes them.
KINDS = (
    "queues",
    "forwarding-groups",
    "classifiers",
    "scheduler-policies",
    "queue-management-profiles",
    "buffer-allocation-profiles",
    "interfaces",
)

SCHEDULER_POLICY = PREFIX
ADDRESS_FAMILIES = ("IPV4", "IPV6")


def queue_name(queue: int) -> str:
    return f"{PREFIX}_Q{queue}"


def forwarding_group_name(queue: int) -> str:
    return f"{PREFIX}_FG{queue}"


def classifier_name(family: str) -> str:
    return f"{PREFIX}_DSCP_{family}"


def _named(name: str, config: Json | None = None, **children: Json) -> Json:
    """A list entry keyed by ``name``: the key, its ``config`` (which repeats the key) and
    any child containers."""
    return {"name": name, "config": {"name": name, **(config or {})}, **children}


@dataclass(frozen=True)
class QosPayloads:
    """One switch's ``openconfig-qos`` configuration, by kind (a container under /qos).

    ``by_kind[kind]`` is that container's RFC 7951 JSON body, the value of a gNMI Set at
    ``path(kind)`` with JSON_IETF encoding. ``approximated``: the platform's deviations that
    rewrote it (``controller/openconfig/deviations.py``).
    """

    switch: str
    by_kind: dict[str, Json]
    approximated: tuple[Deviation, ...] = ()

    @staticmethod
    def path(kind: str) -> str:
        return f"/{QOS}/{kind}"

    def document(self, kinds: tuple[str, ...] = KINDS) -> Json:
        """The ``/qos`` tree holding ``kinds`` (all by default), as one RFC 7951 document."""
        return {QOS: {kind: self.by_kind[kind] for kind in kinds if kind in self.by_kind}}


# --------------------------------------------------------------------------------------------
# the kinds


def _queues(ctx: SwitchContext) -> Json:
    return {"queue": [_named(queue_name(q.queue), {"queue-id": q.queue}) for q in ctx.fleet.queues]}


def _forwarding_groups(ctx: SwitchContext) -> Json:
    return {
        "forwarding-group": [
            _named(forwarding_group_name(q.queue), {"output-queue": queue_name(q.queue)})
            for q in ctx.fleet.queues
        ]
    }


def _dscps_by_queue(ctx: SwitchContext) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for dscp, tc in ctx.fleet.dscp_to_tc.items():
        out.setdefault(int(ctx.fleet.tc_to_queue[tc]), []).append(int(dscp))
    return {queue: sorted(dscps) for queue, dscps in sorted(out.items())}


def _classifiers(ctx: SwitchContext) -> Json:
    by_queue = _dscps_by_queue(ctx)
    classifiers = []
    for family in ADDRESS_FAMILIES:
        terms = [
            {
                "id": f"Q{queue}",
                "config": {"id": f"Q{queue}"},
                "conditions": {family.lower(): {"config": {"dscp-set": dscps}}},
                "actions": {"config": {"target-group": forwarding_group_name(queue)}},
            }
            for queue, dscps in by_queue.items()
        ]
        classifiers.append(_named(classifier_name(family), {"type": family}, terms={"term": terms}))
    return {"classifier": classifiers}


def _scheduler_input(queue: int, weight: int | None) -> Json:
    name = queue_name(queue)
    config: Json = {"id": name, "input-type": "QUEUE", "queue": name}
    if weight is not None:
        config["weight"] = str(weight)  # uint64: a string in RFC 7951 JSON (§6.1)
    return {"id": name, "config": config}


def _scheduler(sequence: int, inputs: list[Json], *, strict: bool) -> Json:
    config: Json = {"sequence": sequence}
    if strict:
        config["priority"] = "STRICT"
    return {"sequence": sequence, "config": config, "inputs": {"input": inputs}}


def _scheduler_policies(ctx: SwitchContext) -> Json:
    dwrr = SchedulingType.DWRR.value
    strict = sorted((q for q in ctx.fleet.queues if q.scheduling != dwrr), key=lambda q: -q.queue)
    weighted = [q for q in ctx.fleet.queues if q.scheduling == dwrr]
    schedulers = [
        _scheduler(seq, [_scheduler_input(q.queue, None)], strict=True)
        for seq, q in enumerate(strict)
    ]
    if weighted:
        inputs = [_scheduler_input(q.queue, q.weight) for q in weighted]
        schedulers.append(_scheduler(len(strict), inputs, strict=False))
    policy = _named(SCHEDULER_POLICY, schedulers={"scheduler": schedulers})
    return {"scheduler-policy": [policy]}


def management_profile_name(profile: PortProfile, queue: QueueProfile) -> str | None:
    """A static queue shares CONFIG_DB's ``SLUICE_WRED_<speed>G_Q<n>``; a dynamic queue's
    fallback may depend on the port buffer too (DynaQ), so its name carries it. A queue
    without ECN or WRED has none."""
    if queue.wred_fields is None:
        return None
    if queue.wred_name is not None:
        return queue.wred_name
    return f"{PREFIX}_WRED_{profile.speed_gbps}G_{profile.buffer_bytes}B_Q{queue.queue}"


def _wred(fields: Mapping[str, str]) -> Json:
    """A CONFIG_DB WRED_PROFILE (green, yellow and red alike) as openconfig-qos WRED."""
    threshold = fields["green_min_threshold"]
    return {
        "min-threshold": threshold,  # uint64: strings in RFC 7951 JSON
        "max-threshold": fields["green_max_threshold"],
        "enable-ecn": fields["ecn"] != "ecn_none",
        "drop": fields["wred_green_enable"] == "true",
        "weight": 0,
        "max-drop-probability-percent": int(fields["green_drop_probability"]),
    }


def _queue_management_profiles(ctx: SwitchContext) -> Json:
    profiles: dict[str, Json] = {}
    for profile in unique_profiles(ctx):
        for queue in profile.queues:
            name = management_profile_name(profile, queue)
            if name is None or queue.wred_fields is None:
                continue
            body = _named(name, wred={"uniform": {"config": _wred(queue.wred_fields)}})
            if profiles.setdefault(name, body) != body:
                raise CompiledConfigInvalid(f"queue-management-profile {name}: two disagree")
    return {"queue-management-profile": [profiles[n] for n in sorted(profiles)]}


def _buffer_allocation_profiles(ctx: SwitchContext) -> Json:
    profiles: dict[str, Json] = {}
    for profile in unique_profiles(ctx):
        for name, fields in profile.buffer_profiles.items():
            queue_config: Json = {
                "dedicated-buffer": fields["size"],  # uint64: a string
                "use-shared-buffer": True,
                "shared-buffer-limit-type": "openconfig-qos:DYNAMIC_BASED_ON_SCALING_FACTOR",
                "dynamic-limit-scaling-factor": int(fields["dynamic_th"]),
            }
            queues = [
                _named(queue_name(q.queue), queue_config)
                for q in profile.queues
                if q.buffer_profile == name
            ]
            profiles[name] = _named(name, queues={"queue": queues})
    return {"buffer-allocation-profile": [profiles[n] for n in sorted(profiles)]}


def _output_queue(profile: PortProfile, queue: QueueProfile) -> Json:
    name = queue_name(queue.queue)
    config: Json = {"name": name}
    qm = management_profile_name(profile, queue)
    if qm is not None:
        config["queue-management-profile"] = qm
    return {"name": name, "config": config}


def _interface(name: str, profile: PortProfile) -> Json:
    classifiers = [
        {"type": family, "config": {"type": family, "name": classifier_name(family)}}
        for family in ADDRESS_FAMILIES
    ]
    buffers = sorted({q.buffer_profile for q in profile.queues})
    if len(buffers) != 1:
        raise CompiledConfigInvalid(f"{name}: one buffer allocation profile per port, {buffers}")
    return {
        "interface-id": name,
        "config": {"interface-id": name},
        "interface-ref": {"config": {"interface": name}},
        "input": {"classifiers": {"classifier": classifiers}},
        "output": {
            "config": {"buffer-allocation-profile": buffers[0]},
            "scheduler-policy": {"config": {"name": SCHEDULER_POLICY}},
            "queues": {"queue": [_output_queue(profile, q) for q in profile.queues]},
        },
    }


def _interfaces(ctx: SwitchContext) -> Json:
    return {"interface": [_interface(port.name, port.profile) for port in ctx.ports]}


_BUILDERS: dict[str, Callable[[SwitchContext], Json]] = {
    "queues": _queues,
    "forwarding-groups": _forwarding_groups,
    "classifiers": _classifiers,
    "scheduler-policies": _scheduler_policies,
    "queue-management-profiles": _queue_management_profiles,
    "buffer-allocation-profiles": _buffer_allocation_profiles,
    "interfaces": _interfaces,
}


# --------------------------------------------------------------------------------------------
# references


def _keys(body: Json, list_name: str) -> set[str]:
    return {str(entry["config"].get("name", entry.get("name"))) for entry in body[list_name]}


def _references(by_kind: Mapping[str, Json]) -> Iterator[tuple[str, str, str]]:
    """(where, kind referenced, name) for every leafref the payloads carry."""
    for group in by_kind["forwarding-groups"]["forwarding-group"]:
        yield f"forwarding-group {group['name']}", "queues", group["config"]["output-queue"]
    for classifier in by_kind["classifiers"]["classifier"]:
        for term in classifier["terms"]["term"]:
            where = f"classifier {classifier['name']} term {term['id']}"
            yield where, "forwarding-groups", term["actions"]["config"]["target-group"]
    for policy in by_kind["scheduler-policies"]["scheduler-policy"]:
        for scheduler in policy["schedulers"]["scheduler"]:
            for entry in scheduler["inputs"]["input"]:
                where = f"scheduler-policy {policy['name']} input {entry['id']}"
                yield where, "queues", entry["config"]["queue"]
    for profile in by_kind["buffer-allocation-profiles"]["buffer-allocation-profile"]:
        for queue in profile["queues"]["queue"]:
            yield f"buffer-allocation-profile {profile['name']}", "queues", queue["name"]
    for interface in by_kind["interfaces"]["interface"]:
        where = f"interface {interface['interface-id']}"
        for classifier in interface["input"]["classifiers"]["classifier"]:
            yield where, "classifiers", classifier["config"]["name"]
        output = interface["output"]
        yield where, "scheduler-policies", output["scheduler-policy"]["config"]["name"]
        yield where, "buffer-allocation-profiles", output["config"]["buffer-allocation-profile"]
        for queue in output["queues"]["queue"]:
            yield where, "queues", queue["name"]
            profile_name = queue["config"].get("queue-management-profile")
            if profile_name is not None:
                yield where, "queue-management-profiles", profile_name


_LISTS = {
    "queues": "queue",
    "forwarding-groups": "forwarding-group",
    "classifiers": "classifier",
    "scheduler-policies": "scheduler-policy",
    "queue-management-profiles": "queue-management-profile",
    "buffer-allocation-profiles": "buffer-allocation-profile",
}


def check_references(by_kind: Mapping[str, Json]) -> None:
    """Every leafref among the payloads names an entry they hold. Raises
    CompiledConfigInvalid naming the dangling ones."""
    names = {kind: _keys(by_kind[kind], list_name) for kind, list_name in _LISTS.items()}
    missing = [
        f"{where} names {kind} {name}"
        for where, kind, name in _references(by_kind)
        if name not in names[kind]
    ]
    if missing:
        raise CompiledConfigInvalid("dangling references: " + "; ".join(missing[:10]))


# --------------------------------------------------------------------------------------------
# entry points


def qos_payloads(ctx: SwitchContext) -> QosPayloads:
    """The ``openconfig-qos`` payloads of one compiled switch; none without service classes
    (sluice has nothing to configure, as on the CONFIG_DB side)."""
    if not ctx.fleet.queues:
        return QosPayloads(ctx.name, {})
    by_kind = {kind: _BUILDERS[kind](ctx) for kind in KINDS}
    check_references(by_kind)
    return QosPayloads(ctx.name, by_kind)


def compile_switch(intent: Intent, switch: Switch) -> QosPayloads:
    """``openconfig-qos`` payloads for ``switch`` (an intent that passed validation), as its
    platform takes them (``deviations.adapted``: ``DeviationUnsupported`` for what it
    cannot)."""
    payloads = qos_payloads(switch_context(intent, switch))
    index = next(i for i, s in enumerate(intent.switches) if s.name == switch.name)
    where = f"switches[{index}].platform"
    by_kind, approximated = adapted(payloads.by_kind, switch.platform, where)
    return QosPayloads(payloads.switch, by_kind, approximated)


def platform_warnings(intent: Intent) -> list[FieldProblem]:
    """The plan's word on each approximation a switch's platform needed
    (``switches[i].platform``): what sluice wrote instead of what the intent computes."""
    warnings = []
    for index, switch in enumerate(intent.switches):
        if switch.dialect is not Dialect.OPENCONFIG or switch.platform is None:
            continue
        for deviation in compile_switch(intent, switch).approximated:
            reason = (
                f"{switch.platform.value} ({deviation.name}, openconfig/featureprofiles): "
                f"{deviation.what}"
            )
            warnings.append(FieldProblem(f"switches[{index}].platform", reason))
    return warnings
