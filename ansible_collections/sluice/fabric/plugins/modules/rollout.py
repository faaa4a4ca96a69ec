#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: bring the switches to an intent version with sluice's staged rollout."""

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout
short_description: Roll an intent version out to the switches in stages, and wait for it
description:
  - Starts a sluice rollout of an intent version (the current one by default) to every
    switch of that version, canary switches first and alone, then O(batch_size) switches at
    a time; the sluice worker applies each switch over gNMI and verifies it by reading it back,
    and halts once more switches than O(failure_budget) failed.
  - Idempotent. When the newest rollout already brought every switch to the version and
    verified it, nothing is started and the task reports C(changed=false). When the newest
    rollout of that version halted, paused or completed with switches not verified, it is
    resumed (its failed switches are tried again) rather than a new one started.
  - With O(wait) the task waits until the rollout finishes and returns the progress of every
    batch; it fails, naming each switch that was not verified and why, when the rollout
    halts or completes with such switches.
  - In check mode nothing starts; the task returns what it would do and, per switch, the
    CONFIG_DB operations from what the switch runs now to the version.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
attributes:
  check_mode:
    support: full
    description: Plans only.
  diff_mode:
    support: full
    description: The planned operations per switch.
options:
  version:
    description: The intent version to roll out; the current one when not given.
    type: int
  canary:
    description: Switches that go first, alone in batch 0.
    type: list
    elements: str
    default: []
  batch_size:
    description: Switches per batch after the canary.
    type: int
    default: 1
  failure_budget:
    description: Halt once more switches than this failed, were unreachable or mismatched.
    type: int
    default: 0
  gates:
    description:
      - Health gates between batches, passed to sluice as given (see sluice's docs/rollouts.md).
      - Only for a sluice API that knows health gates; others refuse the request.
    type: dict
  allow_port_flaps:
    description:
      - Allow changes that take switch ports admin down and up. SONiC's config updater does
        for every change to QUEUE, BUFFER_QUEUE, PORT_QOS_MAP and a port's buffer lists, as
        in a first rollout, a class or port added or removed, or a queue moved.
      - Without it sluice refuses such a rollout before writing anything, naming each switch
        and port; a threshold, lambda or weight change never takes a port down.
      - In check mode, RV(plans) names the ports each switch's changes take down.
    type: bool
    default: false
  wait:
    description: Wait until the rollout finishes (completed, halted, paused or rolled back).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait with O(wait) before failing the task (the rollout goes on).
    type: int
    default: 1800
  poll_interval:
    description: Seconds between two looks at the rollout's progress.
    type: float
    default: 2
notes:
  - Needs a token with the C(operator) role (C(viewer) is enough in check mode).
  - Only one rollout may be unfinished at a time; pause, resume or roll back the one in the
    way with M(sluice.fabric.rollout_control).
"""

EXAMPLES = r"""
- name: Roll the current intent out, leaf1 first, then two switches at a time
  sluice.fabric.rollout:
    canary: [leaf1]
    batch_size: 2
    failure_budget: 0
  register: rolled

- name: What a rollout would change (nothing starts)
  sluice.fabric.rollout:
    canary: [leaf1]
  check_mode: true
  diff: true

- name: Start it and return at once; follow it with rollout_info
  sluice.fabric.rollout:
    batch_size: 4
    wait: false
"""

RETURN = r"""
action:
  description: What the module did (or, in check mode, would do)
  returned: always
  type: str
  choices: [started, resumed, followed, none]
rollout:
  description: The rollout as sluice reports it (state, counts, results per switch).
  returned: when a rollout was started, resumed, followed or found complete
  type: dict
batches:
  description: Per batch, its switches and how many are in each status.
  returned: when a rollout was started, resumed, followed or found complete
  type: list
  elements: dict
  sample: [{"batch": 0, "switches": ["leaf1"], "counts": {"applied_verified": 1}}]
failed_switches:
  description: The switches not verified, with their status and reason.
  returned: when the rollout did not verify every switch
  type: list
  elements: dict
  sample: [{"switch": "leaf2", "status": "unreachable", "reason": "gNMI Get: deadline exceeded"}]
plans:
  description: In check mode, per switch, how many operations it needs and the ports its
    changes take admin down and up (C(ports_down)).
  returned: in check mode
  type: list
  elements: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ROLLOUT_FINISHED,
    ROLLOUT_WAITING,
    ApiError,
    SluiceApi,
    api_argument_spec,
    batch_progress,
    describe_failures,
    not_verified,
)

