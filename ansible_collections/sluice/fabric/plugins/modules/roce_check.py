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
  - With no O(switches) and no O(endpoints), every switch of the current intent is checked.
  - The switches are left as they are; the module only reads, in check mode too. Each call
    records a discovery in sluice.
author: sluice developers (!UNKNOWN)
version_added: 0.2.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
  - sluice.fabric.switches
options:
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
    api_argument_spec,
    post_switches,
    switches_argument_spec,
)

RETURNED = ("ok", "links", "ports", "unreachable", "discovery_id")


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
            **switches_argument_spec(),
            "fail_on_findings": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    answer = post_switches(module, "/checks/roce")
    findings = every_finding(answer)
    result = {key: answer[key] for key in RETURNED}
    result["findings"] = findings
    if module.params["fail_on_findings"] and findings:
        listed = "; ".join(f"{f['end']}: {f['reason']}" for f in findings)
        module.fail_json(msg=f"the fabric is not ready for RoCE: {listed}", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
