"""Switch rollouts: canary switches first, then batches; halt, pause, resume, roll back.

Every step's state lives in the store (PostgreSQL in production), so a runner that starts
after a controller restart picks up where the last one stopped. One ``step`` does one unit
of work and then returns, which is where pause requests and the failure budget are checked:

- ``pending`` -> ``running`` when a runner first picks the rollout up;
- ``running``: if the failures so far (failed + unreachable + mismatch) exceed the budget,
  -> ``halted``; if no switch is pending, -> ``completed``; otherwise the lowest batch with
  pending switches is applied (in parallel within the batch);
- ``rolling_back``: one switch at a time, in the reverse of the order the rollout reached
  them, back to the previous version's desired state; none left -> ``rolled_back``.

Each switch is planned from a fresh read of the tables sluice owns, so re-running a batch
that a restart interrupted writes only what is still missing. Before anything is written to
a switch (``converge_switch``): its declared ports and speeds are checked against what it
reports; the operator's QoS config is its adoption record's baseline (recorded from that
read before the first write, ``Adoptions``); sluice's maps are merged with the operator's and
an intent that would touch lossless traffic is refused (``controller/sonic/coexist.py``).
Going back to no sluice config at all (a first rollout rolled back, a version with no
classes) restores the baseline and releases the adoption. Writes are verified by read-back
(``controller/reconcile/apply.py``) and the state read afterwards is recorded as the switch's
running state. The staging (canary, batches, failure budget) is
``controller/rollout/staging.py``, shared with host rollouts. Time, the switches and the
store are all passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from controller.errors import FieldProblem, LosslessBufferInvalid, NotFound, SouthboundError
from controller.intent.models import Dialect, Intent, Switch
from controller.reconcile.access import (
    OWNED_TABLES,
    ROLLOUT_TABLES,
    SwitchAccess,
    read_failure,
    unapplied,
)
from controller.reconcile.apply import ApplyResult
from controller.reconcile.fanout import checked_parallel, map_parallel
from controller.rollout.gates import Evaluation, GatePolicy, GateState, Reader, describe, read_all
from controller.rollout.gates import failed as failed_gates
from controller.rollout.staging import (
    FAILURE_STATUSES,
    Complete,
    Halt,
    next_stage,
)
from controller.sonic.buffermgrd import buffermgrd_leftovers, check_left_headroom, headroom_notes
from controller.sonic.coexist import (
    NO_CLAIM,
    LosslessClaim,
    effective,
    lossless_claim,
    lossless_problems,
    operator_baseline,
)
from controller.sonic.diff import plan_switch
from controller.sonic.discovery import port_problems, ports_of
from controller.sonic.gcu import describe_port_flaps, watchdog_not_started
from controller.sonic.model import Plan, SwitchConfig
from controller.sonic.tables.flex_counter_table import polls_stopped_first, stops_written
from controller.types import Clock

log = logging.getLogger(__name__)

Phase = Literal["rollout", "rollback"]
FORWARD: Phase = "rollout"
BACKWARD: Phase = "rollback"


@dataclass(frozen=True, slots=True)
class SwitchProgress:
    phase: str
    switch: str
    batch: int
    status: str
    attempts: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class RolloutView:
    """A rollout as the runner sees it: its state, policy and every per-switch result."""

    id: int
    state: str
    from_version: int
    to_version: int
    batch_size: int
    failure_budget: int
    results: tuple[SwitchProgress, ...]
    reason: str | None = None
    gates: GateState = field(default_factory=GateState)
    # Whether the operator allowed changes that take switch ports down (controller/sonic/gcu.py).
    allow_port_flaps: bool = False

    def of(self, phase: Phase) -> list[SwitchProgress]:
        return [r for r in self.results if r.phase == phase]


class Adoptions(Protocol):
    """Adoption records (``controller/store/adoption_store.py``): the operator's QoS config
    a switch ran before sluice's first write to it."""

    def baseline(self, switch: str) -> SwitchConfig | None:
        """The active adoption's baseline; None when sluice has not adopted the switch."""
        ...

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None: ...

    def release(self, switch: str, by: str) -> None: ...


