"""FLEX_COUNTER_TABLE: which counter groups the switch polls, and how often.

Key: the counter group (``QUEUE``, ``PORT``, ``QUEUE_WATERMARK``, ``WRED_ECN_QUEUE``,
``PG_DROP``, ``PG_WATERMARK``); fields
``FLEX_COUNTER_STATUS`` (``enable``/``disable``) and ``POLL_INTERVAL`` in milliseconds as a
string (SONiC Configuration.md "FLEX_COUNTER_TABLE"; sonic-buildimage:src/sonic-yang-models/
yang-models/sonic-flex_counter.yang). Defaults when sluice writes nothing: queue 10 s, port 1 s,
watermarks 60 s (sonic-swss:orchagent/flexcounterorch.cpp).

The intervals come from the intent: a switch running a dynamic agent polls its queue counters
at the agent's interval (the agent reads nothing fresher) and its queue watermarks at that
interval or the watermark floor, whichever is longer; otherwise the intent's
``fabric.counters`` intervals apply. ``controller.intent.validate.counter_intervals`` refuses
an agent interval below the platform's floor before anything is compiled.

A shared table: every SONiC switch has its own entries from ``init_cfg.json`` (PORT, QUEUE,
RIF, PFCWD, ...); sluice writes and compares only the two fields it sets, on the groups it
needs, and never deletes an operator's group.

**The priority groups' counters** (``PG_DROP``, ``PG_WATERMARK``): an intent with a lossless
class reads its ingress priority groups' drops and watermarks (docs/telemetry.md), which
orchagent publishes (``COUNTERS_PG_NAME_MAP`` and the groups' stats) only once the group is
enabled (sonic-swss orchagent/flexcounterorch.cpp ``FlexCounterOrch::doTask``: ``enable`` on
``PG_DROP``/``PG_WATERMARK`` generates the priority group map and adds the groups' counters).
So the compiled state enables both, with ``FLEX_COUNTER_STATUS`` alone: the interval is the
switch's (the operator's ``POLL_INTERVAL``, or orchagent's default), as sonic-utilities'
``counterpoll pg-drop enable`` / ``counterpoll watermark enable`` write it (counterpoll/main.py,
``mod_entry`` of that one field). Where the operator's config before adoption already sets the
group's status, the group is theirs and sluice writes nothing (``keep_operator_groups``):
enabled, there is nothing to add; disabled, it is their explicit choice, which the brownfield
rules keep (docs/adopting.md), and the plan warns that the class's priority group counters
are off (``operator_disabled``).

**Giving a group back**: orchagent acts on a ``FLEX_COUNTER_TABLE`` entry's ``SET`` alone
(sonic-swss orchagent/flexcounterorch.cpp ``FlexCounterOrch::doTask`` has no ``DEL`` branch),
so an entry deleted while enabled leaves its group polled until the switch's config is
reloaded. A plan that deletes an enabled group is preceded by a ``SET`` of ``disable``
(``polls_stopped_first``), which stops the polling; the delete then leaves CONFIG_DB as the
operator had it. Where that delete failed after the disable was written, the next attempt
counts the disable as sluice's own (``stops_written``), so it goes too rather than stay as
if the operator had set it.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.intent.models import EcnMode, Fabric
from controller.sonic.context import SwitchContext
from controller.sonic.model import Fields, Op, Plan, SwitchConfig
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import Entries, checked_entries

TABLE = "FLEX_COUNTER_TABLE"
QUEUE = "QUEUE"
PORT = "PORT"
QUEUE_WATERMARK = "QUEUE_WATERMARK"
WRED_ECN_QUEUE = "WRED_ECN_QUEUE"
PG_DROP = "PG_DROP"
PG_WATERMARK = "PG_WATERMARK"
# The groups a lossless class needs, enabled without an interval (the module doc).
PG_GROUPS = (PG_DROP, PG_WATERMARK)
GROUPS = (QUEUE, PORT, QUEUE_WATERMARK, WRED_ECN_QUEUE, *PG_GROUPS)
STATUS = "FLEX_COUNTER_STATUS"
ENABLE = "enable"
DISABLE = "disable"
# sonic-flex_counter.yang types POLL_INTERVAL as a uint32 of milliseconds.
POLL_INTERVAL_MAX_MS = 2**32 - 1

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern="|".join(GROUPS),
    fields=(
        FieldSpec(STATUS, "enum", choices=(ENABLE, DISABLE), required=True),
        # Optional in sonic-flex_counter.yang; sluice sets it on the groups whose interval
        # the intent decides (``group_intervals``), never on the priority groups'.
        FieldSpec("POLL_INTERVAL", "uint", 1, POLL_INTERVAL_MAX_MS),
    ),
    shared=True,
)


@dataclass(frozen=True)
class GroupIntervals:
    """Poll interval per counter group sluice enables, in ms."""

    queue_ms: int
    port_ms: int
    watermark_ms: int
    wred_ecn_queue_ms: int | None  # None: the platform has no WRED/ECN queue counters

    def as_groups(self) -> dict[str, int]:
        groups = {QUEUE: self.queue_ms, PORT: self.port_ms, QUEUE_WATERMARK: self.watermark_ms}
        if self.wred_ecn_queue_ms is not None:
            groups[WRED_ECN_QUEUE] = self.wred_ecn_queue_ms
        return groups


def group_intervals(fabric: Fabric, agent_runs: bool) -> GroupIntervals:
    """The intervals a switch's counter groups are polled at (pure; see the module doc)."""
    counters = fabric.counters
    if agent_runs:
        queue_ms = fabric.agent.interval_ms
        watermark_ms = max(fabric.agent.interval_ms, counters.watermark_floor_ms)
    else:
        queue_ms = counters.queue_interval_ms
        watermark_ms = counters.watermark_interval_ms
    return GroupIntervals(
        queue_ms=queue_ms,
        port_ms=counters.port_interval_ms,
        watermark_ms=watermark_ms,
        wred_ecn_queue_ms=queue_ms if counters.wred_ecn_queue else None,
    )


