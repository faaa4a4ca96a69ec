"""Tuning proposals: run the tuner on the current intent and telemetry, store what it found,
and turn an approved proposal into a new intent version authored by ``tuner``.

``fabric.tuning.mode`` decides: ``off`` refuses to run; ``propose`` stores a pending proposal
an operator approves or rejects; ``auto`` approves it at once (the health-gated rollout of the
new version is the rollout service's, issue 11 item 1), unless its plan would take a switch
port down: SONiC's config updater flaps a port for every QUEUE, BUFFER_QUEUE or PORT_QOS_MAP
change (``controller/sonic/gcu.py``), and auto mode never does that; such a proposal waits
for an operator, its reason says why. Thresholds, lambdas and weights change profiles in
place and never take a port down. A proposal is made against one
intent version; if the intent moved on before approval it is stale (propose again), so an
approval never overwrites a change nobody saw.

With ``fabric.tuning.search: twin`` the pass also runs the counterfactual search
(``controller.tuning.counterfactual``): lambdas and weights move by the search, behind its fit
check, and the rules' verdicts on them are kept as held evidence; the other rules (QJUMP,
PIAS, the algorithm) propose as before. The twin (netsim, a subprocess) is passed in
(``netsim_search``). Such a pass takes minutes: ``request`` records it ``queued`` and the
worker runs it outside the switch work lock (``run_queued``: claimed under a row lock, and
``stale`` when the head moved during the search), so neither the API nor other workers wait.

Each pass first records the outcome of earlier proposals with a prediction whose rollout has
ended (``controller.tuning.outcome``): once the rollout of the proposed version completed and
the pass's window lies wholly after it, the hosts' small-flow p99 FCT per class is set against
the proposal's baseline (the same figures over the window it was made from, stored with it)
beside the twin's predicted change; a rolled-back version records that, with no comparison.

Time, the telemetry reader, the twin and the database sessions are passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from controller.accept import cable_sizing, compile_dialects
from controller.errors import Conflict, NotFound, SluiceError
from controller.intent.loader import dump_intent
from controller.intent.models import Intent, Tuning, TuningMode, TuningSearch
from controller.reconcile.fanout import checked_parallel, map_parallel
from controller.services.coexistence import fabric_discoveries
from controller.services.common import Actor
from controller.services.intents import IntentRecord, IntentService, VersionInfo
from controller.services.twin_runs import run_twin_with
from controller.sonic.cables import sized_intent
from controller.sonic.diff import diff_fleet
from controller.store.locks import lock_tuning_queue
from controller.store.models import Rollout, TuningProposal
from controller.tuning.apply import apply_changes, intent_diff, reason_for
from controller.tuning.counterfactual import (
    RunMany,
    SearchPass,
    Simulate,
    Timing,
    TwinReading,
    TwinUnavailable,
    one_at_a_time,
    refused,
    search_in_twin,
    searched,
)
from controller.tuning.evidence import Change
from controller.tuning.fit import TwinQueue
from controller.tuning.outcome import (
    Outcome,
    Predicted,
    baseline_of,
    compare,
    describe,
    from_baseline,
    not_compared,
    prediction_of,
    settled,
)
from controller.tuning.search import RULE as SEARCH_RULE
from controller.tuning.search import Traffic
from controller.tuning.summary import TelemetrySummary
from controller.tuning.tune import propose
from controller.twin.runner import NetsimFailed
from controller.twin.translate import Request, TwinInputInvalid, port_kinds
from controller.types import Clock

log = logging.getLogger(__name__)

TUNER = "tuner"
ReadSummary = Callable[[datetime, float], TelemetrySummary]
SEARCH_OWNS = "fabric.tuning.search is twin: lambdas and weights move by the search"
QUEUED = "tuner: queued: a worker runs the search"
# A pass waiting for a worker, or being run by one (``TuningService.request``).
SEARCHING_STATES = ("queued", "running")


@dataclass(frozen=True, slots=True)
class ProposalRecord:
    id: int
    state: str
    base_version: int
    new_version: int | None
    changes: list[dict[str, Any]]
    held: list[dict[str, Any]]
    diff: list[dict[str, Any]]
    plans: list[dict[str, Any]]
    reason: str
    window_start: datetime
    window_end: datetime
    created_by: str
    created_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    # The hosts' small-flow figures over the proposal's window, per class (p99_us, flows).
    baseline: dict[str, Any] | None = None
    # The predicted change beside the measured one after the rollout (Outcome.as_dict).
    outcome: dict[str, Any] | None = None
    outcome_at: datetime | None = None
    # The search's predicted change per class (controller.tuning.outcome.Predicted).
    prediction: list[dict[str, Any]] = field(default_factory=list)
    # When a worker claimed a searching pass (``run_queued``); None for a pass run at once.
    started_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class _Pass:
    """What one pass found: the proposal row's columns, whether ``auto`` mode may approve it,
    and the intent it read (``base``)."""

    values: dict[str, Any]
    auto: bool
    base: dict[str, Any]

    @property
    def reason(self) -> str:
        return str(self.values["reason"])

    def row(self, created_by: str, created_at: datetime) -> TuningProposal:
        return TuningProposal(**self.values, created_by=created_by, created_at=created_at)

    def stale(self, reason: str) -> _Pass:
        """Nothing proposed: every change it found kept as held evidence, with ``reason``."""
        found = self.values
        held = [{**c, "held": reason} for c in found["changes"]] + list(found["held"])
        return _Pass(
            {
                **found,
                "state": "stale",
                "changes": [],
                "held": held,
                "diff": [],
                "plans": [],
                "proposed_intent": self.base,
                "reason": reason,
            },
            auto=False,
            base=self.base,
        )


class TuningService:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        intents: IntentService,
        read_summary: ReadSummary,
        *,
        clock: Clock,
        simulate: Simulate | None = None,
        search_margin_s: float = 600.0,
        search_seeds: Sequence[int] = (1,),
        run_many: RunMany = one_at_a_time,
    ) -> None:
        """``search_margin_s``: how long past its budget (``fabric.tuning.window_s``) a
        searching pass may run before it counts as left by a worker that stopped (the twin's
        timeout for the run in progress, and a margin). ``search_seeds``: the seeds each
        candidate runs on (``settings.twin.search_seeds``), ``run_many`` how they run
        (``fan_out``)."""
        self._search_margin_s = search_margin_s
        self._search_seeds = tuple(search_seeds)
        self._run_many = run_many
        self._sessions = sessions
        self._intents = intents
        self._read_summary = read_summary
        self._clock = clock
        self._simulate = simulate

    def run(self, actor: Actor) -> ProposalRecord:
        """One tuning pass now: a stored proposal (``no_change`` when nothing moves)."""
        now = self._clock()
        found = self._pass(self._intents.current(), now)
        with self._sessions.begin() as session:
            row = found.row(actor.name, now)
            session.add(row)
            session.flush()
            record = _record(row)
        return self._decide(record, found.auto, actor)

    def request(self, actor: Actor) -> ProposalRecord:
        """A pass for the API: with ``fabric.tuning.search: twin`` recorded ``queued`` for a
        worker to run (``run_queued``: the search takes minutes), else run now (``run``)."""
        current = self._intents.current()
        tuning = current.intent.fabric.tuning
        if tuning.mode is TuningMode.OFF or tuning.search is not TuningSearch.TWIN:
            return self.run(actor)
        now = self._clock()
        with self._sessions.begin() as session:
            lock_tuning_queue(session)
            busy = session.scalar(_searching().limit(1))
            if busy is not None:
                raise Conflict(
                    f"tuning proposal {busy.id} is {busy.state}: one searching pass at a time"
                )
            row = TuningProposal(
                state="queued",
                base_version=current.info.number,
                changes=[],
                held=[],
                diff=[],
                plans=[],
                proposed_intent=current.data,
                reason=QUEUED,
                window_start=now - timedelta(seconds=tuning.window_s),
                window_end=now,
                created_by=actor.name,
                created_at=now,
            )
            session.add(row)
            session.flush()
            return _record(row)

    def run_queued(self) -> ProposalRecord | None:
        """For the worker, outside the switch work lock: claim the oldest queued pass (or one
        left ``running`` by a worker that stopped), run it on the head intent and store what
        it found; None when none waits. Only the claim and the final write touch the
        database, the claim under a row lock no other worker waits for (``SKIP LOCKED``). A
        head that moved during the search makes the pass ``stale``: it proposes nothing on
        top of a version it did not read."""
        now = self._clock()
        claimed = self._claim(now)
        if claimed is None:
            return None
        proposal_id, created_by = claimed
        try:
            current = self._intents.current()
            found = self._pass(current, now)
        except SluiceError as error:  # tuning turned off, a rejected head, Prometheus away
            log.warning("tuning: queued pass %d found nothing: %s", proposal_id, error)
            return self._store(proposal_id, None, f"tuner: no pass: {error}")
        moved = self._intents.head()
        if moved != current.info.number:
            reason = (
                f"tuner: the intent moved from version {current.info.number} to {moved} "
                "during the search: nothing proposed on top of a version the pass did not "
                "read (run the tuner again)"
            )
            log.info("tuning: queued pass %d is stale: %s", proposal_id, reason)
            return self._store(proposal_id, found.stale(reason), reason)
        record = self._store(proposal_id, found, found.reason)
        return self._decide(record, found.auto, Actor(created_by, f"tuning-pass-{proposal_id}"))

    def _claim(self, now: datetime) -> tuple[int, str] | None:
        """The oldest queued pass, or one ``running`` longer than its search can last, set
        ``running`` by this worker: its id and who asked for it."""
        with self._sessions() as session:
            if session.scalar(_searching().limit(1)) is None:
                return None  # the worker asks every round: no intent read while none waits
        left_after = timedelta(seconds=self.settings().window_s + self._search_margin_s)
        left = (TuningProposal.state == "running") & (TuningProposal.started_at < now - left_after)
        with self._sessions.begin() as session:
            row = session.scalars(
                select(TuningProposal)
                .where((TuningProposal.state == "queued") | left)
                .order_by(TuningProposal.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if row is None:
                return None
            row.state, row.started_at = "running", now
            row.reason = f"tuner: searching since {now.isoformat()}"
            return row.id, row.created_by

    def _store(self, proposal_id: int, found: _Pass | None, reason: str) -> ProposalRecord:
        """The claimed pass's outcome written over its row (``no_change`` with ``reason``
        when it found nothing to store)."""
        with self._sessions.begin() as session:
            row = self._row(session, proposal_id)
            if found is None:
                row.state, row.reason = "no_change", reason
            else:
                for name, value in found.values.items():
                    setattr(row, name, value)
            session.flush()
            return _record(row)

    def _decide(self, record: ProposalRecord, auto: bool, actor: Actor) -> ProposalRecord:
        """In ``auto`` mode a pending proposal is approved at once, by the tuner."""
        if record.state == "pending" and auto:
            return self.approve(record.id, Actor(TUNER, actor.request_id))
        return record

    def _pass(self, current: IntentRecord, now: datetime) -> _Pass:
        """One pass over the head intent ``current`` and the telemetry window ending ``now``:
        what the proposal's row holds; nothing stored but the outcomes of earlier proposals."""
        tuning = current.intent.fabric.tuning
        if tuning.mode is TuningMode.OFF:
            raise Conflict("fabric.tuning.mode is off: set it to propose or auto to tune")
        summary = self._read_summary(now, tuning.window_s)
        # Before the head is judged: a rolled-back version's outcome is recorded even while
        # the head it left is one the tuner does not build on.
        self.record_outcomes(summary, now)
        if current.info.rejected_at is not None:
            raise Conflict(
                f"intent version {current.info.number} was rejected "
                f"({current.info.rejected_reason}): the tuner does not build on it"
            )
        last_changed, last_applied = self._history()
        changes = propose(
            current.intent,
            summary,
            now_s=now.timestamp(),
            last_changed=last_changed,
            sized=self._sized(current.intent),
            last_applied=last_applied,
        )
        search: SearchPass | None = None
        aside: list[Change] = []  # the rules' verdicts the search overrides, reported held
        if tuning.search is TuningSearch.TWIN:
            timing = Timing(
                now.timestamp(),
                last_changed,
                tuning.min_interval_s,
                budget_s=tuning.window_s,
                elapsed=lambda: (self._clock() - now).total_seconds(),
            )
            search = self._search(current.intent, summary, timing)
            aside = [_owned_by_search(c) for c in changes if searched(c.parameter)]
            changes = [c for c in changes if not searched(c.parameter)] + list(search.changes)
            changes += [search.record] if search.record is not None else []
        result = apply_changes(current.intent, changes)
        proposed = dump_intent(result.intent)
        applied = list(result.applied)
        refused = self._intents.rejected_like(proposed) if applied else None
        if refused is not None:
            # The same intent a rollback refused: not proposed again.
            applied = []
            proposed = current.data
        applied_ids, wanted = {id(c) for c in applied}, {id(c) for c in result.applied}
        held = [
            _held(c, refused if id(c) in wanted else None)
            for c in [*changes, *aside]
            if id(c) not in applied_ids
        ]
        plans = switch_plans(current.intent, result.intent) if applied else []
        flapping = ports_taken_down(plans)
        reason = (
            reason_for(applied)
            if applied
            else _refused_reason(refused)
            if refused is not None
            else "tuner: no change"
        )
        if search is not None and search.refused is not None:
            reason += f" [search: {search.refused}]"
        auto = tuning.mode is TuningMode.AUTO and not flapping
        if tuning.mode is TuningMode.AUTO and flapping and applied:
            reason += f" [auto mode left it for an operator: it takes ports down on {flapping}]"
            log.warning("tuning: proposal not approved automatically: %s", reason)
        values: dict[str, Any] = {
            "state": "pending" if applied else "no_change",
            "base_version": current.info.number,
            "new_version": None,
            "changes": [c.as_dict() for c in applied],
            "held": held,
            "diff": intent_diff(current.data, proposed),
            "plans": plans,
            "proposed_intent": proposed,
            "reason": reason,
            "window_start": datetime.fromtimestamp(summary.start_s, UTC),
            "window_end": datetime.fromtimestamp(summary.end_s, UTC),
            "baseline": baseline_of(summary.small_flow_fct),
        }
        return _Pass(values, auto, current.data)

    def record_outcomes(self, summary: TelemetrySummary, now: datetime) -> list[int]:
        """Record the outcome of each approved proposal with a prediction whose rollout has
        ended: completed, compared over ``summary`` once its window starts after the
        rollout's end (else left for a later pass); rolled back, or another version rolled out
        since, recorded with no comparison. The ids recorded."""
        recorded: list[int] = []
        with self._sessions.begin() as session:
            for row in session.scalars(_awaiting_outcome().order_by(TuningProposal.id)):
                prediction = prediction_of(row.changes)
                found = _outcome(session, row, prediction, summary) if prediction else None
                if found is None:
                    continue
                row.outcome, row.outcome_at = found.as_dict(), now
                recorded.append(row.id)
                log.info(
                    "tuning: proposal %d, version %s, rollout %d: predicted vs measured "
                    "small-flow p99 FCT over %s .. %s: %s",
                    row.id,
                    row.new_version,
                    found.rollout_id,
                    _when(found.window_start_s),
                    _when(found.window_end_s),
                    describe(found),
                )
        return recorded

    def settling(self) -> str | None:
        """A proposal with a prediction whose rollout completed less than one tuning window
        ago: its outcome needs a window wholly under its version, so no pass (and no change)
        should come before it. None when nothing waits."""
        window_s = self.settings().window_s
        now = self._clock()
        with self._sessions() as session:
            for row in session.scalars(_awaiting_outcome()):
                rollout = _newest_rollout(session, row.new_version)
                if not prediction_of(row.changes) or rollout is None:
                    continue
                finished = rollout.finished_at
                if rollout.state != "completed" or finished is None:
                    continue
                waiting = not settled(finished.timestamp(), now.timestamp() - window_s)
                if waiting and _later_rollout(session, rollout) is None:
                    return (
                        f"proposal {row.id}'s outcome waits for a {window_s:g} s window "
                        f"after rollout {rollout.id} completed at {finished.isoformat()}"
                    )
        return None

    def _search(self, intent: Intent, summary: TelemetrySummary, timing: Timing) -> SearchPass:
        if self._simulate is None:
            return refused("this service has no twin to search in (settings.twin.netsim)", {})
        return search_in_twin(
            intent,
            summary,
            self._simulate,
            kinds=port_kinds(intent),
            timing=timing,
            seeds=self._search_seeds,
            run_many=self._run_many,
        )

    def settings(self) -> Tuning:
        """The head intent's ``fabric.tuning``."""
        return self.intent().fabric.tuning

    def intent(self) -> Intent:
        """The head intent."""
        return self._intents.current().intent

    def tick(self, actor: Actor) -> ProposalRecord | None:
        """For a periodic caller (the worker): one pass when one is due; None otherwise."""
        return self.run(actor) if self.due() else None

    def due(self) -> bool:
        """Whether tuning is on and the last pass is at least ``window_s`` old, so consecutive
        passes read windows that do not overlap."""
        tuning = self._intents.current().intent.fabric.tuning
        if tuning.mode is TuningMode.OFF:
            return False
        with self._sessions() as session:
            if session.scalar(_searching().limit(1)) is not None:
                return False  # a searching pass is queued or running: it is this window's
            last = session.scalar(select(func.max(TuningProposal.created_at)))
        return last is None or (self._clock() - last).total_seconds() >= tuning.window_s

    def list(self, limit: int = 50) -> list[ProposalRecord]:
        with self._sessions() as session:
            rows = session.scalars(
                select(TuningProposal).order_by(TuningProposal.id.desc()).limit(limit)
            )
            return [_record(row) for row in rows]

    def get(self, proposal_id: int) -> ProposalRecord:
        with self._sessions() as session:
            return _record(self._row(session, proposal_id))

    def approve(self, proposal_id: int, actor: Actor) -> ProposalRecord:
        """Write the proposal's intent as the next version, authored by ``tuner``."""
        with self._sessions.begin() as session:
            row = self._pending(session, proposal_id)
            head = self._intents.head()
            if head != row.base_version:
                row.state = "stale"
                row.decided_by, row.decided_at = actor.name, self._clock()
                stale = Conflict(
                    f"proposal {proposal_id} was made on intent version {row.base_version}, "
                    f"the intent is now at {head}: run the tuner again"
                )
            else:
                stale = None
                written = self._intents.replace(
                    row.proposed_intent,
                    expected=row.base_version,
                    actor=Actor(TUNER, actor.request_id),
                    reason=f"{row.reason} [proposal {proposal_id}, approved by {actor.name}]",
                )
                row.state = "approved"
                row.new_version = written.version.number
                row.decided_by, row.decided_at = actor.name, self._clock()
            record = _record(row)
        if stale is not None:
            raise stale
        return record

    def reject(self, proposal_id: int, actor: Actor) -> ProposalRecord:
        with self._sessions.begin() as session:
            row = self._pending(session, proposal_id)
            row.state = "rejected"
            row.decided_by, row.decided_at = actor.name, self._clock()
            return _record(row)

    def _sized(self, intent: Intent) -> Intent:
        """The intent with each lossless port's cable as the switches now report it: what a
        version written from the proposal is sized, and its Kmax checked, for."""
        with self._sessions() as session:
            return sized_intent(intent, cable_sizing(intent, partial(fabric_discoveries, session)))

    def _history(self) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """When each parameter was last changed by an approved proposal (Unix seconds), and
        that change as the proposal stored it (its evidence: what the rule read then)."""
        times: dict[str, float] = {}
        last: dict[str, dict[str, Any]] = {}
        with self._sessions() as session:
            rows = session.scalars(
                select(TuningProposal)
                .where(TuningProposal.state == "approved")
                .order_by(TuningProposal.id)
            )
            for row in rows:
                at = (row.decided_at or row.created_at).timestamp()
                for change in row.changes:
                    key = str(change["parameter"])
                    if key not in times or at >= times[key]:
                        times[key], last[key] = at, change
        return times, last

    @staticmethod
    def _row(session: Session, proposal_id: int) -> TuningProposal:
        row = session.get(TuningProposal, proposal_id)
        if row is None:
            raise NotFound(f"tuning proposal {proposal_id} does not exist")
        return row

    def _pending(self, session: Session, proposal_id: int) -> TuningProposal:
        row = self._row(session, proposal_id)
        if row.state != "pending":
            raise Conflict(f"tuning proposal {proposal_id} is {row.state}, not pending")
        return row