class RolloutStore(Adoptions, Protocol):
    """What the runner needs from persistence (``controller/store/rollout_store.py``)."""

    def runnable(self) -> list[int]: ...

    def load(self, rollout_id: int, *, switch: str | None = None) -> RolloutView:
        """The rollout with every result, or only ``switch``'s when it is given."""
        ...

    def intent(self, version: int) -> Intent | None: ...

    def desired(self, version: int) -> dict[str, SwitchConfig]: ...

    def transition(
        self, rollout_id: int, state: str, expected: Sequence[str], reason: str | None = None
    ) -> bool: ...

    def record(
        self,
        rollout_id: int,
        phase: Phase,
        result: ApplyResult,
        started: datetime,
        finished: datetime,
    ) -> None: ...

    def record_running_state(self, switch: str, config: SwitchConfig) -> None: ...

    def record_gates(self, rollout_id: int, evaluations: Sequence[Evaluation]) -> None: ...

    def set_soak(self, rollout_id: int, batch: int | None, until: datetime | None) -> None: ...

    def start_rollback(self, rollout_id: int, switches: Sequence[str], reason: str) -> bool:
        """``running`` -> ``rolling_back`` over ``switches`` (in that order); pending
        switches of the rollout are skipped. False when it was no longer running."""
        ...


# --------------------------------------------------------------------------------------------
# pure parts


def rollback_switches(results: Sequence[SwitchProgress]) -> list[str]:
    """The switches a rollback must visit, last reached first: every switch the rollout
    attempted (a failed or unreachable one may still have taken some batches)."""
    attempted = [r for r in results if r.attempts > 0]
    ordered = sorted(attempted, key=lambda r: (r.batch, r.switch), reverse=True)
    return [r.switch for r in ordered]


def describe_failures(results: Sequence[SwitchProgress]) -> str:
    failed = [r for r in results if r.status in FAILURE_STATUSES]
    return ", ".join(f"{r.switch} ({r.status})" for r in failed)


# --------------------------------------------------------------------------------------------
# one switch


@dataclass(frozen=True, slots=True)
class Converged:
    result: ApplyResult
    running: SwitchConfig | None  # read after a verified apply; None when not verified


ALLOW_HINT = (
    "start the rollout with allow_port_flaps (sluice rollout start --allow-port-flaps) when "
    "taking them down is intended"
)


def port_flap_refusal(plan: Plan) -> ApplyResult:
    """The result of a switch whose plan takes ports down when the rollout does not allow
    it: failed, nothing written, each port named with why."""
    reason = (
        f"not written: the plan takes {len(plan.ports_down)} port(s) admin down and up "
        f"(port-critical changes, SONiC's config updater): {describe_port_flaps(plan.port_flaps)}; "
        + ALLOW_HINT
    )
    return unapplied(plan.switch, "failed", reason)


def refusal(switch: str, why: str, problems: Sequence[FieldProblem]) -> ApplyResult:
    """A switch's result when a check before writing refused it: failed, nothing written,
    each problem named."""
    listed = "; ".join(str(p) for p in problems)
    return unapplied(switch, "failed", f"not written: {why}: {listed}")


