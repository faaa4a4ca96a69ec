#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the QJUMP HTB tree on one device, idempotent, with check mode and diff.

Tree: root qdisc ``1:`` (htb, default = the default level's class), class ``1:1`` at line
rate, and one leaf ``1:(10+L)`` per QJUMP level L at that level's rate. A socket whose
SO_PRIORITY is 0x10010 + L lands in level L's class with no filter at all, because HTB first
looks skb->priority up as a class id. The live tree is read back with ``tc`` and only the
differences are applied (a foreign tree under ``1:`` is rebuilt); the result is read back again.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: htb
short_description: QJUMP rate levels as an HTB tree selected by socket priority
description:
  - Builds the QJUMP HTB tree on one device, root qdisc C(1:), class C(1:1) at line rate and
    one leaf C(1:(10+L)) per QJUMP level L at that level's rate, so a socket whose
    C(SO_PRIORITY) is C(0x10010 + L) is limited to level L's rate without any filter.
  - Reads the live tree with C(tc), applies only the differences and reads it back again.
  - Used by the C(sluice.fabric.qjump) role; the variable schema is in sluice's docs/hosts.md.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
requirements:
  - iproute2 (C(tc)) on the managed host
attributes:
  check_mode:
    support: full
    description: Reports what would change; changes nothing.
  diff_mode:
    support: full
    description: Shows the change before and after.
options:
  qjump:
    description:
      - The C(sluice_qjump) variable (device, line_rate_bps, levels, default_level).
      - Required when O(state=present).
    type: dict
  device:
    description: With O(state=absent), the device whose sluice HTB root is removed.
    type: str
  state:
    description:
      - V(present) builds the tree from O(qjump).
      - V(absent) removes sluice's HTB root from O(device).
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: QJUMP levels on eth0
  sluice.fabric.htb:
    qjump:
      device: eth0
      line_rate_bps: 10000000000
      levels:
        - {level: 0, rate_bps: 10000000000, burst_bytes: 65536}
        - {level: 7, rate_bps: 78000000, burst_bytes: 256}

- name: Remove sluice's HTB tree
  sluice.fabric.htb:
    device: eth0
    state: absent
"""

RETURN = r"""
commands:
  description: The C(tc -batch) commands applied (or, in check mode, that would be).
  returned: when O(state=present)
  type: list
  elements: str
  sample: ["class change dev eth0 parent 1:1 classid 1:17 htb rate 78Mbit burst 256b"]
"""

import json
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    HtbClass,
    HtbPlan,
    SchemaError,
    qjump_plan,
)

CLASS_LINE = re.compile(r"^class htb (?P<id>\S+) (?:parent (?P<parent>\S+)|root)(?P<rest>.*)$")
SIZE_UNITS = {"b": 1, "Kb": 1024, "Mb": 1024 * 1024}


def _size(text: str) -> tuple[int, int]:
    """tc's printed size and how far it may be from the stored value (tc rounds K/M sizes)."""
    match = re.match(r"^([\d.]+)(b|Kb|Mb)$", text)
    if not match:
        return -1, 0
    unit = match.group(2)
    slack = {"b": 0, "Kb": 16, "Mb": 1024}[unit]
    return int(float(match.group(1)) * SIZE_UNITS[unit]), slack


def read_classes(text: str) -> dict[str, dict[str, str]]:
    classes: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        match = CLASS_LINE.match(line.strip())
        if not match:
            continue
        tokens = match.group("rest").split()
        fields = dict(zip(tokens[::2], tokens[1::2], strict=False))
        fields["parent"] = match.group("parent") or "1:"
        classes[match.group("id")] = fields
    return classes


def _burst_ok(want: HtbClass, have: dict[str, str]) -> bool:
    if want.burst_bytes is None:
        return True
    printed, slack = _size(have.get("burst", ""))
    # The kernel keeps the burst as a transmit time in 64 ns ticks, and tc prints it back
    # through whole microseconds, so the read-back may fall short by up to two microseconds
    # of sending at this rate (plus tc's K/M rounding).
    tolerance = 2 * (want.rate_bps // 8 // 1_000_000) + 2 + slack
    return abs(printed - want.burst_bytes) <= tolerance


def class_matches(want: HtbClass, have: dict[str, str] | None) -> bool:
    if have is None:
        return False
    prio_ok = want.prio is None or have.get("prio") == str(want.prio)
    return (
        have.get("parent") == want.parent
        and have.get("rate") == want.rate
        and have.get("ceil") == want.ceil
        and prio_ok
        and _burst_ok(want, have)
    )


def class_command(device: str, want: HtbClass) -> str:
    command = (
        f"class replace dev {device} parent {want.parent} classid {want.classid}"
        f" htb rate {want.rate} ceil {want.ceil}"
    )
    if want.burst_bytes is not None:
        command += f" burst {want.burst_bytes}"
    if want.prio is not None:
        command += f" prio {want.prio}"
    return command


def plan_commands(
    plan: HtbPlan, root: dict | None, classes: dict[str, dict[str, str]]
) -> list[str]:
    """tc batch lines that take the live state to the plan; empty when nothing differs."""
    dev = plan.device
    qdisc = f"qdisc add dev {dev} root handle 1: htb default {plan.default_minor:x}"
    ours = root is not None and root.get("kind") == "htb" and root.get("handle") == "1:"
    wanted = {c.classid for c in plan.classes}
    foreign = set(classes) - wanted or any(
        classes[c.classid].get("parent") != c.parent for c in plan.classes if c.classid in classes
    )
    if not ours or foreign:
        # Another tree sits at the root: rebuild from scratch rather than graft onto it.
        # 'replace' swaps any other root kind out together with its classes; an htb root
        # with foreign classes would keep them, so that one is deleted first.
        prefix = [f"qdisc del dev {dev} root"] if ours else []
        fresh = qdisc.replace("qdisc add", "qdisc replace")
        return [*prefix, fresh, *(class_command(dev, c) for c in plan.classes)]
    commands: list[str] = []
    if str(root.get("options", {}).get("default")) != hex(plan.default_minor):
        commands.append(qdisc.replace("qdisc add", "qdisc change"))
    commands += [
        class_command(dev, c) for c in plan.classes if not class_matches(c, classes.get(c.classid))
    ]
    return commands


def describe(classes: dict[str, dict[str, str]], root: dict | None) -> str:
    lines = []
    if root is not None:
        default = root.get("options", {}).get("default", "-")
        lines.append(f"qdisc {root.get('kind')} {root.get('handle')} default {default}")
    for classid in sorted(classes):
        have = classes[classid]
        lines.append(
            f"class {classid} parent {have.get('parent')} rate {have.get('rate')}"
            f" ceil {have.get('ceil')} burst {have.get('burst')} prio {have.get('prio', '-')}"
        )
    return "\n".join(lines) + "\n"


def describe_plan(plan: HtbPlan) -> str:
    lines = [f"qdisc htb 1: default {hex(plan.default_minor)}"]
    for c in sorted(plan.classes, key=lambda c: c.classid):
        burst = f"{c.burst_bytes}b" if c.burst_bytes is not None else "(tc default)"
        prio = c.prio if c.prio is not None else "-"
        shape = f"rate {c.rate} ceil {c.ceil} burst {burst} prio {prio}"
        lines.append(f"class {c.classid} parent {c.parent} {shape}")
    return "\n".join(lines) + "\n"


def read_state(module: AnsibleModule, device: str) -> tuple[dict | None, dict[str, dict[str, str]]]:
    rc, out, err = module.run_command(["tc", "-j", "qdisc", "show", "dev", device])
    if rc != 0:
        module.fail_json(msg=f"cannot read qdiscs of {device}: {err.strip()}")
    root = next((q for q in json.loads(out or "[]") if q.get("root")), None)
    if root is None or root.get("kind") != "htb":
        return root, {}
    rc, out, err = module.run_command(["tc", "class", "show", "dev", device])
    if rc != 0:
        module.fail_json(msg=f"cannot read classes of {device}: {err.strip()}")
    return root, read_classes(out)


def run_batch(module: AnsibleModule, commands: list[str]) -> None:
    rc, _out, err = module.run_command(["tc", "-batch", "-"], data="\n".join(commands) + "\n")
    if rc != 0:
        module.fail_json(msg=f"tc failed: {err.strip()}", commands=commands)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "qjump": {"type": "dict"},
            "device": {"type": "str"},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        },
        required_if=[("state", "present", ("qjump",)), ("state", "absent", ("device",))],
        supports_check_mode=True,
    )
    if module.params["state"] == "absent":
        device = module.params["device"]
        root, classes = read_state(module, device)
        ours = root is not None and root.get("kind") == "htb" and root.get("handle") == "1:"
        if ours and not module.check_mode:
            run_batch(module, [f"qdisc del dev {device} root"])
        module.exit_json(changed=ours, diff={"before": describe(classes, root), "after": ""})
    try:
        plan = qjump_plan(module.params["qjump"])
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    root, classes = read_state(module, plan.device)
    commands = plan_commands(plan, root, classes)
    diff = {
        "before": describe(classes, root),
        "after": describe_plan(plan),
        "before_header": f"tc {plan.device} (current)",
        "after_header": f"tc {plan.device} (sluice)",
    }
    if commands and not module.check_mode:
        run_batch(module, commands)
        root, classes = read_state(module, plan.device)
        leftover = plan_commands(plan, root, classes)
        if leftover:
            module.fail_json(msg="HTB tree differs from the plan after applying", leftover=leftover)
    module.exit_json(changed=bool(commands), commands=commands, diff=diff)


if __name__ == "__main__":
    main()