RESUMABLE = frozenset({"halted", "paused", "completed"})
IN_PROGRESS = frozenset({"pending", "running"})


def decide(latest: dict | None, target: int) -> str:
    """``started``, ``resumed``, ``followed`` or ``none`` for a rollout to ``target``; raises
    ``ValueError`` when another rollout is in the way."""
    if latest is None:
        return "started"
    state = latest["state"]
    if latest["to_version"] == target and state != "rolled_back":
        if state in IN_PROGRESS:
            return "followed"
        if state == "completed" and not not_verified(latest):
            return "none"
        if state in RESUMABLE:
            return "resumed"
    if state in ROLLOUT_FINISHED:
        return "started"
    raise ValueError(
        f"rollout {latest['id']} (to version {latest['to_version']}) is {state}: only one "
        "rollout may be unfinished; resume, pause or roll it back with "
        "sluice.fabric.rollout_control first"
    )


def wait_for(module: AnsibleModule, api: SluiceApi, rollout_id: int) -> dict:
    deadline = time.monotonic() + module.params["wait_timeout"]
    while True:
        rollout = api.rollout(rollout_id)
        if rollout["state"] in ROLLOUT_FINISHED | ROLLOUT_WAITING:
            return rollout
        if time.monotonic() >= deadline:
            module.fail_json(
                msg=f"rollout {rollout_id} is still {rollout['state']} after "
                f"{module.params['wait_timeout']} s; it goes on (follow it with rollout_info)",
                rollout=rollout,
                batches=batch_progress(rollout),
            )
        time.sleep(module.params["poll_interval"])


def plans_diff(plans: list[dict]) -> str:
    lines = []
    for plan in plans:
        for op in plan.get("ops", []):
            lines.append(f"{plan['switch']}: {op['kind']} {op['table']}|{op['key']}")
    return "\n".join(lines) + ("\n" if lines else "")


def check(module: AnsibleModule, api: SluiceApi, action: str, latest: dict | None) -> dict:
    plans = api.post("/plans", {}).data["plans"] if action != "none" else []
    result = {
        "changed": action in ("started", "resumed"),
        "action": action,
        "plans": [
            {"switch": p["switch"], "counts": p["counts"], "ports_down": p.get("ports_down", [])}
            for p in plans
            if p.get("ops")
        ],
        "diff": {"prepared": plans_diff(plans)},
    }
    if latest is not None and action != "started":
        result["rollout"] = latest
    return result


def run(module: AnsibleModule, api: SluiceApi) -> dict:
    params = module.params
    head, _intent = api.current_intent()
    target = params["version"] or head
    if target == 0:
        module.fail_json(msg="sluice has no intent yet: apply one with sluice.fabric.intent")
    latest = api.latest_rollout()
    try:
        action = decide(latest, target)
    except ValueError as exc:
        module.fail_json(msg=str(exc), rollout=latest)
    if module.check_mode:
        return check(module, api, action, latest)
    if action == "started":
        body = {
            "to_version": target,
            "canary": params["canary"],
            "batch_size": params["batch_size"],
            "failure_budget": params["failure_budget"],
        }
        if params["gates"] is not None:
            body["gates"] = params["gates"]
        if params["allow_port_flaps"]:
            body["allow_port_flaps"] = True
        rollout = api.post("/rollouts", body).data
    elif action == "resumed":
        rollout = api.post(f"/rollouts/{latest['id']}/resume").data
    else:
        rollout = latest
    if params["wait"] and action != "none":
        rollout = wait_for(module, api, rollout["id"])
    result = {
        "changed": action in ("started", "resumed"),
        "action": action,
        "rollout": rollout,
        "batches": batch_progress(rollout),
    }
    if params["wait"] or action == "none":
        failures = not_verified(rollout)
        if rollout["state"] != "completed" or failures:
            result["failed_switches"] = failures
            named = describe_failures(failures) or "no switch failed"
            module.fail_json(
                msg=f"rollout {rollout['id']} to version {rollout['to_version']} is "
                f"{rollout['state']}, not every switch verified: {named}",
                **result,
            )
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "version": {"type": "int"},
            "canary": {"type": "list", "elements": "str", "default": []},
            "batch_size": {"type": "int", "default": 1},
            "failure_budget": {"type": "int", "default": 0},
            "gates": {"type": "dict"},
            "allow_port_flaps": {"type": "bool", "default": False},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 1800},
            "poll_interval": {"type": "float", "default": 2.0},
        },
        supports_check_mode=True,
    )
    try:
        result = run(module, SluiceApi.from_params(module.params))
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
