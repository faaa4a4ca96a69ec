#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: pause, resume or roll back a sluice rollout."""

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout_control
short_description: Pause, resume or roll back a sluice rollout
description:
  - Pausing stops a rollout between batches (the batch in progress finishes). Resuming goes on
    with the switches still pending and tries the failed ones again. Rolling back returns every
    switch the rollout reached, last reached first, to the version the fabric ran before.
  - Idempotent. A rollout already paused, running, rolling back or rolled back (as asked) is
    left as it is and the task reports C(changed=false).
  - With O(wait), a resume waits until the rollout finishes (failing, naming the switches not
    verified, when it does not verify) and a rollback waits until it is rolled back.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
attributes:
  check_mode:
    support: full
    description: Reports what would be done; changes nothing.
  diff_mode:
    support: none
    description: Nothing to show as a diff.
options:
  id:
    description: The rollout; the newest one when not given.
    type: int
  state:
    description: What the rollout should be doing.
    type: str
    required: true
    choices: [paused, resumed, rolled_back]
  wait:
    description: Wait for a resumed rollout to finish, or a rollback to complete.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait).
    type: int
    default: 1800
  poll_interval:
    description: Seconds between two looks at the rollout.
    type: float
    default: 2
notes:
  - Needs a token with the C(operator) role.
"""

EXAMPLES = r"""
- name: Hold the rollout in progress
  sluice.fabric.rollout_control:
    state: paused

- name: Take rollout 12 back and wait until every switch runs the old version
  sluice.fabric.rollout_control:
    id: 12
    state: rolled_back
    wait: true
"""

RETURN = r"""
rollout:
  description: The rollout as sluice reports it afterwards.
  returned: always
  type: dict
failed_switches:
  description: The switches not verified, with their status and reason.
  returned: when a resumed rollout did not verify every switch
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
    describe_failures,
    not_verified,
)

# For each wanted state: the rollout states that already are it, the API action, and the
# states a wait ends in.
ALREADY = {
    "paused": frozenset({"paused"}),
    "resumed": frozenset({"pending", "running"}),
    "rolled_back": frozenset({"rolling_back", "rolled_back"}),
}
ACTION = {"paused": "pause", "resumed": "resume", "rolled_back": "rollback"}
SETTLED = {
    "paused": frozenset({"paused"}) | ROLLOUT_FINISHED,
    "resumed": ROLLOUT_FINISHED | ROLLOUT_WAITING,
    "rolled_back": frozenset({"rolled_back"}),
}


def wait_for(module: AnsibleModule, api: SluiceApi, rollout: dict, wanted: str) -> dict:
    deadline = time.monotonic() + module.params["wait_timeout"]
    while rollout["state"] not in SETTLED[wanted]:
        if time.monotonic() >= deadline:
            module.fail_json(
                msg=f"rollout {rollout['id']} is still {rollout['state']} after "
                f"{module.params['wait_timeout']} s",
                rollout=rollout,
            )
        time.sleep(module.params["poll_interval"])
        rollout = api.rollout(rollout["id"])
    return rollout


def run(module: AnsibleModule, api: SluiceApi) -> dict:
    wanted = module.params["state"]
    if module.params["id"] is None:
        rollout = api.latest_rollout()
        if rollout is None:
            module.fail_json(msg="sluice has no rollout yet")
    else:
        rollout = api.rollout(module.params["id"])
    changed = rollout["state"] not in ALREADY[wanted]
    if module.check_mode:
        return {"changed": changed, "rollout": rollout}
    if changed:
        rollout = api.post(f"/rollouts/{rollout['id']}/{ACTION[wanted]}").data
    if module.params["wait"]:
        rollout = wait_for(module, api, rollout, wanted)
    result = {"changed": changed, "rollout": rollout}
    if module.params["wait"] and wanted == "resumed":
        failures = not_verified(rollout)
        if rollout["state"] != "completed" or failures:
            module.fail_json(
                msg=f"rollout {rollout['id']} is {rollout['state']}, not every switch "
                f"verified: {describe_failures(failures) or 'no switch failed'}",
                failed_switches=failures,
                **result,
            )
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "id": {"type": "int"},
            "state": {"type": "str", "required": True, "choices": list(ACTION)},
            "wait": {"type": "bool", "default": False},
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
