"""Demo step: a changed intent applied and rolled out with one operator playbook.

It runs ``playbooks/fleet_rollout.yml`` (modules of the ``sluice.fabric`` collection) with
``ansible-playbook``, as an operator would: first in check mode with ``--diff`` (the plan,
nothing written), then for real (a new intent version, rolled out leaf-first in stages and
verified by read-back), then once more (nothing changes). It needs what the switch step
leaves running: the API (``SLUICE_API_URL``, ``SLUICE_API_TOKEN`` in ``env``), the worker and
the virtual switches, with ``intent_file`` applied and rolled out.

``run`` and ``say`` are the demo's own (echo a command and run it; announce a step), passed
in so this step prints like the others.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
PLAYBOOK = REPO / "playbooks" / "fleet_rollout.yml"
BIN = Path(sys.executable).parent
# The class whose DWRR weight the operator raises, and by how much (weights are 1..100).
CHANGED_CLASS = "storage"
WEIGHT_STEP = 10
MAX_WEIGHT = 100

Run = Callable[[Sequence[str], dict[str, str]], str]
Say = Callable[[str], None]


class AnsibleDemoError(RuntimeError):
    """The intent has nothing this step can change."""


def raise_weight(intent: dict[str, Any], name: str = CHANGED_CLASS) -> tuple[int, int]:
    """Raise the DWRR weight of class ``name`` in ``intent`` (in place); ``(before, after)``."""
    for service_class in intent.get("service_classes", []):
        scheduling = service_class.get("scheduling", {})
        if service_class.get("name") == name and scheduling.get("type") == "DWRR":
            before = int(scheduling["weight"])
            after = min(MAX_WEIGHT, before + WEIGHT_STEP)
            if after == before:
                after = before - WEIGHT_STEP
            scheduling["weight"] = after
            return before, after
    raise AnsibleDemoError(f"the intent has no DWRR class named {name}")


def playbook_argv(intent_file: Path, canary: str, *extra: str) -> list[str]:
    # Extra variables as one JSON document: key=value pairs would make every value a string.
    variables = {
        "ansible_python_interpreter": sys.executable,
        "sluice_intent_file": str(intent_file),
        "sluice_canary": [canary],
        "sluice_batch_size": 2,
        "sluice_reason": f"demo: more weight for {CHANGED_CLASS}, from a playbook",
    }
    return [
        str(BIN / "ansible-playbook"),
        "-i",
        "localhost,",
        str(PLAYBOOK),
        "-e",
        json.dumps(variables),
        *extra,
    ]


def ansible_step(
    env: Mapping[str, str],
    intent_file: Path,
    run_dir: Path,
    *,
    run: Run,
    say: Say,
    canary: str = "leaf1",
) -> Path:
    """The step (see the module docstring); returns the changed intent file it wrote."""
    document = yaml.safe_load(intent_file.read_text())
    before, after = raise_weight(document)
    run_dir.mkdir(parents=True, exist_ok=True)
    changed = run_dir / "intent-ansible.yaml"
    changed.write_text(yaml.safe_dump(document, sort_keys=False))
    full = {**env, "ANSIBLE_COLLECTIONS_PATH": str(REPO), "ANSIBLE_NOCOLOR": "1"}
    say(f"an operator's playbook: {CHANGED_CLASS} weight {before} -> {after}, planned first "
        "(check mode, --diff: nothing is written)")  # fmt: skip
    run(playbook_argv(changed, canary, "--check", "--diff"), full)
    say("the same playbook for real: a new intent version, rolled out leaf-first and verified")
    run(playbook_argv(changed, canary), full)
    say("and once more: nothing left to change (changed=0)")
    run(playbook_argv(changed, canary), full)
    return changed
