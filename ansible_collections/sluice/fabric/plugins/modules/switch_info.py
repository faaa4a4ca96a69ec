#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the switches of sluice's current intent."""

from __future__ import annotations

DOCUMENTATION = r"""
module: switch_info
short_description: The switches of sluice's current intent, with their last reconcile run
description:
  - Lists the switches of the current intent (name, role, gNMI endpoint, ports) or one of
    them, each with the last reconcile run sluice recorded for it, if any.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
options:
  name:
    description: Only this switch.
    type: str
notes:
  - Needs a token with the C(viewer) role.
"""

EXAMPLES = r"""
- name: Every switch
  sluice.fabric.switch_info:
  register: fabric

- name: The leaves
  ansible.builtin.debug:
    msg: "{{ fabric.switches | selectattr('role', 'equalto', 'leaf') | map(attribute='name') }}"
"""

RETURN = r"""
switches:
  description: The switches, each with a C(reconcile) key (the last run, or null).
  returned: always
  type: list
  elements: dict
version:
  description: The intent version read.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
)

PAGE = 200


def switches(api: SluiceApi, name: str | None) -> tuple[list[dict], int]:
    if name is not None:
        answer = api.get(f"/switches/{name}")
        return [answer.data], int((answer.etag or '"0"').strip('"'))
    items: list[dict] = []
    etag = '"0"'
    while True:
        answer = api.get("/switches", limit=PAGE, offset=len(items))
        etag = answer.etag or etag
        items += answer.data["items"]
        if not answer.data["items"] or len(items) >= answer.data["total"]:
            return items, int(etag.strip('"'))


def main() -> None:
    module = AnsibleModule(
        argument_spec={**api_argument_spec(), "name": {"type": "str"}},
        supports_check_mode=True,
    )
    try:
        api = SluiceApi.from_params(module.params)
        found, version = switches(api, module.params["name"])
        runs = {run["switch"]: run for run in api.get("/reconcile").data["items"]}
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    for switch in found:
        switch["reconcile"] = runs.get(switch["name"])
    module.exit_json(changed=False, switches=found, version=version)


if __name__ == "__main__":
    main()
