"""The demo's Ansible step (lab/demo_ansible.py) against the live API, the worker and the
vsonic switches: plan, apply and roll out, then nothing to change."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.demo_ansible import CHANGED_CLASS, AnsibleDemoError, ansible_step, raise_weight

from ..rollout.conftest import Controller
from .conftest import Operator, WorkerThread, intent_file
from .test_playbooks import rollouts, staged_rollout, versions

RECAP = re.compile(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)")


def schedulers(controller: Controller, switch: str) -> dict[str, dict[str, str]]:
    config = controller.fabric.switches[switch].config_db()
    return {k: v for k, v in config.items() if k.startswith("SCHEDULER|SLUICE")}


def test_the_step_plans_applies_and_rolls_out_a_changed_intent_then_changes_nothing(
    operator: Operator, controller: Controller, tmp_path: Path
) -> None:
    outputs: list[str] = []

    def run(argv: Sequence[str], env: dict[str, str]) -> str:
        done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        outputs.append(done.stdout)
        return done.stdout

    first = intent_file(operator, controller)
    with WorkerThread(controller):
        assert operator.playbook(staged_rollout(first)).returncode == 0
        before = schedulers(controller, "leaf1")
        ansible_step(operator.env, first, tmp_path / "demo", run=run, say=print)

    assert len(outputs) == 3
    assert "weight:" in outputs[0]  # check mode with --diff shows the changed class
    recaps = [RECAP.search(out) for out in outputs]
    # (changed, failed): in check mode only the intent would change (the rollout task plans
    # from the stored intent, not yet the new one); for real both change; then neither.
    assert [m.groups() if m else None for m in recaps] == [("1", "0"), ("2", "0"), ("0", "0")]
    assert versions(controller) == 2
    assert rollouts(controller) == [(1, "completed"), (2, "completed")]
    assert schedulers(controller, "leaf1") != before


def test_raise_weight_names_a_missing_class() -> None:
    intent = {"service_classes": [{"name": "other", "scheduling": {"type": "STRICT"}}]}
    with pytest.raises(AnsibleDemoError, match=CHANGED_CLASS):
        raise_weight(intent)
