"""The tuner's ``auto`` mode closed into a loop: each periodic tuning pass that wrote a new
intent version (``TuningService.tick``) starts a health-gated switch rollout of it, and, when
a change touches what the hosts run (QJUMP, PIAS), a host apply of it under the same gates
(docs/tuning.md).

The rollout's batches and gates come from the intent's ``fabric.tuning.rollout``
(``auto_gates``; docs/tuning.md "Auto mode's rollout"): by default batches of one switch, each
soaked 120 s, must not raise their drops by more than half over the baseline read before
them, and no agent may be on its fallback (or, with ``agent_fallback: no_increase``, no more
queues than before the batch); a failure rolls back every switch the rollout
reached, so an automatic change never stays half applied. The host half follows the switch
half: once the tuner's rollout has completed (the switches run the version), a later tick starts
the host apply, staged the same way (batches of ``batch_size`` hosts, the same gates read over
the fabric's switches, the same ``on_fail``; a failed gate puts its hosts back to the version
they ran before, ``controller/rollout/hosts.py``). One change at a time is soaking, so a gate
that fails names the half that hurt; a switch rollout that rolled back or halted leaves the
hosts as they are.
"""

from __future__ import annotations

import logging

from controller.errors import Conflict, NotFound
from controller.intent.models import TunerRollout
from controller.rollout.gates import Comparison, Gate, GatePolicy, Reader
from controller.services.common import Actor
from controller.services.host_runs import HostRunService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.services.tuning import TUNER, ProposalRecord, TuningService

log = logging.getLogger(__name__)


def auto_gates(settings: TunerRollout) -> GatePolicy:
    """The gate policy of an auto-mode rollout, from ``fabric.tuning.rollout``. With
    ``agent_fallback: no_increase`` the fallback gate compares with its baseline (0 % more):
    a switch whose agent already waits on counters (an idle one) does not block a change."""
    fallback: Comparison = "absolute" if settings.agent_fallback == "none" else "max_increase_pct"
    return GatePolicy(
        gates=(
            Gate("drops", settings.drops_max_increase_pct, "max_increase_pct", builtin="drops"),
            Gate("agent_fallback", 0.0, fallback, builtin="agent_fallback"),
        ),
        soak_s=settings.soak_s,
        on_fail=settings.on_fail,
    )


# What an intent that says nothing about it gets.
AUTO_GATES = auto_gates(TunerRollout())
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
        actor = Actor(TUNER, "worker-tuning")
        followed = self.hosts_after_switches(actor)
        try:
            record = self._tuning.tick(actor)
        except (Conflict, NotFound) as error:
            log.info("tuning: pass skipped: %s", error)
            return followed
        if record is None:
            return followed
        self._refused = None
        if record.state != "approved" or record.new_version is None:
            return followed + 1
        return followed + 1 + self.roll_out(record, actor)

    def _policy_now(self) -> tuple[TunerRollout, GatePolicy]:
        settings = self._tuning.settings().rollout
        return settings, self._policy or auto_gates(settings)

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
