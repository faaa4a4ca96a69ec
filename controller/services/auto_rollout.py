"""The tuner's ``auto`` mode closed into a loop: each periodic tuning pass that wrote a new
intent version (``TuningService.tick``) starts a health-gated switch rollout of it, and, when
a change touches what the hosts run (QJUMP, PIAS), a host apply of it under the same gates
(docs/tuning.md).

The rollout's batches and gates come from the intent's ``fabric.tuning.rollout``
(``auto_gates``; docs/tuning.md "Auto mode's rollout"): by default batches of one switch, each
soaked 120 s, must not raise their drops by more than half over the baseline read before
them, and no agent may be on its fallback (an idle agent is not; with ``agent_fallback:
no_increase`` a fabric with faulty agents may start, but each batch must end with none on its
switches); a failure rolls back every switch the rollout reached, so an automatic change
never stays half applied. Where the hosts report flow completion times (``fabric.
host_exporter``), every class whose small flows finished in the last tuning window is gated
on their p99 FCT too: held to the class's objective when the intent declares one, else at
most ``fct_max_increase_pct`` above the baseline. A class that finished none has nothing to
compare and gets no gate (a gate with no data fails, and would block every change). The host
half follows the switch half: once the tuner's rollout has completed (the switches run the
version), a later tick starts the host apply, staged the same way (batches of ``batch_size``
hosts, the same gates read over the fabric's switches, the same ``on_fail``; a failed gate
puts its hosts back to the version they ran before, ``controller/rollout/hosts.py``). One
change at a time is soaking, so a gate that fails names the half that hurt; a switch rollout
that rolled back or halted leaves the hosts as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from controller.errors import Conflict, NotFound
from controller.intent.models import Intent, TunerRollout
from controller.rollout.gates import (
    Comparison,
    Gate,
    GatePolicy,
    Reader,
    default_gate_name,
    window_text,
)
from controller.services.common import Actor
from controller.services.host_runs import HostRunService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.services.tuning import TUNER, ProposalRecord, TuningService

log = logging.getLogger(__name__)


def auto_gates(
    settings: TunerRollout, fct_classes: Mapping[str, float | None] | None = None
) -> GatePolicy:
    """The gate policy of an auto-mode rollout, from ``fabric.tuning.rollout``. With
    ``agent_fallback: no_increase`` the fallback gate compares with its baseline, so the
    pre-check lets a fabric with faulty agents start; a batch still passes only with none
    (faults do not pass by standing still, ``controller/rollout/gates.py``). ``fct_classes``:
    the classes to gate on their small flows' p99 FCT, each with its objective in us (None:
    relative to the baseline, ``fct_max_increase_pct``)."""
    fallback: Comparison = "absolute" if settings.agent_fallback == "none" else "max_increase_pct"
    fct = tuple(
        Gate(
            default_gate_name(FCT_BUILTIN, name),
            settings.fct_max_increase_pct if objective is None else objective,
            "max_increase_pct" if objective is None else "objective",
            builtin=FCT_BUILTIN,
            service_class=name,
        )
        for name, objective in sorted((fct_classes or {}).items())
    )
    return GatePolicy(
        gates=(
            Gate("drops", settings.drops_max_increase_pct, "max_increase_pct", builtin="drops"),
            Gate("agent_fallback", 0.0, fallback, builtin="agent_fallback"),
            *fct,
        ),
        soak_s=settings.soak_s,
        on_fail=settings.on_fail,
    )


FCT_BUILTIN = "fct_p99_small"


def small_flows_finished(service_class: str, window_s: float) -> str:
    """PromQL: how many of the class's small flows the hosts saw finish in the window."""
    return (
        "sum(increase(sluice_host_flow_completion_seconds_count"
        f'{{class="{service_class}",size="small"}}[{window_text(window_s)}]))'
    )


def fct_classes(intent: Intent, read: Reader | None) -> dict[str, float | None]:
    """The classes whose small flows the hosts saw finish in the last tuning window (only
    with ``fabric.host_exporter`` on), each with its ``objective.p99_fct_us_small``."""
    if intent.fabric.host_exporter is None or read is None:
        return {}
    window_s = intent.fabric.tuning.window_s
    return {
        c.name: None if c.objective is None else c.objective.p99_fct_us_small
        for c in intent.service_classes
        if (read(small_flows_finished(c.name, window_s)) or 0.0) > 0.0
    }


# What an intent that says nothing about it gets.
AUTO_GATES = auto_gates(TunerRollout())
# A host apply in these states is changing the hosts (one at a time, controller/store/models.py).
HOST_APPLY_ACTIVE = ("pending", "running", "rolling_back")
# Parameters the hosts run (``controller/tuning/``: ``qjump/...``, ``pias/...``).
HOST_PARAMETERS = ("qjump", "pias")


def touches_hosts(record: ProposalRecord) -> bool:
    return any(
        str(change.get("parameter", "")).split("/")[0] in HOST_PARAMETERS
        for change in record.changes
    )


