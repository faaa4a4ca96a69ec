"""The reconciliation loop: keep every switch on the version last rolled out to it.

Each pass, for every switch a rollout has verified: Get the tables sluice owns, plan from
what it runs to the desired state of its version (owned = that same desired state, the last
thing sluice applied), and turn the plan into drift events, one per field (what, where,
expected and observed). Then, per the fabric's ``reconcile.mode``, write the plan and
verify it (``correct``) or only record (``alert``). A repair that takes a port down (a
``QUEUE``, ``BUFFER_QUEUE`` or ``PORT_QOS_MAP`` change: SONiC's config updater flaps the
port, ``controller/sonic/gcu.py``) is written only when ``reconcile.allow_port_flaps`` says so;
otherwise the run is ``alerted`` and names the ports. ``PFC_WD`` entries are not written back
to a switch whose watchdog table is gone whole (``pfcwd stop`` after a watchdog started with
``pfcwd start`` alone, a ``config reload``): SONiC's config updater refuses the table's first
entry (``controller/sonic/gcu.py`` ``watchdog_not_started``), so the rest of the repair is
written, the watchdog's drift is alerted with how to start it, and the loop logs that once per
switch until the watchdog runs again. Thresholds the on-switch agent moves
(``SLUICE_Q_*`` WRED profiles) are planned around by ``plan_switch`` and so are never
drift. Every switch gets a run record, whatever happened.

A switch is first compared by table digests (``controller/sonic/digest.py``): the tables'
JSON answers are hashed as they came, and when every owned table's digest equals the
desired one the switch is converged without decoding an entry (its running state is then
the desired state itself). Any difference, or a target without digests, takes the full
path: decode every entry, plan, drift.

Passes are spaced ``interval_s`` apart, each wait drawn uniformly within ± ``jitter_pct``:
many controllers (or one restarted many times) then do not read every switch in lockstep.
The clock, the random source, the switches and the store are passed in.

With a ``dispatch`` (engine mode, ``controller/rollout/engine.py``) a due pass runs nothing
itself: it hands the targets' names to ``dispatch``, which queues one job per switch for any
worker to take, and each job calls ``reconcile_now`` for its switch, recording its run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from controller.errors import NotFound, SouthboundError, SouthboundUnreachable
from controller.intent.models import Dialect, Reconcile, ReconcileMode, Switch
from controller.reconcile.access import OWNED_TABLES, SwitchAccess, TableReader
from controller.reconcile.fanout import checked_parallel, map_parallel
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.digest import AnswerDigests, TableDigests, changed_tables, table_digests
from controller.sonic.gcu import (
    WATCHDOG_TABLE,
    WATCHDOG_THEN_REPAIRED,
    describe_port_flaps,
    watchdog_not_started,
)
from controller.sonic.model import Plan, SwitchConfig
from controller.southbound.gnmi import TableAnswers

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
# dispatch(switch names, spacing_s): queue a pass over those switches unless any worker queued
# one in the last spacing_s seconds; returns how many switch jobs were queued.
PassDispatch = Callable[[Sequence[str], float], int]
RunStatus = Literal["converged", "corrected", "alerted", "failed", "unreachable", "unknown"]


@dataclass(frozen=True, slots=True)
class Drift:
    """One difference: ``field`` None for a whole entry; ``expected``/``observed`` None
    when the value is (or should be) absent."""

    table: str
    key: str
    field: str | None
    expected: str | None
    observed: str | None


@dataclass(frozen=True, slots=True)
class Target:
    """A switch to reconcile: its definition, the version it runs, that version's tables.
    ``digests``: those tables' digests (``table_digests(desired)``), which let a pass find
    the switch converged without decoding its answer; None: always the full path. Targets
    of one switch shape may share one ``desired`` mapping: nothing here modifies it."""

    switch: Switch
    version: int
    desired: SwitchConfig
    digests: TableDigests | None = None


@dataclass(frozen=True, slots=True)
class Withheld:
    """Drift a run did not write though it may have written the rest (the watchdog's, on a
    switch whose config updater would refuse it), and why: alerted, whatever the run's
    status. ``drift`` is part of the run's own."""

    reason: str
    drift: tuple[Drift, ...]


@dataclass(frozen=True, slots=True)
class SwitchRun:
    switch: str
    version: int
    mode: ReconcileMode
    status: RunStatus
    drift: tuple[Drift, ...]
    started: datetime
    finished: datetime
    error: str | None = None  # the run's own words; a withheld repair's reason is apart
    running: SwitchConfig | None = field(default=None, repr=False)
    withheld: Withheld | None = None

    @property
    def message(self) -> str | None:
        """What the run says, as recorded: its own words, then why a repair was withheld."""
        said = [text for text in (self.error, self.withheld and self.withheld.reason) if text]
        return "; ".join(said) or None


class ReconcileStore(Protocol):
    """What the loop needs from persistence (``controller.services.reconcile``)."""

    def policy(self) -> Reconcile: ...

    def targets(self) -> list[Target]: ...

    def record(self, run: SwitchRun) -> None: ...


