"""Host runs, the worker's side: plan (check mode) or apply the intent's host variables with
Ansible, batch by batch, under the failure budget of ``controller/rollout/staging.py``.

The API records a run (``pending``, with a ``pending`` result per host in its batch); the
worker steps it here. One ``step`` does one thing and returns: start the run, run the
lowest batch that still has pending hosts and record their results, or finish the run
(``completed``; ``halted`` once the failures exceed the budget, the unreached hosts
``not_run``). Every decision is read from the recorded results, so a worker that restarts
picks up with the hosts not yet done; a batch whose results were recorded is never run again.
A batch cut short by a hard kill of the worker (its results not recorded) runs again: the
host roles are idempotent, and ``SIGTERM`` lets the batch in progress finish first.

With health gates (``controller/rollout/gates.py``, the switch rollouts' policy) each batch
reads a baseline before it and soaks after it; a failed gate acts per ``on_fail``: ``halt``
stops the run, ``rollback_batch`` puts the batch's hosts back to the version each ran before
the run (``from_version``, recorded with the run), ``rollback_all`` every host the run
reached. A rollback is ``rolling_back`` then ``rolled_back``, one rollback batch per step, the
last batch reached first, each host applied the whole previous version (the roles converge a
host to its variables, so applying version N again is how a host returns to it). A host that
ran no earlier version has nothing to return to: its rollback is ``not_run`` and named in the
run's message. Time, Ansible and the store are passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal, Protocol

from controller.hosts.runner import HostResult, HostStatus
from controller.rollout.gates import Evaluation, GatePolicy, GateState, Reader, describe, read_all
from controller.rollout.gates import failed as failed_gates
from controller.rollout.staging import (
    Complete,
    Halt,
    assign_batches,
    failure_count,
    next_stage,
)

log = logging.getLogger(__name__)

NOT_REACHED = "failure budget exceeded"
NO_EARLIER_VERSION = "the host ran no earlier version: nothing to put it back to"
# Apply statuses whose host may have changed, and so is put back by a rollback (a failed host
# may have run some of its tasks; an unreachable one was never reached).
ATTEMPTED = frozenset({"ok", "changed", "failed"})


@dataclass(frozen=True, slots=True)
class HostProgress:
    host: str
    batch: int
    status: str
    # The version the host ran when the run was recorded (None: none); what a rollback restores.
    from_version: int | None = None


@dataclass(frozen=True, slots=True)
class HostRunState:
    """A host run as the runner sees it: its mode, state, budget and every host's status."""

    id: int
    mode: str
    state: str
    intent_version: int
    failure_budget: int
    results: tuple[HostProgress, ...]
    # Health gates, read over ``switches`` (the version's switches: what hosts change shows
    # in the fabric's traffic), as for switch rollouts.
    gates: GateState = field(default_factory=GateState)
    switches: tuple[str, ...] = ()
    # A rollback a failed gate started: one row per host being put back, and why.
    rollback: tuple[HostProgress, ...] = ()
    message: str | None = None

    @property
    def check(self) -> bool:
        return self.mode == "plan"


class HostRunStore(Protocol):
    """What the runner needs from persistence (``controller/store/host_run_store.py``)."""

    def runnable(self) -> list[int]: ...

    def load(self, run_id: int) -> HostRunState: ...

    def transition(
        self, run_id: int, state: str, expected: Sequence[str], message: str | None = None
    ) -> bool: ...

    def record(self, run_id: int, results: Sequence[HostResult], failures: int) -> None: ...

    def skip_pending(self, run_id: int, message: str) -> None: ...

    def record_gates(self, run_id: int, evaluations: Sequence[Evaluation]) -> None: ...

    def set_soak(self, run_id: int, batch: int | None, until: datetime | None) -> None: ...

    def start_rollback(self, run_id: int, hosts: Sequence[HostProgress], message: str) -> bool:
        """``running`` -> ``rolling_back`` with a pending rollback of each of ``hosts`` (batch:
        rollback order; ``from_version``: what it returns to); the hosts not reached are
        ``not_run``. False when the run was no longer running."""
        ...

    def record_rollback(self, run_id: int, results: Sequence[HostResult]) -> None: ...


# Runs one batch of a run with Ansible: (the run, its hosts in this batch, batch number).
RunBatch = Callable[[HostRunState, Sequence[str], int], list[HostResult]]


def host_batches(hosts: Sequence[str], batch_size: int) -> list[tuple[str, int]]:
    """``(host, batch)`` in run order, batches numbered from 1 (hosts have no canary)."""
    return [(host, batch + 1) for host, batch in assign_batches(hosts, (), batch_size)]


def rollback_hosts(results: Sequence[HostProgress], batch: int | None) -> list[HostProgress]:
    """The hosts a rollback puts back, pending, the last batch reached first (rollback batch 1
    is the apply's last): those of apply ``batch`` (None: of every batch) that it attempted."""
    attempted = [r for r in results if r.status in ATTEMPTED and batch in (None, r.batch)]
    order = sorted({r.batch for r in attempted}, reverse=True)
    number = {apply_batch: i + 1 for i, apply_batch in enumerate(order)}
    return [
        HostProgress(r.host, number[r.batch], "pending", r.from_version)
        for r in sorted(attempted, key=lambda r: number[r.batch])
    ]


def not_restored(rollback: Sequence[HostProgress]) -> str:
    """``host (status)`` for each host the rollback did not put back, comma-separated."""
    left = [r for r in rollback if r.status not in ("ok", "changed")]
    return ", ".join(f"{r.host} ({r.status})" for r in left)


def halt_message(failures: int, results: Sequence[HostProgress]) -> str:
    last = max((r.batch for r in results if r.status not in ("pending", "not_run")), default=0)
    return f"{failures} host(s) failed, above the failure budget: stopped after batch {last}"


