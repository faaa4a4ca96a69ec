#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: a NIC's side of sluice's lossless classes (``sluice_lossless``), idempotently.

DSCP trust and PFC go through the kernel's DCB netlink interface with iproute2's ``dcb``
(dcb-app(8), dcb-pfc(8)); DCQCN through the mlx5 driver's per-priority sysfs knobs. What the
NIC cannot do is reported by device and capability, never applied in pretence.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: lossless
short_description: DSCP trust, PFC and DCQCN of sluice's lossless classes on a NIC
description:
  - For each lossless class, maps its DSCP values to its PFC priority in the NIC's DCB
    application table (C(dcb app), which makes NICs such as mlx5 trust DSCP) and enables PFC
    on that priority (C(dcb pfc)).
  - Enables DCQCN's notification and reaction points on the priority where the driver has the
    knobs (C(/sys/class/net/DEV/ecn/roce_np/enable/PRIO), C(roce_rp/enable/PRIO)), and, with
    the variable's C(cnp), sets the DSCP and priority the NIC sends CNPs with
    (C(roce_np/cnp_dscp), C(roce_np/cnp_802p_prio)).
  - Keeps a record of what it set (under O(state_dir)), so a class removed from the variable
    is taken back and what the operator had set is left alone.
  - A device without DCB support or without the DCQCN knobs is reported with a warning and in
    RV(unsupported), naming the device and the capability; nothing is claimed as applied.
author: sluice developers (!UNKNOWN)
version_added: 0.2.0
attributes:
  check_mode:
    support: full
    description: Reports what would change; changes nothing.
  diff_mode:
    support: full
    description: Shows the DCB entries and knobs before and after.
options:
  lossless:
    description: The C(sluice_lossless) variable (device, trust, classes, cnp); see
      docs/hosts.md.
    type: dict
    required: true
  state_dir:
    description: Where the record of what sluice set is kept (cleared at boot, as the NIC's
      DCB settings are).
    type: path
    default: /run/sluice/lossless
"""

EXAMPLES = r"""
- name: RoCE class on priority 3
  sluice.fabric.lossless:
    lossless:
      device: eth0
      trust: dscp
      classes:
        - {name: roce, dscp: [26], pfc_priority: 3, dcqcn: true}
      cnp: {dscp: 48, priority: 6}
"""

RETURN = r"""
unsupported:
  description: What the device cannot do, one entry per device and capability.
  returned: always
  type: list
  elements: dict
applied:
  description: The commands and knob writes made (or, in check mode, that would be made).
  returned: always
  type: list
  elements: str
