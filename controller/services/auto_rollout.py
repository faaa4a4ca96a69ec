"""The tuner's ``auto`` mode closed into a loop: each periodic tuning pass that wrote a new
intent version (``TuningService.tick``) starts a health-gated switch rollout of it, and, when
a change touches what the hosts run (QJUMP, PIAS), a host apply of it under the same gates
(docs/tuning.md).

The rollout's batches and gates come from the intent's ``fabric.tuning.rollout``
(``auto_gates``; docs/tuning.md "Auto mode's rollout"): by default batches of one switch, each
soaked 120 s, must not raise their drops by more than half over the baseline read before
them, and no agent may be on its fallback (or, with ``agent_fallback: no_increase``, no more
queues than before the batch); a failure rolls back every switch the rollout
reached, so an automatic change never stays half applied. The host apply is staged the same
way (batches of ``batch_size`` hosts, the same gates read over the fabric's switches, the same
``on_fail``): a failed gate puts its hosts back to the version they ran before
(``controller/rollout/hosts.py``).
"""

from __future__ import annotations

import logging

from controller.errors import Conflict, NotFound
from controller.policy.models import TunerRollout
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

    def tick(self) -> int:
        actor = Actor(TUNER, "worker-tuning")
        try:
            record = self._tuning.tick(actor)
        except (Conflict, NotFound) as error:
            log.info("tuning: pass skipped: %s", error)
            return 0
        if record is None:
            return 0
        if record.state != "approved" or record.new_version is None:
            return 1
        return 1 + self.roll_out(record, actor)

    def roll_out(self, record: ProposalRecord, actor: Actor) -> int:
        """Start the gated rollout of ``record``'s version (and the hosts' apply if needed)."""
        settings = self._tuning.settings().rollout
        gates = self._policy or auto_gates(settings)
        policy = RolloutPolicy(
            to_version=record.new_version, batch_size=settings.batch_size, gates=gates
        )
        try:
            started = self._rollouts.start(policy, actor=actor, gates=self._gates)
        except Conflict as error:
            log.warning("tuning: proposal %d: no rollout started: %s", record.id, error)
            return 0
        log.info("tuning: proposal %d: rollout %d started", record.id, started.id)
        if self._host_runs is None or not touches_hosts(record):
            return 1
        try:
            run = self._host_runs.start_apply(
                actor=actor, batch_size=settings.batch_size, gates=gates, reader=self._gates
            )
        except Conflict as error:
            log.warning("tuning: proposal %d: no host apply started: %s", record.id, error)
            return 1
        log.info("tuning: proposal %d: host apply %d started", record.id, run.id)
        return 2
