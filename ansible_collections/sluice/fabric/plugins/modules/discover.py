#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: what running switches are, read by sluice's worker."""

from __future__ import annotations

DOCUMENTATION = r"""
module: discover
short_description: Read what running switches are (ports, neighbours, QoS config) through sluice
description:
  - Asks sluice to read the switches over gNMI (its worker does, one Get per database) and
    returns what it found, per switch; ports with their speeds, admin and oper status,
    breakout and cable length; LLDP neighbours; the lossless priorities per port; the fabric's
    links and a base RTT estimate; an inventory in the intent's shape; and every declared port
    the switches lack or run at another speed.
  - The switches are left as they are. Each call records a discovery in sluice.
author: sluice developers (!UNKNOWN)
version_added: 0.2.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
  - sluice.fabric.switches
options:
  check:
    description: Fail when a declared port is missing or runs at another speed.
    type: bool
    default: false
notes:
  - Needs a token with the C(operator) role.
"""

EXAMPLES = r"""
- name: What the leaves run
  sluice.fabric.discover:
    switches: [leaf1, leaf2]
    check: true
  register: found

- name: Their lossless priorities
  ansible.builtin.debug:
    msg: "{{ found.switches | items2dict(key_name='switch', value_name='lossless') }}"
"""

RETURN = r"""
switches:
  description:
    - Per switch read, what it runs (C(switch), C(ports), C(neighbours), C(lossless),
      C(qos_counts), C(gets)).
  returned: always
  type: list
  elements: dict
errors:
  description: The switches that could not be read, and why.
  returned: always
  type: dict
topology:
  description: The fabric's links as LLDP draws them.
  returned: always
  type: dict
rtt:
  description: The base RTT estimate and its terms, or null.
  returned: always
  type: dict
inventory:
  description: What was found in the intent's shape (C(switches), C(fabric.base_rtt_us)).
  returned: always
  type: dict
problems:
  description: Declared ports the switches lack or run at another speed (C(field), C(reason)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    api_argument_spec,
    post_switches,
    switches_argument_spec,
)

RETURNED = ("switches", "errors", "topology", "rtt", "inventory", "problems")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            **switches_argument_spec(),
            "check": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    found = post_switches(module, "/discoveries")
    result = {key: found[key] for key in RETURNED}
    if module.params["check"] and found["problems"]:
        listed = "; ".join(f"{p['field']}: {p['reason']}" for p in found["problems"])
        module.fail_json(msg=f"the declared ports differ from the switches: {listed}", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
