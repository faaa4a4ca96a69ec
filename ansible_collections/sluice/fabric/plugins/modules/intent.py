#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: make sluice's intent what a file or a mapping says, with check mode and diff."""

from __future__ import annotations

DOCUMENTATION = r"""
module: intent
short_description: Apply a sluice intent (service classes, fabric, switches, hosts)
description:
  - Makes the intent stored in sluice the one given in O(src) or O(intent). sluice validates
    it first (every problem is named by its field, nothing is stored), then the module
    compares it with the current intent as sluice would store it.
  - When nothing differs no version is made and the task reports C(changed=false).
  - Otherwise a new intent version is written with C(If-Match) on the version read, so a
    concurrent change makes the task fail rather than be overwritten.
  - In check mode nothing is written; the task returns the per-switch plan from what each
    switch runs to the proposed intent, and with C(--diff) the intent before and after.
  - Writing an intent does not touch switches or hosts; roll it out with
    M(sluice.fabric.rollout) and M(sluice.fabric.hosts_apply).
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
attributes:
  check_mode:
    support: full
    description: Validates and plans; writes nothing.
  diff_mode:
    support: full
    description: The stored intent before and the proposed one after, as YAML.
options:
  src:
    description:
      - Path of a YAML (or JSON) intent file on the node that runs the module.
      - Mutually exclusive with O(intent).
    type: path
  intent:
    description: The intent as a mapping (for example from a C(lookup) or C(from_yaml)).
    type: dict
  reason:
    description: Why, recorded with the new version and in the audit log.
    type: str
    default: applied with the sluice.fabric.intent module
notes:
  - Needs a token with the C(operator) role (C(viewer) is enough in check mode).
requirements:
  - PyYAML, for O(src) files in YAML (ansible-core depends on it)
"""

EXAMPLES = r"""
- name: Apply the fabric's intent
  sluice.fabric.intent:
    src: intent.yaml
    reason: "change 4711: more weight for storage"
  register: applied

- name: Plan only (nothing is written)
  sluice.fabric.intent:
    src: intent.yaml
  check_mode: true
  diff: true
  register: planned

- name: Apply an intent built in the play
  sluice.fabric.intent:
    intent: "{{ lookup('ansible.builtin.file', 'intent.yaml') | from_yaml }}"
    url: https://sluice.example.net
    token: "{{ vault_sluice_token }}"
"""

RETURN = r"""
version:
  description: The intent version now current (in check mode, the one read).
  returned: always
  type: int
  sample: 7
previous_version:
  description: The version read before writing (0 when sluice had no intent).
  returned: always
  type: int
  sample: 6
plans:
  description:
    - Per switch, how many CONFIG_DB operations the change means, by kind and table.
    - Empty when nothing changes.
  returned: always
  type: list
  elements: dict
  sample: [{"switch": "leaf1", "counts": {"add": 0, "change": 2, "delete": 0},
            "counts_by_table": {"SCHEDULER": {"change": 2}}}]
ops:
  description: In check mode, every planned operation per switch (kind, table, key, fields).
  returned: in check mode, when something would change
  type: dict
"""

import json

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
    version_number,
)

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False


def read_intent(module: AnsibleModule) -> dict:
    if module.params["intent"] is not None:
        return module.params["intent"]
    path = module.params["src"]
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read the intent file {path}: {exc}")
    if path.endswith(".json"):
        loaded = json.loads(text)
    else:
        if not HAS_YAML:
            module.fail_json(msg=missing_required_lib("PyYAML"))
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            module.fail_json(msg=f"{path} is not YAML: {exc}")
    if not isinstance(loaded, dict):
        module.fail_json(msg=f"{path} does not hold an intent (a mapping at the top)")
    return loaded


def render(intent: dict | None) -> str:
    if intent is None:
        return ""
    if HAS_YAML:
        return yaml.safe_dump(intent, sort_keys=False, default_flow_style=False)
    return json.dumps(intent, indent=2) + "\n"


def plan_summary(plans: list[dict]) -> list[dict]:
    return [
        {"switch": p["switch"], "counts": p["counts"], "counts_by_table": p["counts_by_table"]}
        for p in plans
        if p.get("ops")
    ]


def apply(module: AnsibleModule, api: SluiceApi) -> dict:
    proposed = read_intent(module)
    version, current = api.current_intent()
    stored_form = api.post("/intent/validate", proposed).data["intent"]
    result = {"version": version, "previous_version": version, "plans": [], "changed": False}
    if stored_form == current:
        return result
    plans = api.post("/plans", {"intent": proposed}).data["plans"]
    result["plans"] = plan_summary(plans)
    result["changed"] = True
    result["diff"] = {
        "before": render(current),
        "after": render(stored_form),
        "before_header": f"sluice intent version {version}",
        "after_header": "proposed intent",
    }
    if module.check_mode:
        result["ops"] = {p["switch"]: p["ops"] for p in plans if p.get("ops")}
        return result
    written = api.put(
        "/intent",
        {"intent": proposed, "reason": module.params["reason"]},
        headers={"If-Match": f'"{version}"'},
    ).data
    result["version"] = version_number(written["version"])
    result["changed"] = bool(written.get("changed", True))
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "src": {"type": "path"},
            "intent": {"type": "dict"},
            "reason": {"type": "str", "default": "applied with the sluice.fabric.intent module"},
        },
        mutually_exclusive=[("src", "intent")],
        required_one_of=[("src", "intent")],
        supports_check_mode=True,
    )
    try:
        result = apply(module, SluiceApi.from_params(module.params))
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
