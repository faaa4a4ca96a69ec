#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: set kernel sysctls in the host's current network namespace, idempotently.

ansible-core has no sysctl module (it lives in a collection we cannot fetch), so sluice has
its own. Values are read from and written to /proc/sys; the persistent configuration is the
controller's intent, re-applied by the playbook.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: sysctl
short_description: Set sysctls (or sluice's ECN settings) idempotently, with check mode and diff
description:
  - Reads and writes C(/proc/sys) in the current network namespace; the persistent
    configuration is sluice's intent, applied again by the playbook.
  - With O(ecn), the values are C(net.ipv4.tcp_ecn) and the congestion control, checked
    against what the kernel offers.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
attributes:
  check_mode:
    support: full
    description: Reports what would change; changes nothing.
  diff_mode:
    support: full
    description: Shows the change before and after.
options:
  values:
    description: Mapping of sysctl name (dotted) to value.
    type: dict
  ecn:
    description:
      - The C(sluice_ecn) variable (tcp_ecn, congestion_control); see sluice's docs/hosts.md.
    type: dict
"""

EXAMPLES = r"""
- name: Ask for ECN on outgoing connections
  sluice.fabric.sysctl:
    ecn: {tcp_ecn: 1, congestion_control: cubic}

- name: Any sysctl
  sluice.fabric.sysctl:
    values:
      net.core.somaxconn: 4096
"""

RETURN = r"""
values:
  description: The wanted sysctl values.
  returned: success
  type: dict
changes:
  description: The sysctls that differed and were (or, in check mode, would be) set.
  returned: success
  type: dict
"""

import os
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    SchemaError,
    check_congestion_control,
    ecn_sysctls,
    sysctl_path,
)

AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"
ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def _in_initial_netns() -> bool:
    try:
        return os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/1/ns/net").st_ino
    except OSError:
        return False  # PID 1 hidden from us: assume the stricter rule


def _desired(params: dict) -> dict[str, str]:
    if params["ecn"] is not None:
        values = ecn_sysctls(params["ecn"])
        allowed = None if _in_initial_netns() else Path(ALLOWED_CC).read_text()
        check_congestion_control(values, Path(AVAILABLE_CC).read_text(), allowed)
        return values
    return {str(name): str(value).strip() for name, value in params["values"].items()}


def _read(path: str) -> str | None:
    try:
        # Multi-value sysctls come back tab-separated; compare them space-separated.
        return " ".join(Path(path).read_text().split())
    except FileNotFoundError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={"values": {"type": "dict"}, "ecn": {"type": "dict"}},
        required_one_of=[("values", "ecn")],
        mutually_exclusive=[("values", "ecn")],
        supports_check_mode=True,
    )
    try:
        desired = _desired(module.params)
        paths = {name: sysctl_path(name) for name in desired}
    except (SchemaError, OSError) as exc:
        module.fail_json(msg=str(exc))
    before: dict[str, str] = {}
    for name, path in paths.items():
        current = _read(path)
        if current is None:
            module.fail_json(msg=f"{name}: no such sysctl on this host ({path})")
        before[name] = current
    changes = {n: v for n, v in desired.items() if before[n] != " ".join(v.split())}
    if changes and not module.check_mode:
        for name, value in changes.items():
            try:
                Path(paths[name]).write_text(value + "\n")
            except OSError as exc:
                module.fail_json(msg=f"{name}: cannot set {value!r}: {exc}")
    diff = {
        "before": "".join(f"{n} = {before[n]}\n" for n in sorted(desired)),
        "after": "".join(f"{n} = {desired[n]}\n" for n in sorted(desired)),
        "before_header": "sysctl (current)",
        "after_header": "sysctl (sluice)",
    }
    module.exit_json(changed=bool(changes), values=desired, changes=changes, diff=diff)


if __name__ == "__main__":
    main()