def converge_switch(
    access: SwitchAccess,
    switch: Switch,
    desired: SwitchConfig,
    owned: SwitchConfig,
    *,
    allow_port_flaps: bool,
    adoptions: Adoptions,
    by: str,
    claim: LosslessClaim = NO_CLAIM,
    intent: Intent | None = None,
) -> Converged:
    """Plan ``switch`` from a fresh read to ``desired`` (``owned``: what sluice wrote), apply
    and verify, then read what it runs now. Refused before anything is written: declared
    ports a SONiC switch does not run at their speed, a change to the operator's lossless
    traffic (but for the priorities ``claim`` takes over), a first PFC watchdog on a switch
    that runs none (GCU refuses it), lossless invariants that break with the headroom
    buffermgrd's profile gives a port (``intent``: the version ``desired`` is of; its
    ``check_left_headroom``, from this read), a plan that takes ports down unless
    ``allow_port_flaps``. The first write is
    preceded by the switch's adoption record (``by`` says who adopted it); an empty
    ``desired`` gives the operator's config back and releases the adoption. Counter groups
    whose entries the plan deletes while enabled are disabled by a write of their own first
    (orchagent ignores the delete: ``polls_stopped_first``)."""
    leaving = not desired
    try:
        observed = access.read(switch, ROLLOUT_TABLES)
    except (SouthboundError, NotFound) as error:
        return Converged(read_failure(switch.name, error), None)
    if not leaving and switch.dialect is Dialect.SONIC:
        # An OpenConfig switch's ports are not read (openconfig-interfaces): no port check.
        mismatched = port_problems(switch, ports_of(observed))
        if mismatched:
            why = "the declared ports differ from what the switch runs"
            return Converged(refusal(switch.name, why, mismatched), None)
    saved = adoptions.baseline(switch.name)
    baseline = saved if saved is not None else operator_baseline(observed)
    want = effective(desired, baseline)
    if not leaving:
        touched = lossless_problems(
            want, baseline, declared=claim.taken_over, claimed=claim.claimed
        )
        if touched:
            why = "the intent would change the operator's lossless traffic"
            return Converged(refusal(switch.name, why, touched), None)
        unstarted = watchdog_not_started(want, observed)
        if unstarted is not None and switch.dialect is Dialect.SONIC:
            why = "the switch's config updater would refuse the intent's PFC watchdog"
            return Converged(refusal(switch.name, why, [unstarted]), None)
        if intent is not None and switch.dialect is Dialect.SONIC:
            # The profile buffermgrd made since the plan's facts were recorded counts too.
            try:
                notes = headroom_notes(desired, want, baseline, observed)
                check_left_headroom(intent, switch.name, notes)
            except LosslessBufferInvalid as broken:
                why = "buffermgrd's headroom on the switch breaks the lossless invariants"
                return Converged(refusal(switch.name, why, broken.problems), None)
    was = effective(owned, baseline)
    # buffermgrd's groups for priorities sluice enabled go with them (as sluice's own).
    was |= buffermgrd_leftovers(observed, baseline, was, want)
    # A disable an earlier attempt wrote before a delete that then failed is sluice's too.
    was |= stops_written(observed, was, want)
    plan = plan_switch(switch.name, want, observed, was, baseline=baseline)
    if plan.port_flaps and not allow_port_flaps:
        return Converged(port_flap_refusal(plan), None)
    if saved is None and not leaving and not plan.is_empty:
        adoptions.adopt(switch.name, baseline, by)
    stops = polls_stopped_first(plan)
    if stops.ops:
        stopped = access.apply(switch, stops)
        if stopped.status != "applied_verified":
            return Converged(stopped, None)
        groups = ", ".join(f"{op.table}|{op.key}" for op in stops.ops)
        log.info("%s: counter groups %s disabled before their entries go", switch.name, groups)
    result = access.apply(switch, plan)
    if result.status != "applied_verified":
        return Converged(result, None)
    if leaving and saved is not None:
        adoptions.release(switch.name, by)
    try:
        return Converged(result, access.read(switch, OWNED_TABLES))
    except (SouthboundError, NotFound) as error:
        log.warning("%s: verified, but reading its running state failed: %s", switch.name, error)
        return Converged(result, None)


def _unsoaked_done_batch(view: RolloutView) -> int | None:
    """Engine mode's gated batch whose jobs have all finished (no switch pending) and whose
    soak has not been read yet: it was started (its baseline is read) but not judged."""
    forward = view.of(FORWARD)
    for number in sorted(view.gates.baselines):
        in_batch = [r for r in forward if r.batch == number]
        if number not in view.gates.soaked and all(r.status != "pending" for r in in_batch):
            return number
    return None


def _switch_of(intents: Sequence[Intent | None], name: str) -> Switch | None:
    """The switch definition (endpoint, credential) from the first intent that has it."""
    for intent in intents:
        for switch in intent.switches if intent is not None else ():
            if switch.name == name:
                return switch
    return None


# --------------------------------------------------------------------------------------------
# the runner


@dataclass(frozen=True, slots=True)
class _Work:
    """One switch to bring to ``desired``, found in ``switch`` (None: not in either intent)."""

    name: str
    switch: Switch | None
    desired: SwitchConfig
    owned: SwitchConfig
    allow_port_flaps: bool
    claim: LosslessClaim = NO_CLAIM  # the lossless priorities of the intent ``desired`` is of
    # That intent, whose lossless invariants are checked with buffermgrd's figures going
    # forward (None going back: a rollback restores, it is not refused).
    intent: Intent | None = None


class Dispatch(Protocol):
    """Engine mode's job queue (``controller/rollout/engine.py``, ``JobDispatch``)."""

    def live(self) -> frozenset[str]:
        """The switches that have a job queued or running now."""
        ...

    def __call__(self, rollout_id: int, switches: Sequence[str], live: frozenset[str]) -> int:
        """Queue a job for each of ``switches`` not in ``live``; how many were newly queued."""
        ...