@runtime_checkable
class NamedTargets(Protocol):
    """A store that reads only the named switches' targets: an engine job reconciles one
    switch, and reading every target for each would make a pass quadratic in switches."""

    def targets_named(self, names: Collection[str]) -> list[Target]: ...


# --------------------------------------------------------------------------------------------
# pure parts


def drift_of(plan: Plan) -> list[Drift]:
    """The field-level differences a plan would repair (Op semantics in
    ``controller/sonic/model.py``): a value written differs from (or is missing in) what
    the switch has, a value removed is one it should not have."""
    found: list[Drift] = []
    for op in plan.ops:
        old = op.old_fields
        for name, value in op.fields.items():
            if old.get(name) != value:
                found.append(Drift(op.table, op.key, name, value, old.get(name)))
        for name in op.removed_fields:
            if name not in op.fields:
                found.append(Drift(op.table, op.key, name, None, old[name]))
        if op.kind == "delete" and op.whole_entry and not old:
            found.append(Drift(op.table, op.key, None, None, "present"))
    return found


def next_delay_s(policy: Reconcile, unit: float) -> float:
    """Seconds to the next pass given ``unit`` drawn from [0, 1): ``interval_s`` scaled by
    a factor uniform in [1 - j, 1 + j), j = ``jitter_pct`` / 100."""
    spread = policy.jitter_pct / 100.0
    return policy.interval_s * (1.0 + spread * (2.0 * unit - 1.0))


def hold_first_watchdog(
    plan: Plan, desired: SwitchConfig, observed: SwitchConfig
) -> tuple[Plan, Withheld] | None:
    """The repair without its ``PFC_WD`` ops, and what they leave unrepaired, when the
    switch runs no watchdog at all (None when it does, or the repair writes none): the
    rollout worker's check before it writes (``controller/rollout/switches.py``
    ``converge_switch``), made on this pass's read. Nothing else names ``PFC_WD`` (its key
    is the port), so the rest is written as it was planned."""
    if not any(op.table == WATCHDOG_TABLE for op in plan.ops):
        return None
    problem = watchdog_not_started(desired, observed, then=WATCHDOG_THEN_REPAIRED)
    if problem is None:
        return None
    held = Plan(plan.switch, tuple(op for op in plan.ops if op.table == WATCHDOG_TABLE))
    rest = Plan(plan.switch, tuple(op for op in plan.ops if op.table != WATCHDOG_TABLE))
    reason = f"{problem.path} not corrected: {problem.reason}"
    return rest, Withheld(reason, tuple(drift_of(held)))


def withheld_repair(plan: Plan) -> str:
    """Why a drift repair was not written: the ports it would take down, and how to allow it."""
    return (
        f"not corrected: the repair takes {len(plan.ports_down)} port(s) admin down and up "
        f"(port-critical changes, SONiC's config updater): {describe_port_flaps(plan.port_flaps)}"
        "; set fabric.reconcile.allow_port_flaps to let the loop repair it, or roll the "
        "version out again with allow_port_flaps"
    )


# --------------------------------------------------------------------------------------------
# one switch


def observed_digests(read: TableAnswers, answers: AnswerDigests) -> TableDigests | None:
    """The digest of every table a Get answered (tables without entries left out); None
    when some answer is not a JSON object or a table came in two forms: the caller then
    decodes it all."""
    from_text = answers.of_tables(read.raw)
    if from_text is None:
        return None
    decoded = table_digests(read.decoded)
    if from_text.keys() & decoded.keys():
        return None
    return {**from_text, **decoded}


def reconcile_switch(
    access: SwitchAccess,
    target: Target,
    mode: ReconcileMode,
    clock: Clock,
    *,
    answers: AnswerDigests | None = None,
    allow_port_flaps: bool = False,
) -> SwitchRun:
    """Read, diff, and correct or alert, for one switch; never raises for the switch's
    own failures (they become the run's status and error). With ``answers`` (and a target
    with digests, an access that is a ``TableReader``) the switch is compared by digest
    first, as the module says. A repair that takes ports down is only alerted unless
    ``allow_port_flaps``."""
    name, version = target.switch.name, target.version
    started = clock()

    def run(
        status: RunStatus,
        drift: Sequence[Drift] = (),
        error: str | None = None,
        running: SwitchConfig | None = None,
        withheld: Withheld | None = None,
    ) -> SwitchRun:
        finished = clock()
        return SwitchRun(
            name,
            version,
            mode,
            status,
            tuple(drift),
            started,
            finished,
            error,
            running,
            withheld,
        )

    try:
        if answers is not None and target.digests is not None and isinstance(access, TableReader):
            read = access.read_answers(target.switch, OWNED_TABLES)
            seen = observed_digests(read, answers)
            if seen is not None and not changed_tables(target.digests, seen):
                return run("converged", running=target.desired)
            observed = read.config()
            digests = (target.digests, seen) if seen is not None else None
        else:
            observed, digests = access.read(target.switch, OWNED_TABLES), None
    except SouthboundUnreachable as error:
        return run("unreachable", error=error.detail)
    except (SouthboundError, NotFound) as error:
        return run("failed", error=error.detail)
    plan = plan_switch(name, target.desired, observed, target.desired, digests)
    drift = drift_of(plan)
    if not drift:
        return run("converged", running=observed)
    if mode is ReconcileMode.ALERT:
        return run("alerted", drift)
    # An OpenConfig switch has no GCU (the rollout worker checks SONiC's alone).
    held = (
        hold_first_watchdog(plan, target.desired, observed)
        if target.switch.dialect is Dialect.SONIC
        else None
    )
    withheld: Withheld | None = None
    if held is not None:
        plan, withheld = held
        if plan.is_empty:
            return run("alerted", drift, withheld=withheld)
    if plan.port_flaps and not allow_port_flaps:
        return run("alerted", drift, error=withheld_repair(plan), withheld=withheld)
    result = access.apply(target.switch, plan)
    if result.status == "unknown":  # a Set that may still be applying: never sent again
        return run("unknown", drift, error=result.reason, withheld=withheld)
    if result.status != "applied_verified":
        failed = f"{result.status}: {result.reason}"
        return run("failed", drift, error=failed, withheld=withheld)
    # The apply verified every written entry by read-back: the switch now runs this.
    return run("corrected", drift, running=apply_plan(observed, plan), withheld=withheld)


