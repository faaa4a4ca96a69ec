"""Switch rollouts, the operator's side: start, pause, resume, roll back, read. The runner's
side is ``controller/store/rollout_store.py`` (the ``RolloutStore`` of
``controller/rollout/switches.py``).

The operator's calls only change rows; a runner (``python -m controller.worker``) does the
switch work. Every action is audited (resource type ``rollout``). The health gates' policy,
its parser and built-ins are this service's own to its callers (imported ``as`` themselves:
exported), for the API's schemas and the host runs alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, FieldProblem, IntentInvalid, NotFound, PortFlapsNotAllowed
from controller.intent.models import Intent
from controller.rollout.gates import BUILTINS as BUILTINS
from controller.rollout.gates import (
    Evaluation,
    Reader,
    describe,
    failed,
    lossless_gates,
    read_all,
    with_gates,
)
from controller.rollout.gates import GatePolicy as GatePolicy
from controller.rollout.gates import parse_policy as parse_policy
from controller.rollout.staging import FAILURE_STATUSES, PAUSABLE, RESUMABLE, assign_batches
from controller.rollout.switches import BACKWARD, FORWARD, rollback_switches
from controller.services.audit import record_change
from controller.services.coexistence import (
    KnownSwitch,
    baselines_of,
    buffermgrd_invariants,
    effective_fleet,
    known_switches,
    preflight,
)
from controller.services.common import Actor, Page
from controller.services.intents import version_intent
from controller.sonic.diff import plan_switch
from controller.sonic.gcu import PORT_CRITICAL_TABLES, PortFlap, describe_port_flaps
from controller.sonic.model import SwitchConfig
from controller.store.models import GateEvaluation, Rollout, RolloutResult
from controller.store.repositories import intents, rollouts, states
from controller.store.repositories.rollouts import NewResult
from controller.store.rollout_store import evaluation_row, load_rollout, rollout_view
from controller.store.snapshots import decode_fleet
from controller.types import Clock

ROLLBACKABLE = ("pending", "running", "paused", "halted", "completed")
PRECHECK_BATCH = -1  # the batch number pre-check readings are stored under


@dataclass(frozen=True, slots=True)
class RolloutPolicy:
    """How a rollout runs. ``allow_port_flaps``: whether its changes may take switch ports
    admin down and up (SONiC's config updater does for QUEUE, BUFFER_QUEUE, PORT_QOS_MAP ...,
    ``controller/sonic/gcu.py``); without it a rollout whose plan holds such changes is
    refused before anything is written."""

    to_version: int | None
    canary: tuple[str, ...] = ()
    batch_size: int = 1
    failure_budget: int = 0
    gates: GatePolicy | None = None
    allow_port_flaps: bool = False


@dataclass(frozen=True, slots=True)
class ResultInfo:
    phase: str
    switch: str
    batch: int
    status: str
    reason: str | None
    attempts: int
    detail: dict[str, Any] | None
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class EvaluationInfo:
    batch: int
    stage: str
    gate: str
    expression: str
    value: float | None
    baseline: float | None
    threshold: float
    comparison: str
    limit: float | None
    verdict: str
    detail: str
    at: datetime


@dataclass(frozen=True, slots=True)
class RolloutInfo:
    id: int
    from_version: int
    to_version: int
    canary: list[str]
    batch_size: int
    failure_budget: int
    state: str
    reason: str | None
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    counts: dict[str, int]
    results: list[ResultInfo]
    gate_policy: dict[str, Any] | None = None
    soak_batch: int | None = None
    soak_until: datetime | None = None
    evaluations: list[EvaluationInfo] | None = None
    allow_port_flaps: bool = False


def _result_info(row: RolloutResult) -> ResultInfo:
    return ResultInfo(
        row.phase,
        row.switch_name,
        row.batch,
        row.status,
        row.reason,
        row.attempts,
        row.detail,
        row.started_at,
        row.finished_at,
    )


def _counts(results: Sequence[RolloutResult]) -> dict[str, int]:
    """Switches per status of the rollout phase (rollback counts carry a ``rollback_``
    prefix), so a progress line needs no second request."""
    counts: dict[str, int] = {}
    for row in results:
        name = row.status if row.phase == FORWARD else f"rollback_{row.status}"
        counts[name] = counts.get(name, 0) + 1
    return counts


def evaluation_info(row: GateEvaluation) -> EvaluationInfo:
    return EvaluationInfo(
        row.batch,
        row.stage,
        row.gate,
        row.expression,
        row.value,
        row.baseline,
        row.threshold,
        row.comparison,
        row.limit_value,
        row.verdict,
        row.detail,
        row.evaluated_at,
    )


def _info(
    row: Rollout,
    results: Sequence[RolloutResult],
    evaluations: Sequence[GateEvaluation] | None = None,
) -> RolloutInfo:
    return RolloutInfo(
        row.id,
        row.from_version,
        row.to_version,
        list(row.canary),
        row.batch_size,
        row.failure_budget,
        row.state,
        row.reason,
        row.created_by,
        row.created_at,
        row.started_at,
        row.finished_at,
        _counts(results),
        [_result_info(r) for r in results],
        row.gate_policy,
        row.soak_batch,
        row.soak_until,
        None if evaluations is None else [evaluation_info(e) for e in evaluations],
        row.allow_port_flaps,
    )


def _by_rollout(results: Sequence[RolloutResult]) -> dict[int, list[RolloutResult]]:
    by_id: dict[int, list[RolloutResult]] = {}
    for result in results:
        by_id.setdefault(result.rollout_id, []).append(result)
    return by_id


Also = Callable[[Session, Rollout], None]


class RolloutService:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    # -- reads ---------------------------------------------------------------------------------

    def list(self, *, limit: int, offset: int) -> Page[RolloutInfo]:
        with self._sessions() as session:
            rows, total = rollouts.list_rollouts(session=session, limit=limit, offset=offset)
            results = rollouts.results_of(session=session, rollout_ids=[r.id for r in rows])
        by_id = _by_rollout(results)
        items = [_info(row, by_id.get(row.id, [])) for row in rows]
        return Page(items, total, limit, offset)

    def active(self) -> RolloutInfo | None:
        """The rollout that is not finished (pending, running, paused, halted, rolling back),
        if any: at most one exists."""
        with self._sessions() as session:
            row = rollouts.active_rollout(session=session)
            if row is None:
                return None
            return _info(row, rollouts.results_of(session=session, rollout_ids=[row.id]))

    def get(self, rollout_id: int) -> RolloutInfo:
        with self._sessions() as session:
            row, results = load_rollout(session, rollout_id)
            evaluations = rollouts.evaluations_of(session=session, rollout_ids=[rollout_id])
            return _info(row, results, evaluations)

    # -- writes --------------------------------------------------------------------------------

    def start(
        self, policy: RolloutPolicy, *, actor: Actor, gates: Reader | None = None
    ) -> RolloutInfo:
        """A new pending rollout of ``to_version`` (default: the current version) from the
        version the fabric was last brought to. With health gates, each gate is read first
        (``gates`` reads one expression) and an unhealthy fabric refuses the start (409)
        unless the policy forces it. A version whose plan takes ports down (from what each
        switch is recorded to run) is refused (409, ``PortFlapsNotAllowed``) unless the
        policy allows it. Where buffermgrd gives a port its headroom and the switch holds its
        profile, a version whose lossless invariants break with that profile's figures is
        refused (422, ``BuffermgrdHeadroomDoesNotFit``, ``BuffermgrdKmaxAboveXoff``)."""
        with self._sessions.begin() as session:
            rollouts.lock_rollout_starts(session=session)
            active = rollouts.active_rollout(session=session)
            if active is not None:
                raise Conflict(
                    f"rollout {active.id} is {active.state}; let it finish, resume it or "
                    "roll it back before starting another"
                )
            head = intents.head_number(session=session)
            to_version = head if policy.to_version is None else policy.to_version
            if to_version < 1 or to_version > head:
                raise NotFound(f"intent version {to_version} does not exist (the newest is {head})")
            if policy.to_version is None:
                _refuse_rejected_head(session, head)
            switches = sorted(intents.desired_states(session=session, version=to_version))
            batches = _batches(switches, policy)
            from_version = rollouts.last_finished_version(session=session)
            known = known_switches(session, switches)
            target = version_intent(session, to_version)
            desired = _desired_of(session, to_version)
            preflight(target, desired, known)
            # Where buffermgrd gives a port its headroom, the invariants with its profile's
            # figures, as the plan checks them (what each switch is recorded to run).
            running = decode_fleet(states.latest_running_states(session=session, switches=switches))
            buffermgrd_invariants(target, desired, known, running)
            if not policy.allow_port_flaps:
                refuse_port_flaps(port_flaps_of(session, from_version, desired, running, known))
            policy = replace(policy, gates=gated_for(policy.gates, target))
            now = self._clock()
            prechecks = precheck(policy.gates, gates, switches, now)
            row = rollouts.insert_rollout(
                session=session,
                from_version=from_version,
                to_version=to_version,
                canary=list(dict.fromkeys(policy.canary)),
                batch_size=policy.batch_size,
                failure_budget=policy.failure_budget,
                created_by=actor.name,
                at=now,
                gate_policy=None if policy.gates is None else policy.gates.to_json(),
                allow_port_flaps=policy.allow_port_flaps,
            )
            rows = [NewResult(FORWARD, name, batch) for name, batch in batches]
            rollouts.insert_results(session=session, rollout_id=row.id, results=rows)
            rollouts.insert_evaluations(
                session=session, rows=[evaluation_row(e, rollout_id=row.id) for e in prechecks]
            )
            self._audit(session, actor, row, "start", None, now)
            results = rollouts.results_of(session=session, rollout_ids=[row.id])
            evaluations = rollouts.evaluations_of(session=session, rollout_ids=[row.id])
            return _info(row, results, evaluations)

    def pause(self, rollout_id: int, *, actor: Actor) -> RolloutInfo:
        return self._move(rollout_id, "paused", PAUSABLE, actor, "pause")

    def resume(self, rollout_id: int, *, actor: Actor) -> RolloutInfo:
        """Run again (from paused, halted, or completed with failures); switches that
        failed, were unreachable or mismatched are retried, planned from a fresh read, so
        only what is missing gets written."""

        def retry_failures(session: Session, row: Rollout) -> None:
            retried = rollouts.reset_results(
                session=session,
                rollout_id=row.id,
                phase=FORWARD,
                statuses=FAILURE_STATUSES,
                to="pending",
            )
            if row.state == "completed":
                _check_reopenable(session, row, retried)

        return self._move(rollout_id, "running", RESUMABLE, actor, "resume", retry_failures)

    def rollback(self, rollout_id: int, *, actor: Actor) -> RolloutInfo:
        """Back to the previous version, switch by switch; switches not yet reached are
        skipped."""

        def plan_rollback(session: Session, row: Rollout) -> None:
            results = rollouts.results_of(session=session, rollout_ids=[row.id], phase=FORWARD)
            view = rollout_view(row, results)
            order = rollback_switches(view.of(FORWARD))
            rows = [NewResult(BACKWARD, name, index) for index, name in enumerate(order)]
            rollouts.insert_results(session=session, rollout_id=row.id, results=rows)
            rollouts.reset_results(
                session=session,
                rollout_id=row.id,
                phase=FORWARD,
                statuses=("pending",),
                to="skipped",
            )

        return self._move(
            rollout_id, "rolling_back", ROLLBACKABLE, actor, "rollback", plan_rollback
        )

    def _move(
        self,
        rollout_id: int,
        state: str,
        allowed: Sequence[str],
        actor: Actor,
        action: str,
        also: Also | None = None,
    ) -> RolloutInfo:
        with self._sessions.begin() as session:
            row = rollouts.get_rollout(session=session, rollout_id=rollout_id, for_update=True)
            if row is None:
                raise NotFound(f"rollout {rollout_id} does not exist")
            if row.state not in allowed:
                raise Conflict(
                    f"rollout {rollout_id} is {row.state}; {action} needs it {' or '.join(allowed)}"
                )
            before = row.state
            if also is not None:
                also(session, row)
            now = self._clock()
            rollouts.set_state(
                session=session, rollout_id=row.id, state=state, expected=allowed, at=now
            )
            session.refresh(row)
            self._audit(session, actor, row, action, {"state": before}, now)
            return _info(row, rollouts.results_of(session=session, rollout_ids=[row.id]))

    @staticmethod
    def _audit(
        session: Session,
        actor: Actor,
        row: Rollout,
        action: str,
        before: dict[str, Any] | None,
        at: datetime,
    ) -> None:
        record_change(
            session,
            actor,
            action,
            resource_type="rollout",
            resource_id=str(row.id),
            version=row.to_version,
            before=before,
            after={
                "state": row.state,
                "from_version": row.from_version,
                "to_version": row.to_version,
                "canary": list(row.canary),
                "batch_size": row.batch_size,
                "failure_budget": row.failure_budget,
                "allow_port_flaps": row.allow_port_flaps,
            },
            at=at,
        )


def _refuse_rejected_head(session: Session, head: int) -> None:
    """A plain start pushes the head; not when a rollback rejected it (the head stays rejected
    only when there was no earlier version to return to, controller/store/rejections.py).
    Naming the version pushes it anyway."""
    row = intents.get_version(session=session, number=head)
    if row is not None and row.rejected_at is not None:
        raise Conflict(
            f"intent version {head} was rejected ({row.rejected_reason}); write a new version, "
            f"or name version {head} to push it anyway"
        )


def _check_reopenable(session: Session, row: Rollout, retried: int) -> None:
    """A completed rollout may be resumed to retry its failed switches only while it is the
    newest rollout and nothing else is running: never over a later version."""
    if not retried:
        raise Conflict(f"rollout {row.id} completed with every switch verified")
    newest, _ = rollouts.list_rollouts(session=session, limit=1, offset=0)
    active = rollouts.active_rollout(session=session)
    if active is not None or (newest and newest[0].id != row.id):
        raise Conflict(f"rollout {row.id} is not the newest; start a new rollout instead")


def precheck(
    policy: GatePolicy | None, read: Reader | None, switches: Sequence[str], now: datetime
) -> list[Evaluation]:
    """Every gate read over the whole fabric before the start; refuses (Conflict) when one
    fails, unless the policy forces the start."""
    if policy is None or not policy.gates:
        return []

    found = read_all(
        policy,
        read,
        stage="precheck",
        batch=PRECHECK_BATCH,
        switches=switches,
        baselines={},
        at=now,
    )
    bad = failed(found)
    if bad and not policy.force:
        raise Conflict(
            f"pre-check: the fabric is already unhealthy ({describe(bad)}); "
            "fix it first or start with force"
        )
    return found


def _port_critical(config: SwitchConfig) -> SwitchConfig:
    return {key: fields for key, fields in config.items() if key[0] in PORT_CRITICAL_TABLES}


def _desired_of(session: Session, version: int) -> dict[str, SwitchConfig]:
    return decode_fleet(intents.desired_states(session=session, version=version))


def port_flaps_of(
    session: Session,
    from_version: int,
    to_desired: Mapping[str, SwitchConfig],
    running: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch] | None = None,
) -> dict[str, tuple[PortFlap, ...]]:
    """Per switch, the changes of a rollout to ``to_desired`` (the version's desired states)
    that take a port down, planned from ``running``, what each switch is recorded to run
    (nothing: a switch never rolled out to; what discovery read, for one discovered), with
    ``from_version``'s desired state as what sluice wrote, both as sluice writes them there
    (``known``: the operator's config each runs). Only port-critical tables are compared: the
    rest cannot take a port down."""
    found_known = known if known is not None else {}
    desired = effective_fleet(to_desired, found_known)
    owned = effective_fleet(_desired_of(session, from_version), found_known)
    baselines = baselines_of(found_known)
    found: dict[str, tuple[PortFlap, ...]] = {}
    for name, config in sorted(desired.items()):
        seen = running.get(name)
        discovered = found_known[name].discovery if name in found_known else None
        if seen is None and discovered is not None:
            seen = discovered.qos
        plan = plan_switch(
            name,
            _port_critical(config),
            _port_critical(seen or {}),
            _port_critical({**config, **owned.get(name, {})}),
            baseline=baselines.get(name),
        )
        if plan.port_flaps:
            found[name] = plan.port_flaps
    return found


FLAP_SWITCHES_SHOWN = 5


def refuse_port_flaps(found: Mapping[str, Sequence[PortFlap]]) -> None:
    """``PortFlapsNotAllowed`` naming the switches and ports, when there are any."""
    if not found:
        return
    shown = "; ".join(
        f"{name}: {describe_port_flaps(flaps)}"
        for name, flaps in list(found.items())[:FLAP_SWITCHES_SHOWN]
    )
    more = len(found) - FLAP_SWITCHES_SHOWN
    tail = f"; and {more} more switch(es)" if more > 0 else ""
    ports = sum(len({f.port for f in flaps}) for flaps in found.values())
    raise PortFlapsNotAllowed(
        f"the rollout would take {ports} port(s) on {len(found)} switch(es) admin down and up "
        f"(port-critical changes, SONiC's config updater): {shown}{tail}. Nothing was started; "
        "start it with allow_port_flaps (sluice rollout start --allow-port-flaps) when taking "
        "them down is intended"
    )


def gated_for(policy: GatePolicy | None, intent: Intent | None) -> GatePolicy | None:
    """A gated rollout of an intent with lossless classes is gated on their pauses, storms and
    drops too (``lossless_gates``, docs/health.md); an ungated one stays ungated."""
    if policy is None or not policy.gates or intent is None:
        return policy
    lossless = [c.name for c in intent.service_classes if c.lossless is not None]
    pause_limit = intent.fabric.health.pfc_pause_per_s_critical
    return with_gates(policy, lossless_gates(lossless, pause_limit))


def _batches(switches: Sequence[str], policy: RolloutPolicy) -> list[tuple[str, int]]:
    if not switches:
        raise Conflict("the intent version has no switches to roll out to")
    try:
        return assign_batches(switches, policy.canary, policy.batch_size)
    except ValueError as error:
        raise IntentInvalid([FieldProblem("canary", str(error))]) from None