class RolloutRunner:
    """Drives rollouts through the store; each ``step`` does one batch or one rollback
    switch. Safe to discard at any moment and replace with a new runner."""

    def __init__(
        self,
        store: RolloutStore,
        access: SwitchAccess,
        clock: Clock,
        *,
        max_parallel: int = 8,
        gates: Reader | None = None,
        dispatch: Dispatch | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._max_parallel = checked_parallel(max_parallel)
        self._gates = gates
        self._store = store
        self._access = access
        self._clock = clock

    def run_once(self) -> int:
        """One step of every runnable rollout; how many steps did something."""
        return sum(1 for rollout_id in self._store.runnable() if self.step(rollout_id))

    def run_until_idle(self, max_steps: int = 100_000) -> int:
        """Step until no rollout is runnable (done, halted or paused); steps taken."""
        steps = 0
        while steps < max_steps:
            done = self.run_once()
            if not done:
                return steps
            steps += done
        return steps

    def step(self, rollout_id: int) -> bool:
        # Engine mode: which switches have a job, read BEFORE the rollout's rows, so a job
        # that finishes in between shows as recorded there, and is never queued again.
        live = self._dispatch.live() if self._dispatch is not None else frozenset()
        view = self._store.load(rollout_id)
        if view.state == "pending":
            return self._move(view, "running", ("pending",), None)
        if view.state == "running":
            return self._forward(view, live)
        if view.state == "rolling_back":
            return self._backward(view)
        return False

    def _move(
        self, view: RolloutView, state: str, expected: Sequence[str], reason: str | None
    ) -> bool:
        moved = self._store.transition(view.id, state, expected, reason)
        if moved:
            log.info("rollout %d: %s%s", view.id, state, f" ({reason})" if reason else "")
        return moved

    def _forward(self, view: RolloutView, live: frozenset[str]) -> bool:
        results = view.of(FORWARD)
        policy = view.gates.policy
        if policy is not None and view.gates.soak_batch is not None:
            return self._soak(view, policy, view.gates.soak_batch)
        gated = view.gates.gated is not None
        if self._dispatch is not None and policy is not None and gated:
            # Engine mode: a gated batch's jobs have all finished; its soak starts now, as it
            # does right after the batch in single mode.
            done = _unsoaked_done_batch(view)
            if done is not None:
                self._start_soak(view.id, policy, done)
                return True
        stage = next_stage(results, view.failure_budget)
        if isinstance(stage, Halt):
            reason = (
                f"{stage.failures} switch(es) failed, more than the failure budget of "
                f"{view.failure_budget}: {describe_failures(results)}"
            )
            return self._move(view, "halted", ("running",), reason)
        if isinstance(stage, Complete):
            failed = describe_failures(results)
            return self._move(
                view,
                "completed",
                ("running",),
                f"not verified: {failed}" if stage.failures else None,
            )
        batch = stage.batch
        number = batch[0].batch
        if self._dispatch is not None:
            # Engine mode: the batch's switches become jobs that any worker may take; their
            # results land in the same rows, and the next step sees the batch done. A gated
            # batch reads its baseline once, before its first job is queued.
            names = [r.switch for r in batch]
            baseline = policy is not None and gated and number not in view.gates.baselines
            if policy is not None and baseline:
                self._read_gates(view.id, policy, "baseline", number, names, {})
            return self._dispatch(view.id, names, live) > 0 or baseline
        work = self._forward_work(view, [r.switch for r in batch])
        if policy is not None and gated:
            # The baseline: what the gates read before this batch changes anything.
            self._read_gates(view.id, policy, "baseline", number, [w.name for w in work], {})
        log.info("rollout %d: batch %d: %s", view.id, number, [w.name for w in work])
        self._run(view.id, FORWARD, work)
        if policy is not None and gated:
            self._start_soak(view.id, policy, number)
        return True

    def _start_soak(self, rollout_id: int, policy: GatePolicy, batch: int) -> None:
        self._store.set_soak(rollout_id, batch, self._clock() + timedelta(seconds=policy.soak_s))

    def _forward_work(self, view: RolloutView, names: Sequence[str]) -> list[_Work]:
        to_desired = self._store.desired(view.to_version)
        from_desired = self._store.desired(view.from_version)
        intents = [self._store.intent(view.to_version)]
        claim = lossless_claim(intents[0])
        return [
            _Work(
                name,
                _switch_of(intents, name),
                to_desired.get(name, {}),
                # What sluice wrote: the older version's values win where both have an entry,
                # so a start value that changed between versions is written afresh.
                {**to_desired.get(name, {}), **from_desired.get(name, {})},
                view.allow_port_flaps,
                claim,
                intents[0],
            )
            for name in names
        ]

    def converge_one(self, rollout_id: int, switch: str) -> bool:
        """Engine mode's job body: bring one switch of a running rollout forward, unless its
        result is already recorded (a job run twice, or after its worker died having
        recorded it) or the rollout is no longer running. Whether it converged the switch.

        The caller holds the switch's job lock, so no other worker is on this switch."""
        # Only this switch's rows: a job reads its own progress, not the whole fleet's.
        view = self._store.load(rollout_id, switch=switch)
        if view.state != "running":
            return False
        mine = [r for r in view.of(FORWARD) if r.switch == switch and r.status == "pending"]
        if not mine:
            return False
        self._run(view.id, FORWARD, self._forward_work(view, [switch]))
        return True

    def _read_gates(
        self,
        rollout_id: int,
        policy: GatePolicy,
        stage: Literal["baseline", "soak"],
        batch: int,
        switches: Sequence[str],
        baselines: Mapping[str, float | None],
    ) -> list[Evaluation]:
        evaluations = read_all(
            policy,
            self._gates,
            stage=stage,
            batch=batch,
            switches=switches,
            baselines=baselines,
            at=self._clock(),
        )
        self._store.record_gates(rollout_id, evaluations)
        return evaluations

    def _soak(self, view: RolloutView, policy: GatePolicy, batch: int) -> bool:
        """After a batch: wait out its soak (by returning: the worker comes back), then judge
        its gates; a failure halts the rollout and rolls back per ``on_fail``."""
        if view.gates.soaking(self._clock()):
            return False
        forward = view.of(FORWARD)
        in_batch = [r for r in forward if r.batch == batch]
        evaluations = self._read_gates(
            view.id,
            policy,
            "soak",
            batch,
            [r.switch for r in in_batch],
            view.gates.baselines.get(batch, {}),
        )
        self._store.set_soak(view.id, None, None)
        bad = failed_gates(evaluations)
        if not bad:
            log.info("rollout %d: batch %d passed its health gates", view.id, batch)
            return True
        reason = f"batch {batch} failed its health gates ({policy.on_fail}): {describe(bad)}"
        if policy.on_fail == "halt":
            return self._move(view, "halted", ("running",), reason)
        scope = in_batch if policy.on_fail == "rollback_batch" else forward
        moved = self._store.start_rollback(view.id, rollback_switches(scope), reason)
        if moved:
            log.info("rollout %d: rolling_back (%s)", view.id, reason)
        return moved

    def _backward(self, view: RolloutView) -> bool:
        pending = [r for r in view.of(BACKWARD) if r.status == "pending"]
        if not pending:
            failed = describe_failures(view.of(BACKWARD))
            # A rollback a gate started keeps saying why it rolled back.
            reason = f"not restored: {failed}" if failed else view.reason
            return self._move(view, "rolled_back", ("rolling_back",), reason)
        target = min(pending, key=lambda r: r.batch)
        to_desired = self._store.desired(view.to_version)
        from_desired = self._store.desired(view.from_version)
        intents = [self._store.intent(view.to_version), self._store.intent(view.from_version)]
        work = _Work(
            target.switch,
            _switch_of(intents, target.switch),
            from_desired.get(target.switch, {}),
            # The newer version was written last: its values are what sluice recorded.
            {**from_desired.get(target.switch, {}), **to_desired.get(target.switch, {})},
            view.allow_port_flaps,
            lossless_claim(intents[1]),
        )
        log.info("rollout %d: rolling back %s", view.id, target.switch)
        self._run(view.id, BACKWARD, [work])
        return True

    def _run(self, rollout_id: int, phase: Phase, work: Sequence[_Work]) -> None:
        def one(item: _Work) -> tuple[Converged, datetime, datetime]:
            started = self._clock()
            if item.switch is None:
                missing = unapplied(item.name, "failed", "the switch is in neither intent version")
                return Converged(missing, None), started, self._clock()
            converged = converge_switch(
                self._access,
                item.switch,
                item.desired,
                item.owned,
                allow_port_flaps=item.allow_port_flaps,
                adoptions=self._store,
                by=f"rollout {rollout_id}" + (" rollback" if phase == BACKWARD else ""),
                claim=item.claim,
                intent=item.intent,
            )
            return converged, started, self._clock()

        outcomes = map_parallel(one, work, max_parallel=self._max_parallel, name="rollout")
        for converged, started, finished in outcomes:
            result = converged.result
            self._store.record(rollout_id, phase, result, started, finished)
            if converged.running is not None:
                self._store.record_running_state(result.switch, converged.running)
            log.info(
                "rollout %d: %s %s%s",
                rollout_id,
                result.switch,
                result.status,
                f": {result.reason}" if result.reason else "",
            )
