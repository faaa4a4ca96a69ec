"""A host run held in memory, for the bench and the runner's tests: the worker's
``HostRunRunner`` over ``HostRunStore`` without PostgreSQL (a fake store, named as one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from controller.hosts.runner import HostResult, HostStatus
from controller.rollout.gates import Evaluation
from controller.rollout.hosts import HostProgress, HostRunState, host_batches


@dataclass
class FakeHostRunStore:
    """One run (id 1) of ``hosts`` in batches of ``batch_size``; ``results`` holds every
    host's last result in run order once the runner has finished."""

    hosts: Sequence[str]
    batch_size: int
    failure_budget: int = 0
    mode: str = "apply"
    state: str = "pending"
    message: str | None = None
    progress: dict[str, HostProgress] = field(default_factory=dict)
    recorded: dict[str, HostResult] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for host, batch in host_batches(self.hosts, self.batch_size):
            self.progress[host] = HostProgress(host, batch, "pending")

    def runnable(self) -> list[int]:
        return [1] if self.state in ("pending", "running") else []

    def load(self, run_id: int) -> HostRunState:
        return HostRunState(
            id=run_id,
            mode=self.mode,
            state=self.state,
            intent_version=1,
            failure_budget=self.failure_budget,
            results=tuple(self.progress.values()),
        )

    def transition(
        self, run_id: int, state: str, expected: Sequence[str], message: str | None = None
    ) -> bool:
        if self.state not in expected:
            return False
        self.state, self.message = state, message
        return True

    def record(self, run_id: int, results: Sequence[HostResult], failures: int) -> None:
        for result in results:
            self.recorded[result.host] = result
            self.progress[result.host] = HostProgress(result.host, result.batch, result.status)

    def skip_pending(self, run_id: int, message: str) -> None:
        for host, seen in self.progress.items():
            if seen.status == "pending":
                self.progress[host] = replace(seen, status="not_run")
                self.recorded[host] = HostResult(
                    host, seen.batch, HostStatus.NOT_RUN, message=message
                )

    # Health gates: this store's runs carry no gate policy, so the runner never calls these.
    def record_gates(self, run_id: int, evaluations: Sequence[Evaluation]) -> None:
        raise NotImplementedError("the fake host-run store keeps no gate readings")

    def set_soak(self, run_id: int, batch: int | None, until: datetime | None) -> None:
        raise NotImplementedError("the fake host-run store keeps no soak")

    def start_rollback(self, run_id: int, hosts: Sequence[HostProgress], message: str) -> bool:
        raise NotImplementedError("the fake host-run store keeps no rollback (no gates)")

    def record_rollback(self, run_id: int, results: Sequence[HostResult]) -> None:
        raise NotImplementedError("the fake host-run store keeps no rollback (no gates)")

    @property
    def results(self) -> list[HostResult]:
        return [self.recorded[host] for host in self.hosts if host in self.recorded]