class AutoTuner:
    """``tick`` for the worker: one tuning pass when due; in ``auto`` mode, the gated
    rollout of the version it wrote. How many things it started (0: nothing due)."""

    def __init__(
        self,
        tuning: TuningService,
        rollouts: RolloutService,
        host_runs: HostRunService | None,
        gates: Reader | None,
        policy: GatePolicy | None = None,
    ) -> None:
        """``policy`` overrides the intent's ``fabric.tuning.rollout`` gates (None: use it)."""
        self._tuning = tuning
        self._rollouts = rollouts
        self._host_runs = host_runs
        self._gates = gates
        self._policy = policy
        # A host half whose pre-check refused it: tried again after the next tuning pass, not
        # every worker round.
        self._refused: int | None = None

    def tick(self) -> int:
        """The host half of the last change when due, then a tuning pass when due, unless the
        fabric is still changing: while a switch rollout is unfinished (its version may yet be
        rolled back and rejected) or a host apply runs, no pass builds on the head and none
        reads a window of a fabric half changed."""
        actor = Actor(TUNER, "worker-tuning")
        followed = self.hosts_after_switches(actor)
        try:
            # Whether a pass is due first: the worker asks every round, and with tuning off
            # (or its window not yet over) the fabric's rollouts and host runs are not read.
            if not self._tuning.due():
                return followed
            settling = self._settling()
            if settling is not None:
                log.debug("tuning: no pass while %s", settling)
                return followed
            # With ``search: twin`` the pass is only queued here (inside the switch work
            # lock, a short write); ``search_once`` runs it outside the lock.
            record = self._tuning.request(actor)
        except (Conflict, NotFound) as error:
            log.info("tuning: pass skipped: %s", error)
            return followed
        self._refused = None
        return followed + 1 + self._roll_out_approved(record, actor)

    def search_once(self) -> int:
        """For the worker, outside the switch work lock: one queued searching pass run
        (``TuningService.run_queued``); in ``auto`` mode, a version it wrote for a pass the
        tuner itself queued gets its gated rollout, as ``tick`` starts one. 0: none waits."""
        record = self._tuning.run_queued()
        if record is None:
            return 0
        if record.created_by != TUNER:
            return 1  # an operator's pass (the API's): approved in auto mode, rolled out by them
        return 1 + self._roll_out_approved(record, Actor(TUNER, "worker-tuning"))

    def _roll_out_approved(self, record: ProposalRecord, actor: Actor) -> int:
        if record.state != "approved" or record.new_version is None:
            return 0
        return self.roll_out(record, actor)

    def _settling(self) -> str | None:
        """What is still changing the fabric, or a change whose outcome is not yet measured
        (``TuningService.settling``), if anything."""
        active = self._rollouts.active()
        if active is not None:
            return f"rollout {active.id} is {active.state}"
        waiting = self._tuning.settling()
        if waiting is not None:
            return waiting
        runs = [] if self._host_runs is None else self._host_runs.runs(limit=5, offset=0).items
        applying = [r for r in runs if r.mode == "apply" and r.state in HOST_APPLY_ACTIVE]
        return f"host apply {applying[0].id} is {applying[0].state}" if applying else None

    def _policy_now(self) -> tuple[TunerRollout, GatePolicy]:
        intent = self._tuning.intent()
        settings = intent.fabric.tuning.rollout
        if self._policy is not None:
            return settings, self._policy
        return settings, auto_gates(settings, fct_classes(intent, self._gates))

    def roll_out(self, record: ProposalRecord, actor: Actor) -> int:
        """Start the gated rollout of ``record``'s version; a change the hosts run gets its
        host apply once that rollout has completed (``hosts_after_switches``)."""
        settings, gates = self._policy_now()
        policy = RolloutPolicy(
            to_version=record.new_version, batch_size=settings.batch_size, gates=gates
        )
        try:
            started = self._rollouts.start(policy, actor=actor, gates=self._gates)
        except Conflict as error:
            log.warning("tuning: proposal %d: no rollout started: %s", record.id, error)
            return 0
        log.info("tuning: proposal %d: rollout %d started", record.id, started.id)
        return 1

    def hosts_after_switches(self, actor: Actor) -> int:
        """The host half of the newest auto-mode change the hosts run: started (1) once the
        newest rollout has completed at its version or a later one, unless a host apply of that
        version or a later one exists already (one attempt: a rolled-back host apply is not
        retried). 0 while the switches are still on their way, or when they did not get there;
        after a pre-check refused it, 0 until the next tuning pass."""
        if self._host_runs is None:
            return 0
        record = next((r for r in self._tuning.list(limit=20) if _auto_host_change(r)), None)
        if record is None or record.new_version is None:
            return 0
        version = record.new_version
        if self._refused == version:
            return 0
        newest = self._rollouts.list(limit=1, offset=0).items
        if not newest or newest[0].state != "completed" or newest[0].to_version < version:
            return 0
        runs = self._host_runs.runs(limit=5, offset=0).items
        if any(r.mode == "apply" and r.intent_version >= version for r in runs):
            return 0
        settings, gates = self._policy_now()
        try:
            run = self._host_runs.start_apply(
                actor=actor, batch_size=settings.batch_size, gates=gates, reader=self._gates
            )
        except Conflict as error:
            log.warning("tuning: proposal %d: no host apply started: %s", record.id, error)
            self._refused = version
            return 0
        log.info("tuning: proposal %d: host apply %d started", record.id, run.id)
        return 1


def _auto_host_change(record: ProposalRecord) -> bool:
    """A change auto mode applied (approved by the tuner itself) that the hosts run."""
    approved = record.state == "approved" and record.decided_by == TUNER
    return approved and record.new_version is not None and touches_hosts(record)