def _searching() -> Any:
    """Passes queued for a worker or being run by one."""
    return select(TuningProposal).where(TuningProposal.state.in_(SEARCHING_STATES))


def _awaiting_outcome() -> Any:
    """Approved proposals the search made (only those carry a prediction) with no outcome yet:
    a rule's proposal is never looked at again, however many there are."""
    return select(TuningProposal).where(
        TuningProposal.state == "approved",
        TuningProposal.new_version.is_not(None),
        TuningProposal.outcome.is_(None),
        TuningProposal.changes.contains([{"evidence": {"rule": SEARCH_RULE}}]),
    )


def _newest_rollout(session: Session, version: int | None) -> Rollout | None:
    return session.scalars(
        select(Rollout).where(Rollout.to_version == version).order_by(Rollout.id.desc()).limit(1)
    ).first()


def _outcome(
    session: Session,
    row: TuningProposal,
    prediction: tuple[Predicted, ...],
    summary: TelemetrySummary,
) -> Outcome | None:
    """The outcome of ``row`` as of ``summary``; None while there is none to record yet."""
    rollout = _newest_rollout(session, row.new_version)
    if rollout is None:
        return None  # not rolled out (yet): an approved proposal an operator rolls out
    if rollout.state == "rolled_back":
        return not_compared(
            "rolled_back",
            f"rollout {rollout.id} of version {row.new_version} was rolled back "
            f"({rollout.reason or 'no reason recorded'}): its version did not stay, nothing "
            "to compare",
            rollout.id,
        )
    if rollout.state != "completed" or rollout.finished_at is None:
        return None  # still on its way (a halted rollout may yet resume or roll back)
    later = _later_rollout(session, rollout)
    if later is not None:
        return not_compared(
            "superseded",
            f"rollout {later.id} (version {later.to_version}) started before a tuning window "
            f"wholly under version {row.new_version}: nothing to compare",
            rollout.id,
        )
    if not settled(rollout.finished_at.timestamp(), summary.start_s):
        return None
    return compare(
        prediction,
        from_baseline(row.baseline or {}),
        summary.small_flow_fct,
        rollout_id=rollout.id,
        window=(summary.start_s, summary.end_s),
    )


