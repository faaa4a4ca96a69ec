#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: drift sluice found on the switches."""

from __future__ import annotations

DOCUMENTATION = r"""
module: drift_info
short_description: Drift the reconciliation loop found on the switches, newest first
description:
  - Each event is one CONFIG_DB field (or entry) that differed from the desired state of the
    version last verified on the switch, with what was expected and observed and whether sluice
    corrected it or only alerted.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
options:
  switch:
    description: Only this switch's events.
    type: str
  limit:
    description: At most this many events.
    type: int
    default: 50
notes:
  - Needs a token with the C(viewer) role.
"""

EXAMPLES = r"""
- name: Drift on leaf1
  sluice.fabric.drift_info:
    switch: leaf1
  register: drift
"""

RETURN = r"""
events:
  description: Drift events (switch, table, key, field, expected, observed, action, detected_at).
  returned: always
  type: list
  elements: dict
total:
  description: How many events sluice holds for the query.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "switch": {"type": "str"},
            "limit": {"type": "int", "default": 50},
        },
        supports_check_mode=True,
    )
    try:
        api = SluiceApi.from_params(module.params)
        page = api.get("/drift", switch=module.params["switch"], limit=module.params["limit"]).data
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    module.exit_json(changed=False, events=page["items"], total=page["total"])


if __name__ == "__main__":
    main()
