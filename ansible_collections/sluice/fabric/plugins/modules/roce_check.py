#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: is the running fabric ready for RoCE, judged by sluice."""

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_check
short_description: Check that a running fabric is ready for RoCE through sluice
description:
  - Asks sluice to read the switches over gNMI (its worker does) and to check them for RoCE,
    as C(sluice check roce) does.
  - For every fabric link LLDP shows, both ends must agree on the lossless (PFC) priorities,
    the DSCP to traffic class, traffic class to priority group and PFC priority to queue
    entries of those priorities, and the MTU; the end that differs from the rest of the fabric
    is named. Every port with PFC on must give each lossless priority headroom (a
    C(BUFFER_PG) with a lossless profile) and a PFC watchdog.
  - The switches are left as they are; the module only reads, in check mode too. Each call
    records a discovery in sluice.
author: sluice developers (!UNKNOWN)
version_added: 0.2.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
options:
  switches:
    description: Switches of the current intent, by name; none (and no endpoints) checks every one.
    type: list
    elements: str
    default: []
  endpoints:
    description: Switches the intent does not have yet.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The name to give the switch.
        type: str
        required: true
      gnmi:
        description: Its gNMI endpoint (C(address), C(port), optionally C(target)).
        type: dict
        required: true
      credential_ref:
        description: Where its gNMI credential lives (C(env:NAME), C(file:/path)); never the secret.
        type: str
        required: true
  fail_on_findings:
    description: Fail the task when there is any finding (a switch not read among them).
    type: bool
    default: true
notes:
  - Needs a token with the C(operator) role.
"""

EXAMPLES = r"""
- name: The fabric is ready for RoCE
  sluice.fabric.roce_check:

- name: What differs, without failing
  sluice.fabric.roce_check:
    switches: [leaf1, spine1]
    fail_on_findings: false
  register: roce

- name: The links whose ends differ
  ansible.builtin.debug:
    msg: "{{ roce.links | rejectattr('ok') | list }}"
"""

RETURN = r"""
ok:
  description: Whether there is no finding at all.
  returned: always
  type: bool
findings:
  description: Every finding, on links, on ports and on switches not read (C(kind), C(end),
    C(field), C(expected), C(found), C(reason)).
  returned: always
  type: list
  elements: dict
links:
  description: Every fabric link (C(a), C(b) as switch:port, C(priorities), C(ok), C(findings)).
  returned: always
  type: list
  elements: dict
ports:
  description: Every port with PFC on (C(port), C(priorities), C(ok), C(findings)).
  returned: always
  type: list
  elements: dict
unreachable:
  description: The switches that could not be read, as findings.
  returned: always
  type: list
  elements: dict
discovery_id:
  description: The discovery the check judged.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
)

RETURNED = ("ok", "links", "ports", "unreachable", "discovery_id")
ENDPOINT_SPEC = {
    "name": {"type": "str", "required": True},
    "gnmi": {"type": "dict", "required": True},
    "credential_ref": {"type": "str", "required": True},
}


def every_finding(answer: dict) -> list:
    found = list(answer["unreachable"])
    for group in ("links", "ports"):
        for item in answer[group]:
            found.extend(item["findings"])
    return found


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "switches": {"type": "list", "elements": "str", "default": []},
            "endpoints": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": ENDPOINT_SPEC,
            },
            "fail_on_findings": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    body = {"switches": module.params["switches"], "endpoints": module.params["endpoints"]}
    try:
        answer = SluiceApi.from_params(module.params).post("/checks/roce", body).data
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    findings = every_finding(answer)
    result = {key: answer[key] for key in RETURNED}
    result["findings"] = findings
    if module.params["fail_on_findings"] and findings:
        listed = "; ".join(f"{f['end']}: {f['reason']}" for f in findings)
        module.fail_json(msg=f"the fabric is not ready for RoCE: {listed}", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
