#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: a sluice rollout and its progress."""

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout_info
short_description: A sluice rollout (the newest by default) with its progress per batch
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
description:
  - Reads one rollout with every switch's result, and summarises it per batch.
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
options:
  id:
    description: The rollout; the newest one when not given.
    type: int
notes:
  - Needs a token with the C(viewer) role.
"""

EXAMPLES = r"""
- name: The newest rollout
  sluice.fabric.rollout_info:
  register: last

- name: Its state
  ansible.builtin.debug:
    msg: "rollout {{ last.rollout.id }} is {{ last.rollout.state }}"
  when: last.rollout is not none
"""

RETURN = r"""
rollout:
  description: The rollout (state, versions, policy, counts, results per switch), or null.
  returned: always
  type: dict
batches:
  description: Per batch, its switches and how many are in each status.
  returned: always
  type: list
  elements: dict
failed_switches:
  description: Switches of the rollout phase not applied and verified (pending ones too).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
    batch_progress,
    not_verified,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={**api_argument_spec(), "id": {"type": "int"}},
        supports_check_mode=True,
    )
    try:
        api = SluiceApi.from_params(module.params)
        wanted = module.params["id"]
        rollout = api.latest_rollout() if wanted is None else api.rollout(wanted)
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    if rollout is None:
        module.exit_json(changed=False, rollout=None, batches=[], failed_switches=[])
    module.exit_json(
        changed=False,
        rollout=rollout,
        batches=batch_progress(rollout),
        failed_switches=not_verified(rollout),
    )


if __name__ == "__main__":
    main()
