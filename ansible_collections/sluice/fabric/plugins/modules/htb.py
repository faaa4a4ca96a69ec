#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the QJUMP HTB tree on one device, idempotent, with check mode and diff.

Tree: root qdisc ``1:`` (htb, default = the default level's class), class ``1:1`` at line
rate, and one leaf ``1:(10+L)`` per QJUMP level L at that level's rate, ceil = rate and
cburst = burst (a level never borrows). A socket whose SO_PRIORITY is 0x10010 + L lands in
level L's class with no filter at all, because HTB first looks skb->priority up as a class id.
With ``packet_bytes`` (P) given, every level below the line rate gets a tbf qdisc under its
class, the exact limiter (module_utils/hostqos.py ``TbfLeaf``), and a level whose queue is
counted in packets (``queue_packets``) a pfifo under that tbf. The live tree is read back
with ``tc`` and only the differences are applied (a foreign tree under ``1:`` is rebuilt); the
result is read back again, and every burst the kernel holds differently from what was asked
is reported in ``rounding`` (and as a warning), never accepted silently.
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
rounding:
  description:
    - Every level whose burst the kernel holds differently from what the variables asked
      (tc counts bursts in whole microseconds at the class rate), read back after applying.
  returned: when O(state=present)
  type: list
  elements: dict
  sample: [{"level": 7, "qdisc": "htb", "field": "burst", "asked_bytes": 256, "kernel_bytes": 243}]
"""

import json
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    HTB_LEVEL_MINOR_BASE,
    HtbClass,
    HtbPlan,
    SchemaError,
    TbfLeaf,
    qjump_plan,
    tc_rate_bps,
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


def _size_ok(asked: int | None, printed_text: str, rate_bps: int) -> bool:
    if asked is None:
        return True
    printed, slack = _size(printed_text)
    # The kernel keeps the burst as a transmit time in 64 ns ticks, and tc prints it back
    # through whole microseconds, so the read-back may fall short by up to two microseconds
    # of sending at this rate (plus tc's K/M rounding). That difference is reported
    # (``rounding``), not hidden: the tolerance only decides whether to re-apply.
    tolerance = 2 * (rate_bps // 8 // 1_000_000) + 2 + slack
    return abs(printed - asked) <= tolerance


def _burst_ok(want: HtbClass, have: dict[str, str]) -> bool:
    return _size_ok(want.burst_bytes, have.get("burst", ""), want.rate_bps) and _size_ok(
        want.cburst_bytes, have.get("cburst", ""), want.rate_bps
    )


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
    if want.cburst_bytes is not None:
        command += f" cburst {want.cburst_bytes}"
    if want.prio is not None:
        command += f" prio {want.prio}"
    return command


def leaf_command(device: str, want: HtbClass) -> str | None:
    return None if want.tbf is None else _tbf_command(device, want.classid, want.tbf)


def _tbf_command(device: str, classid: str, leaf: TbfLeaf) -> str:
    return (
        f"qdisc replace dev {device} parent {classid} handle {leaf.handle} tbf"
        f" rate {leaf.rate} burst {leaf.burst_bytes} peakrate {leaf.peakrate}"
        f" mtu {leaf.packet_bytes} limit {leaf.limit_bytes}{_mpu_option(leaf)}"
    )


def child_command(device: str, want: HtbClass) -> str | None:
    """The pfifo under a level's tbf when its queue is counted in packets. It follows every
    tbf line: changing a tbf sets its inner fifo's limit to the tbf's byte limit, a pfifo's
    as a packet count (Linux sch_tbf.c tbf_change, fifo_set_limit)."""
    leaf = want.tbf
    if leaf is None or leaf.queue_packets is None:
        return None
    return (
        f"qdisc replace dev {device} parent {leaf.child_parent} handle {leaf.child_handle}"
        f" pfifo limit {leaf.queue_packets}"
    )


def child_matches(want: HtbClass, have: dict | None) -> bool:
    """The queue under a level's tbf: our pfifo of ``queue_packets``, or, counted in bytes,
    tbf's own default fifo, which tc does not list (any listed one is foreign)."""
    leaf = want.tbf
    if leaf is None or leaf.queue_packets is None:
        return have is None
    if have is None or have.get("kind") != "pfifo" or have.get("handle") != leaf.child_handle:
        return False
    return int(have.get("options", {}).get("limit", -1)) == leaf.queue_packets


def level_leaf_commands(device: str, want: HtbClass, leaves: dict[str, dict]) -> list[str]:
    """tc lines that take one level's leaf qdiscs to the plan (empty when they match)."""
    leaf = want.tbf
    if leaf is None:
        if leaf_matches(want, leaves.get(want.classid)):
            return []
        # a foreign leaf qdisc under a level that should have none
        return [f"qdisc del dev {device} parent {want.classid}"]
    tbf_ok = leaf_matches(want, leaves.get(want.classid))
    child = leaves.get(leaf.child_parent)
    if tbf_ok and child_matches(want, child):
        return []
    lines: list[str] = []
    if leaf.queue_packets is None and child is not None:
        # a byte-counted queue wants tbf's own fifo back: a new tbf brings one
        lines.append(f"qdisc del dev {device} parent {want.classid}")
        tbf_ok = False
    if not tbf_ok:
        lines.append(_tbf_command(device, want.classid, leaf))
    line = child_command(device, want)
    if line is not None:
        lines.append(line)
    return lines


def _mpu_option(leaf: TbfLeaf) -> str:
    """tbf's mpu only where a level charges every packet as P (``window: sliding``)."""
    return f" mpu {leaf.mpu_bytes}" if leaf.mpu_bytes else ""


def leaf_matches(want: HtbClass, have: dict | None) -> bool:
    """The tbf under a level is ours when kind, rate and the kernel's burst agree; a level
    without one must have none (another leaf qdisc there is replaced by the default)."""
    leaf = want.tbf
    if leaf is None:
        return have is None
    if have is None or have.get("kind") != "tbf" or have.get("handle") != leaf.handle:
        return False
    options = have.get("options", {})
    rate_ok = int(options.get("rate", -1)) * 8 == tc_rate_bps(leaf.rate)
    # tc prints the burst through whole microseconds again: compare like the HTB bursts.
    burst_ok = _size_ok(leaf.burst_bytes, f"{options.get('burst', -1)}b", want.rate_bps)
    # tc prints mpu only when it is set; a charge that differs is re-applied.
    mpu_ok = int(options.get("mpu", 0)) == leaf.mpu_bytes
    return rate_ok and burst_ok and mpu_ok and _queue_ok(leaf, options)


def _queue_ok(leaf: TbfLeaf, options: dict) -> bool:
    """tc shows a tbf's queue only as the latency it allows, in whole microseconds: the queue
    at the rate less the bucket's time, or the queue at the peak rate less the mtu's time when
    that is longer (iproute2 q_tbf.c, tbf_print_opt). A queue the kernel does not hold is
    re-applied (fabric.qjump.window changes it without the rate, docs/hosts.md)."""
    rate = int(options.get("rate", 0))
    if rate <= 0 or "lat" not in options:
        return False
    peak = tc_rate_bps(leaf.peakrate) / 8
    at_rate = (leaf.limit_bytes - int(options.get("burst", 0))) / rate
    at_peak = (leaf.limit_bytes - leaf.packet_bytes) / peak
    return abs(int(options["lat"]) - max(at_rate, at_peak) * 1e6) <= 3


def plan_commands(
    plan: HtbPlan,
    root: dict | None,
    classes: dict[str, dict[str, str]],
    leaves: dict[str, dict] | None = None,
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
        leaf_lines = [
            line
            for c in plan.classes
            for line in (leaf_command(dev, c), child_command(dev, c))
            if line is not None
        ]
        return [*prefix, fresh, *(class_command(dev, c) for c in plan.classes), *leaf_lines]
    commands: list[str] = []
    if str(root.get("options", {}).get("default")) != hex(plan.default_minor):
        commands.append(qdisc.replace("qdisc add", "qdisc change"))
    commands += [
        class_command(dev, c) for c in plan.classes if not class_matches(c, classes.get(c.classid))
    ]
    leaves = leaves or {}
    for c in plan.classes:
        if c.classid != f"1:{1:x}":
            commands += level_leaf_commands(dev, c, leaves)
    return commands


def rounding_report(
    plan: HtbPlan, classes: dict[str, dict[str, str]], leaves: dict[str, dict]
) -> list[dict[str, object]]:
    """Every burst the kernel holds differently from what the variables asked (read back)."""
    report: list[dict[str, object]] = []
    for want in plan.classes:
        if want.burst_bytes is None:
            continue
        level = int(want.classid.split(":")[1], 16) - HTB_LEVEL_MINOR_BASE
        have = classes.get(want.classid, {})
        for field, asked in (("burst", want.burst_bytes), ("cburst", want.cburst_bytes)):
            printed, _slack = _size(have.get(field, ""))
            if asked is not None and printed != asked:
                report.append(
                    {
                        "level": level,
                        "qdisc": "htb",
                        "field": field,
                        "asked_bytes": asked,
                        "kernel_bytes": printed,
                    }
                )
        leaf = want.tbf
        if leaf is None:
            continue
        held = int(leaves.get(want.classid, {}).get("options", {}).get("burst", -1))
        if held != want.burst_bytes:
            report.append(
                {
                    "level": level,
                    "qdisc": "tbf",
                    "field": "burst",
                    "asked_bytes": want.burst_bytes,
                    "sent_to_tc_bytes": leaf.burst_bytes,
                    "kernel_bytes": held,
                }
            )
    return report


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
        cburst = f" cburst {c.cburst_bytes}b" if c.cburst_bytes is not None else ""
        shape = f"rate {c.rate} ceil {c.ceil} burst {burst}{cburst} prio {prio}"
        lines.append(f"class {c.classid} parent {c.parent} {shape}")
        if c.tbf is not None:
            leaf = c.tbf
            lines.append(
                f"qdisc tbf {leaf.handle} parent {c.classid} rate {leaf.rate}"
                f" burst {leaf.kernel_burst_bytes}b mtu {leaf.packet_bytes}"
                f" limit {leaf.limit_bytes}{_mpu_option(leaf)}"
            )
            if leaf.queue_packets is not None:
                lines.append(
                    f"qdisc pfifo {leaf.child_handle} parent {leaf.child_parent}"
                    f" limit {leaf.queue_packets}p"
                )
    return "\n".join(lines) + "\n"


def read_state(
    module: AnsibleModule, device: str
) -> tuple[dict | None, dict[str, dict[str, str]], dict[str, dict]]:
    """(root qdisc, HTB classes, leaf qdiscs by parent class id), read with tc."""
    rc, out, err = module.run_command(["tc", "-j", "qdisc", "show", "dev", device])
    if rc != 0:
        module.fail_json(msg=f"cannot read qdiscs of {device}: {err.strip()}")
    qdiscs = json.loads(out or "[]")
    root = next((q for q in qdiscs if q.get("root")), None)
    if root is None or root.get("kind") != "htb":
        return root, {}, {}
    leaves = {q["parent"]: q for q in qdiscs if not q.get("root") and "parent" in q}
    # tc prints a tbf's mpu only with -d (iproute2 q_tbf.c); -d also changes the burst's
    # form, so only the mpu is taken from it.
    rc, out, err = module.run_command(["tc", "-j", "-d", "qdisc", "show", "dev", device])
    if rc != 0:
        module.fail_json(msg=f"cannot read qdisc details of {device}: {err.strip()}")
    for detailed in json.loads(out or "[]"):
        leaf = leaves.get(detailed.get("parent", ""))
        if leaf is not None and "mpu" in detailed.get("options", {}):
            leaf.setdefault("options", {})["mpu"] = detailed["options"]["mpu"]
    rc, out, err = module.run_command(["tc", "class", "show", "dev", device])
    if rc != 0:
        module.fail_json(msg=f"cannot read classes of {device}: {err.strip()}")
    return root, read_classes(out), leaves


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
        root, classes, _leaves = read_state(module, device)
        ours = root is not None and root.get("kind") == "htb" and root.get("handle") == "1:"
        if ours and not module.check_mode:
            run_batch(module, [f"qdisc del dev {device} root"])
        module.exit_json(changed=ours, diff={"before": describe(classes, root), "after": ""})
    try:
        plan = qjump_plan(module.params["qjump"])
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    root, classes, leaves = read_state(module, plan.device)
    commands = plan_commands(plan, root, classes, leaves)
    diff = {
        "before": describe(classes, root),
        "after": describe_plan(plan),
        "before_header": f"tc {plan.device} (current)",
        "after_header": f"tc {plan.device} (sluice)",
    }
    if commands and not module.check_mode:
        run_batch(module, commands)
        root, classes, leaves = read_state(module, plan.device)
        leftover = plan_commands(plan, root, classes, leaves)
        if leftover:
            module.fail_json(msg="HTB tree differs from the plan after applying", leftover=leftover)
    rounding = rounding_report(plan, classes, leaves) if not module.check_mode else []
    for item in rounding:
        module.warn(
            f"QJUMP level {item['level']}: {item['qdisc']} {item['field']} asked "
            f"{item['asked_bytes']} B, the kernel holds {item['kernel_bytes']} B "
            "(tc counts bursts in whole microseconds at the level's rate)"
        )
    module.exit_json(changed=bool(commands), commands=commands, diff=diff, rounding=rounding)


if __name__ == "__main__":
    main()