def _later_rollout(session: Session, rollout: Rollout) -> Rollout | None:
    """The first rollout started after ``rollout``: from then on the fabric ran another
    version."""
    return session.scalar(
        select(Rollout).where(Rollout.id > rollout.id).order_by(Rollout.id).limit(1)
    )


def _when(at_s: float | None) -> str:
    return "-" if at_s is None else datetime.fromtimestamp(at_s, UTC).isoformat()


def _owned_by_search(change: Change) -> Change:
    """A rule's lambda or weight verdict, held: under ``search: twin`` the search moves them
    (one its own guard held keeps that reason)."""
    if change.held is not None:
        return change
    return replace(change, held=SEARCH_OWNS)


def netsim_search(binary: Path, timeout_s: float) -> Simulate:
    """The search's twin: netsim over ``binary``, ``fabric.tuning.search_flows`` flows of the
    traffic the summary describes, on the traffic's seed, each run killed at ``timeout_s``."""
    run = run_twin_with(binary, timeout_s)

    def simulate(intent: Intent, traffic: Traffic) -> TwinReading:
        flows = intent.fabric.tuning.search_flows
        request = Request(traffic.workload, traffic.load, flows, traffic.seed, traffic.mix)
        try:
            result = run(intent, request, lambda line: log.debug("twin: %s", line))
        except (NetsimFailed, TwinInputInvalid) as error:
            raise TwinUnavailable(str(error)) from error
        return twin_reading(result)

    return simulate


