"""The worker's Ansible: one batch of a host run, from the run's intent version compiled to an
inventory with this control node's settings (``HostsSettings``), run by ``AnsibleRunner`` in a
folder of its own that is removed afterwards."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence

from controller.hosts.compile import compile_hosts
from controller.hosts.runner import AnsibleRunner, HostResult, ansible_setup
from controller.intent.models import Intent
from controller.rollout.hosts import HostRunState
from controller.settings import HostsSettings

IntentOf = Callable[[int], Intent | None]


class AnsibleBatches:
    """``run_batch`` for ``HostRunRunner``."""

    def __init__(self, settings: HostsSettings, intent_of: IntentOf) -> None:
        self._settings = settings
        self._intent_of = intent_of

    def __call__(self, run: HostRunState, hosts: Sequence[str], batch: int) -> list[HostResult]:
        intent = self._intent_of(run.intent_version)
        if intent is None:
            raise LookupError(f"intent version {run.intent_version} is gone")
        inventory = compile_hosts(intent, group_vars=self._settings.group_vars()).yaml()
        rundir = self._settings.workdir / f"run-{run.id}-batch-{batch}"
        try:
            runner = AnsibleRunner(
                ansible_setup(self._settings), rundir, inventory, check=run.check
            )
            return runner.run_batch(hosts, batch)
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