# --------------------------------------------------------------------------------------------
# the loop


class ReconcileLoop:
    """Passes over every target; ``tick`` runs one when it is due."""

    def __init__(
        self,
        store: ReconcileStore,
        access: SwitchAccess,
        clock: Clock,
        rand: Callable[[], float],
        *,
        max_parallel: int = 8,
        dispatch: PassDispatch | None = None,
    ) -> None:
        self._max_parallel = checked_parallel(max_parallel)
        self._dispatch = dispatch
        self._store = store
        self._access = access
        self._clock = clock
        self._rand = rand
        # Digests of the answers seen, kept across passes: a switch that has not changed
        # answers the same bytes, which are then not decoded again.
        self._answers = AnswerDigests()
        # What each switch's withheld repair was last logged with: a watchdog the operator
        # stopped is said once, not on every pass until it is started again.
        self._withheld_logged: dict[str, str] = {}
        self.next_at: float | None = None  # monotonic seconds; None: the first tick runs

    def tick(self, now_s: float) -> list[SwitchRun] | None:
        """Run a pass if one is due at monotonic time ``now_s`` and schedule the next;
        None when none was due."""
        if self.next_at is not None and now_s < self.next_at:
            return None
        runs = self.run_pass()
        self.next_at = now_s + next_delay_s(self._store.policy(), self._rand())
        return runs

    def run_pass(self) -> list[SwitchRun]:
        """A pass over every target; with a ``dispatch``, queued as jobs instead (no runs
        here: each job records its own)."""
        targets = self._store.targets()
        if self._dispatch is None:
            return self._run(targets)
        # Each worker keeps its own schedule; one whose pass falls due within half the
        # shortest wait the policy allows after another worker's shares that pass instead
        # of queueing a second (half: clocks and rounds drift, a pass must not be skipped).
        spacing_s = next_delay_s(self._store.policy(), 0.0) / 2
        self._dispatch([t.switch.name for t in targets], spacing_s)
        return []

    def reconcile_now(self, *switch_names: str) -> list[SwitchRun]:
        """A pass over only the named switches (those that are targets): what a drift the
        watcher saw (``controller/reconcile/watch.py``) asks for, without reading the rest."""
        wanted = set(switch_names)
        if not wanted:
            return []
        if isinstance(self._store, NamedTargets):
            return self._run(self._store.targets_named(wanted))
        return self._run([t for t in self._store.targets() if t.switch.name in wanted])

    def _run(self, targets: list[Target]) -> list[SwitchRun]:
        policy = self._store.policy()
        runs = map_parallel(
            lambda target: self._reconcile(target, policy),
            targets,
            max_parallel=self._max_parallel,
            name="reconcile",
        )
        for one in runs:
            self._record(one)
        return runs

    def _reconcile(self, target: Target, policy: Reconcile) -> SwitchRun:
        return reconcile_switch(
            self._access,
            target,
            policy.mode,
            self._clock,
            answers=self._answers,
            allow_port_flaps=policy.allow_port_flaps,
        )

    def _record(self, run: SwitchRun) -> None:
        self._store.record(run)
        said = run.error  # its own words; a withheld repair's reason is logged once, here
        if run.withheld is not None:
            reason = run.withheld.reason
            if self._withheld_logged.get(run.switch) != reason:
                self._withheld_logged[run.switch] = reason
                log.warning("reconcile %s (version %d): %s", run.switch, run.version, reason)
            if run.status == "alerted" and said is None:
                return  # all the run has to say, and said above
        elif run.status in ("converged", "corrected") and run.switch in self._withheld_logged:
            del self._withheld_logged[run.switch]
            log.info("reconcile %s: its PFC watchdog runs again", run.switch)
        if run.status != "converged":
            log.info(
                "reconcile %s (version %d): %s, %d drift%s",
                run.switch,
                run.version,
                run.status,
                len(run.drift),
                f": {said}" if said else "",
            )