def fan_out(max_parallel: int) -> RunMany:
    """A candidate's seeds run side by side, at most ``max_parallel`` netsim processes at once
    (``settings.twin.parallel``): each run is a subprocess, so threads wait on them."""
    checked_parallel(max_parallel)

    def run_many(
        run: Callable[[Traffic], TwinReading], drawn: Sequence[Traffic]
    ) -> list[TwinReading]:
        return map_parallel(run, drawn, max_parallel=max_parallel, name="twin-seed")

    return run_many


def search_seeds(count: int) -> tuple[int, ...]:
    """The seeds the search runs each candidate on: 1 .. ``count``."""
    return tuple(range(1, count + 1))


def twin_reading(result: dict[str, Any]) -> TwinReading:
    """The figures the search reads from a twin result (``controller.twin.results.result``)."""
    queues = tuple(
        TwinQueue(
            q["name"],
            q["kind"],
            q["utilisation"],
            q["class_utilisation"],
            q["mark_fraction"],
            q["occupancy_p50_bytes"],
            q["occupancy_p95_bytes"],
        )
        for q in result["queues"]
    )
    small = {row["name"]: float(row["p99_us"]) for row in result["small_classes"] if row["flows"]}
    return TwinReading(queues, small)


def switch_plans(before: Intent, after: Intent) -> list[dict[str, Any]]:
    """What the proposal would write on each switch: the CONFIG_DB plan from the compiled
    current intent to the compiled proposed one (switches with nothing to do left out).
    Host-side changes (QJUMP levels) show in the intent diff; the host rollout plans them."""
    old = compile_dialects(before)
    plans = diff_fleet(compile_dialects(after), old, owned=old)
    return [plan.as_dict() for _, plan in sorted(plans.items()) if plan.ops]