# The counter groups each algorithm reads: the agent's own rule (agents/qos-core/src/flex.rs
# ``groups_read``), which refuses orders whose interval is shorter than the poll of a group
# it needs, or that need a group the switch does not poll (``check_counter_polls``).
GROUPS_READ: dict[EcnMode, tuple[str, ...]] = {
    EcnMode.MQECN: (QUEUE,),
    EcnMode.DYNAQ: (QUEUE, QUEUE_WATERMARK),
    EcnMode.HDCQ: (QUEUE, WRED_ECN_QUEUE),
}


def agent_refusal(fabric: Fabric, algorithm: EcnMode) -> str | None:
    """Why a switch's agent would refuse to run ``algorithm`` every ``fabric.agent.interval_ms``
    with the counter polling compiled here (it then holds every queue at its static
    fallback), or None. DynaQ reads the queue watermarks, which SONiC polls no faster than
    ``fabric.counters.watermark_floor_ms``; HDCQ the WRED/ECN queue counters, which only
    some platforms publish (``fabric.counters.wred_ecn_queue``)."""
    polled = group_intervals(fabric, agent_runs=True).as_groups()
    interval_ms = fabric.agent.interval_ms
    for group in GROUPS_READ.get(algorithm, ()):
        poll_ms = polled.get(group)
        if poll_ms is None:
            return (
                f"{algorithm.value} reads {TABLE}|{group}, which this platform does not "
                "publish (fabric.counters.wred_ecn_queue is false)"
            )
        if interval_ms < poll_ms:
            return (
                f"{algorithm.value} reads {TABLE}|{group}, polled every {poll_ms} ms, less "
                f"often than the agent's {interval_ms} ms"
            )
    return None


def build(ctx: SwitchContext) -> Entries:
    fleet = ctx.fleet
    intervals = group_intervals(fleet.fabric, agent_runs=bool(fleet.dynamic_queues))
    groups: dict[str, Fields] = {
        group: {STATUS: ENABLE, "POLL_INTERVAL": str(ms)}
        for group, ms in intervals.as_groups().items()
    }
    if fleet.lossless is not None and ctx.ports:
        groups |= {group: {STATUS: ENABLE} for group in PG_GROUPS}
    return checked_entries(SCHEMA, groups)


def keep_operator_groups(desired: SwitchConfig, baseline: SwitchConfig) -> SwitchConfig:
    """``desired`` without the priority group counter groups whose status the operator's
    config before adoption (``baseline``) sets, enabled or disabled: those stay theirs (the
    module doc). Pure; ``desired`` itself is returned when nothing is left out."""
    theirs = {
        (TABLE, group)
        for group in PG_GROUPS
        if STATUS in baseline.get((TABLE, group), {}) and (TABLE, group) in desired
    }
    if not theirs:
        return desired
    return {key: fields for key, fields in desired.items() if key not in theirs}


def operator_disabled(desired: SwitchConfig, baseline: SwitchConfig | None) -> tuple[str, ...]:
    """The priority group counter groups that ``desired`` (the compiled state, before
    ``keep_operator_groups``) would enable and that the operator's config disables: sluice
    leaves them off, so the class's priority group drops and watermarks are not read."""
    if not baseline:
        return ()
    return tuple(
        group
        for group in PG_GROUPS
        if (TABLE, group) in desired and baseline.get((TABLE, group), {}).get(STATUS) == DISABLE
    )


def polls_stopped_first(plan: Plan) -> Plan:
    """The writes to apply before ``plan`` (none: an empty plan): ``disable`` on each counter
    group whose entry ``plan`` deletes while it is enabled, so the switch stops polling it
    (the module doc, "Giving a group back"). Pure."""
    stops = tuple(
        Op("change", TABLE, op.key, {STATUS: DISABLE}, {STATUS: ENABLE}, whole_entry=False)
        for op in plan.ops
        if op.table == TABLE and op.kind == "delete" and op.old_fields.get(STATUS) == ENABLE
    )
    return Plan(plan.switch, stops)


def stops_written(observed: SwitchConfig, was: SwitchConfig, want: SwitchConfig) -> SwitchConfig:
    """``was``'s entries of the counter groups an earlier attempt disabled before deleting
    them (``polls_stopped_first``, the delete then failed), with the status the switch now
    holds: sluice wrote it, so the plan deletes it as sluice's field. Pure."""
    return {
        key: {**fields, STATUS: DISABLE}
        for key, fields in was.items()
        if key[0] == TABLE
        and key not in want
        and fields.get(STATUS) == ENABLE
        and observed.get(key, {}).get(STATUS) == DISABLE
    }