class HostRunRunner:
    """Drives host runs through the store, one batch per ``step``. Safe to discard at any
    moment and replace with a new runner."""

    def __init__(
        self,
        store: HostRunStore,
        run_batch: RunBatch,
        *,
        clock: Callable[[], datetime] | None = None,
        gates: Reader | None = None,
    ) -> None:
        self._store = store
        self._run_batch = run_batch
        self._clock = clock
        self._gates = gates

    def run_once(self) -> int:
        """One step of every runnable host run; how many steps did something."""
        return sum(1 for run_id in self._store.runnable() if self.step(run_id))

    def step(self, run_id: int) -> bool:
        run = self._store.load(run_id)
        if run.state == "pending":
            return self._store.transition(run.id, "running", ("pending",))
        if run.state == "rolling_back":
            return self._backward(run)
        if run.state != "running":
            return False
        policy = run.gates.gated
        if policy is not None and run.gates.soak_batch is not None:
            return self._soak(run, policy, run.gates.soak_batch)
        stage = next_stage(run.results, run.failure_budget)
        if isinstance(stage, Halt):
            self._store.skip_pending(run.id, NOT_REACHED)
            message = halt_message(stage.failures, run.results)
            log.info("host run %d: halted (%s)", run.id, message)
            return self._store.transition(run.id, "halted", ("running",), message)
        if isinstance(stage, Complete):
            log.info("host run %d: completed", run.id)
            return self._store.transition(run.id, "completed", ("running",))
        hosts = [r.host for r in stage.batch]
        number = stage.batch[0].batch
        log.info("host run %d: batch %d: %s", run.id, number, hosts)
        if policy is not None:
            self._read_gates(run, policy, "baseline", number, {})
        try:
            results = self._run_batch(run, hosts, number)
        except Exception as error:  # the run must end in a state, whatever went wrong
            log.exception("host run %d: batch %d failed to run", run.id, number)
            message = f"{type(error).__name__}: {error}"[:2000]
            return self._store.transition(run.id, "error", ("running",), message)
        self._store.record(run.id, results, failure_count(run.results) + failure_count(results))
        if policy is not None:
            self._store.set_soak(run.id, number, self._now() + timedelta(seconds=policy.soak_s))
        return True

    def _now(self) -> datetime:
        if self._clock is None:
            raise RuntimeError("a gated host run needs the runner's clock")
        return self._clock()

    def _read_gates(
        self,
        run: HostRunState,
        policy: GatePolicy,
        stage: Literal["baseline", "soak"],
        batch: int,
        baselines: Mapping[str, float | None],
    ) -> list[Evaluation]:
        evaluations = read_all(
            policy,
            self._gates,
            stage=stage,
            batch=batch,
            switches=run.switches,
            baselines=baselines,
            at=self._now(),
        )
        self._store.record_gates(run.id, evaluations)
        return evaluations

    def _soak(self, run: HostRunState, policy: GatePolicy, batch: int) -> bool:
        """After a batch: wait out its soak by returning, then judge its gates. A failure
        halts the run (``halt``) or rolls back the batch's hosts (``rollback_batch``) or every
        host the run reached (``rollback_all``); the hosts not reached are ``not_run``."""
        if run.gates.soaking(self._now()):
            return False
        baselines = run.gates.baselines.get(batch, {})
        evaluations = self._read_gates(run, policy, "soak", batch, baselines)
        self._store.set_soak(run.id, None, None)
        bad = failed_gates(evaluations)
        if not bad:
            return True
        message = f"batch {batch} failed its health gates ({policy.on_fail}): {describe(bad)}"
        if policy.on_fail == "halt":
            self._store.skip_pending(run.id, message)
            log.info("host run %d: halted (%s)", run.id, message)
            return self._store.transition(run.id, "halted", ("running",), message)
        scope = batch if policy.on_fail == "rollback_batch" else None
        moved = self._store.start_rollback(run.id, rollback_hosts(run.results, scope), message)
        if moved:
            log.info("host run %d: rolling_back (%s)", run.id, message)
        return moved

    def _backward(self, run: HostRunState) -> bool:
        """One rollback batch: its hosts applied the version each ran before, grouped by that
        version (one Ansible run each); none left -> ``rolled_back``, keeping why."""
        pending = [r for r in run.rollback if r.status == "pending"]
        if not pending:
            left = not_restored(run.rollback)
            message = f"{run.message}; not restored: {left}" if left else run.message
            log.info("host run %d: rolled_back%s", run.id, f" ({left})" if left else "")
            return self._store.transition(run.id, "rolled_back", ("rolling_back",), message)
        number = min(r.batch for r in pending)
        batch = [r for r in pending if r.batch == number]
        results = [
            HostResult(r.host, number, HostStatus.NOT_RUN, message=NO_EARLIER_VERSION)
            for r in batch
            if r.from_version is None
        ]
        for version in sorted({r.from_version for r in batch if r.from_version is not None}):
            hosts = [r.host for r in batch if r.from_version == version]
            log.info("host run %d: rolling back %s to version %d", run.id, hosts, version)
            # The same Ansible batch as an apply, of the version the hosts return to.
            earlier = replace(run, intent_version=version, mode="apply")
            try:
                results += self._run_batch(earlier, hosts, number)
            except Exception as error:  # the run must end in a state, whatever went wrong
                log.exception("host run %d: rollback batch %d failed to run", run.id, number)
                message = f"rollback: {type(error).__name__}: {error}"[:2000]
                return self._store.transition(run.id, "error", ("rolling_back",), message)
        self._store.record_rollback(run.id, results)
        return True