def ports_taken_down(plans: list[dict[str, Any]]) -> str:
    """``leaf1 (Ethernet0, Ethernet4), leaf2 (Ethernet0)``: where the plans take ports down;
    empty when they take none."""
    return ", ".join(
        f"{plan['switch']} ({', '.join(plan['ports_down'])})"
        for plan in plans
        if plan.get("ports_down")
    )


def _held(change: Change, refused: VersionInfo | None = None) -> dict[str, Any]:
    """A change that is not in the proposal, with why: its own guard, the intent, or a
    rejected version with the same content (``refused``)."""
    found = change.as_dict()
    if found["held"] is None:
        found["held"] = (
            _refused_reason(refused)
            if refused is not None
            else "the fabric has one lambda: it follows the largest any marking group asks for"
            if change.parameter.startswith("ecn_lambda/")
            else "not expressible in the intent"
        )
    return found


def _refused_reason(refused: VersionInfo) -> str:
    return (
        f"tuner: the proposed intent is version {refused.number}'s, which was rejected "
        f"({refused.rejected_reason}): not proposed again"
    )


def _record(row: TuningProposal) -> ProposalRecord:
    return ProposalRecord(
        row.id,
        row.state,
        row.base_version,
        row.new_version,
        list(row.changes),
        list(row.held),
        list(row.diff),
        list(row.plans),
        row.reason,
        row.window_start,
        row.window_end,
        row.created_by,
        row.created_at,
        row.decided_by,
        row.decided_at,
        row.baseline,
        row.outcome,
        row.outcome_at,
        [asdict(p) for p in prediction_of(row.changes)],
        row.started_at,
    )