"""

import json
import os
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.lossless import (
    DscpTaken,
    LosslessWant,
    Owned,
    SchemaError,
    dcb_lines,
    knob_lines,
    lossless_want,
    parse_dscp_prio,
    parse_prio_pfc,
    plan_dcb,
    plan_knobs,
    wanted_knobs,
)

NOT_SUPPORTED = "Operation not supported"


class Lossless:
    """One device's lossless settings through ``module`` (run_command, check mode, warn);
    ``sysfs`` is where the driver's knobs are mounted."""

    def __init__(self, module: AnsibleModule, want: LosslessWant, sysfs: str = "/sys") -> None:
        self.module = module
        self.want = want
        self.sysfs = sysfs
        self.device = want.device
        self.unsupported: list[dict[str, str]] = []
        self.applied: list[str] = []
        self.before = ""
        self.after = ""

    def report(self, capability: str, reason: str, wanted: str) -> None:
        entry = {"device": self.device, "capability": capability, "reason": reason}
        self.unsupported.append(entry)
        self.module.warn(f"{self.device}: no {capability} ({reason}); not applied: {wanted}")

    def dcb(self, owned: Owned) -> tuple[frozenset[int], frozenset[tuple[int, int]]]:
        """Trust DSCP and PFC through dcb; returns what sluice owns afterwards."""
        wanted = ", ".join(
            f"DSCP {list(c.dscp)} -> priority {c.pfc_priority} with PFC" for c in self.want.classes
        )
        tool = self.module.get_bin_path("dcb")
        if tool is None:
            self.report("DCB tool", "iproute2's dcb is not installed", wanted or "give-back")
            return owned.pfc, owned.dscp_prio
        rc, out, err = self.module.run_command(
            [tool, "pfc", "show", "dev", self.device, "prio-pfc"]
        )
        if rc != 0 and NOT_SUPPORTED in err:
            if wanted:
                self.report("DCB support", f"dcbnl: {err.strip()}", wanted)
            return owned.pfc, owned.dscp_prio
        if rc != 0:
            self.module.fail_json(msg=f"{self.device}: dcb pfc show failed: {err.strip()}")
        pfc_now = parse_prio_pfc(out)
        rc, out, err = self.module.run_command(
            [tool, "-N", "app", "show", "dev", self.device, "dscp-prio"]
        )
        if rc != 0:
            self.module.fail_json(msg=f"{self.device}: dcb app show failed: {err.strip()}")
        app_now = parse_dscp_prio(out)
        try:
            plan = plan_dcb(self.want, pfc_now, app_now, owned)
        except DscpTaken as exc:
            self.module.fail_json(msg=str(exc))
        pfc_after = (pfc_now | plan.pfc_on) - plan.pfc_off
        app_after = (app_now | plan.app_add) - plan.app_del
        self.before += dcb_lines(self.device, pfc_now, app_now)
        self.after += dcb_lines(self.device, pfc_after, app_after)
        dev = ["dev", self.device]
        commands = []
        if plan.app_del:
            commands.append(["app", "del", *dev, "dscp-prio", *_pairs(plan.app_del)])
        if plan.app_add:
            commands.append(["app", "add", *dev, "dscp-prio", *_pairs(plan.app_add)])
        states = dict.fromkeys(plan.pfc_off, "off") | dict.fromkeys(plan.pfc_on, "on")
        if states:
            commands.append(["pfc", "set", *dev, "prio-pfc", *_states(states)])
        for command in commands:
            self.applied.append("dcb " + " ".join(command))
            if not self.module.check_mode:
                rc, _out, err = self.module.run_command([tool, *command])
                if rc != 0:
                    self.module.fail_json(msg=f"{self.device}: dcb {' '.join(command)}: {err}")
        return plan.pfc, plan.dscp_prio

    def knobs(self, owned: Owned) -> dict[str, str]:
        """DCQCN's knobs; returns the knobs sluice owns afterwards with their earlier values."""
        if not self.want.dcqcn and not owned.knobs:
            return owned.knobs
        root = Path(f"{self.sysfs}/class/net/{self.device}/ecn")
        if not root.is_dir():
            if self.want.dcqcn:
                priorities = ", ".join(str(p) for p in sorted(self.want.dcqcn))
                self.report(
                    "DCQCN knobs",
                    f"{root} is absent: the driver exposes no roce_np/roce_rp",
                    f"DCQCN on priority {priorities}",
                )
            return owned.knobs
        paths = set(wanted_knobs(self.want, self.sysfs))
        now = {path: _read(path) for path in paths | set(owned.knobs)}
        present = {path: value for path, value in now.items() if value is not None}
        writes, after = plan_knobs(self.want, present, owned, self.sysfs)
        self.before += knob_lines(present)
        self.after += knob_lines(present | writes)
        for path, value in writes.items():
            self.applied.append(f"{path} = {value}")
            if not self.module.check_mode:
                try:
                    Path(path).write_text(value + "\n")
                except OSError as exc:
                    self.module.fail_json(msg=f"{self.device}: cannot write {path}: {exc}")
        return after

    def apply(self, owned: Owned) -> Owned:
        """Both parts; what sluice owns on the device afterwards."""
        pfc, dscp_prio = self.dcb(owned)
        return Owned(pfc=pfc, dscp_prio=dscp_prio, knobs=self.knobs(owned))


def _pairs(entries: frozenset[tuple[int, int]]) -> list[str]:
    return [f"{d}:{p}" for d, p in sorted(entries)]


def _states(states: dict[int, str]) -> list[str]:
    return [f"{p}:{s}" for p, s in sorted(states.items())]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def record_path(state_dir: str, device: str) -> Path:
    """One record per network namespace and device: namespaced hosts share a filesystem."""
    try:
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        netns = 0
    return Path(state_dir) / f"net{netns}-{device}.json"


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "lossless": {"type": "dict", "required": True},
            "state_dir": {"type": "path", "default": "/run/sluice/lossless"},
        },
        supports_check_mode=True,
    )
    try:
        want = lossless_want(module.params["lossless"])
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    record = record_path(module.params["state_dir"], want.device)
    try:
        owned = Owned.from_json(json.loads(record.read_text())) if record.exists() else Owned()
    except (OSError, ValueError) as exc:
        module.fail_json(msg=f"{record}: unreadable record of what sluice set: {exc}")
    if not want.classes and owned.empty:
        module.exit_json(changed=False, unsupported=[], applied=[], msg="no lossless class")
    nic = Lossless(module, want)
    after = nic.apply(owned)
    if not module.check_mode and after != owned:
        try:
            if after.empty:
                record.unlink(missing_ok=True)
            else:
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps(after.to_json()) + "\n")
        except OSError as exc:
            module.fail_json(msg=f"{record}: cannot keep the record of what sluice set: {exc}")
    names = [f"{u['device']}: no {u['capability']}" for u in nic.unsupported]
    diff = {
        "before": nic.before,
        "after": nic.after,
        "before_header": f"{want.device} (current)",
        "after_header": f"{want.device} (sluice)",
    }
    module.exit_json(
        changed=bool(nic.applied),
        unsupported=nic.unsupported,
        applied=nic.applied,
        msg="; ".join(names) if names else "lossless classes in place",
        diff=diff,
    )


if __name__ == "__main__":
    main()
