#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: configure the intent's end hosts with sluice's host rollout."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hosts_apply
short_description: Configure the intent's end hosts (ECN, QJUMP, DSCP, PIAS) through sluice
description:
  - Asks sluice to run its host playbook over every host of the current intent, O(batch_size)
    hosts at a time, stopping once more hosts than O(failure_budget) failed or were
    unreachable. sluice renders each host's variables from the intent and records every
    host's result.
  - The task reports C(changed=true) only when some host changed, so a second run over
    configured hosts reports C(changed=false).
  - With O(wait) the task waits for the run and fails, naming each failed host and why, when
    a host failed or the run halted.
  - In check mode sluice runs the playbook in check mode and the task returns, per host, the
    tasks that would change with their diffs; nothing changes on the hosts.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
attributes:
  check_mode:
    support: full
    description: sluice's host plan (Ansible check mode on the hosts).
  diff_mode:
    support: full
    description: The would-be changes per host and task.
options:
  batch_size:
    description: Hosts per batch; all hosts at once when not given.
    type: int
  failure_budget:
    description: Stop once more hosts than this failed or were unreachable.
    type: int
    default: 0
  wait:
    description: Wait until the host run has finished.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait with O(wait).
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two looks at the run.
    type: float
    default: 2
notes:
  - Needs a token with the C(operator) role, in check mode too (sluice's host plan reaches the
    hosts).
"""

EXAMPLES = r"""
- name: Configure the hosts, ten at a time, tolerating one failure
  sluice.fabric.hosts_apply:
    batch_size: 10
    failure_budget: 1

- name: What would change on the hosts
  sluice.fabric.hosts_apply:
  check_mode: true
  diff: true
"""

RETURN = r"""
run:
  description: The host run as sluice records it (state, counts, per-host results).
  returned: always
  type: dict
changed_hosts:
  description: Hosts that changed (in check mode, would change).
  returned: always
  type: list
  elements: str
failed_hosts:
  description: Hosts that failed, were unreachable or were not run, with the reason.
  returned: when a host did not succeed
  type: list
  elements: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
)

BAD = frozenset({"failed", "unreachable", "not_run"})
# The API records an apply as pending; the controller's worker picks it up and runs it.
UNFINISHED = frozenset({"pending", "running", "rolling_back"})


def wait_for(module: AnsibleModule, api: SluiceApi, run: dict) -> dict:
    deadline = time.monotonic() + module.params["wait_timeout"]
    while run["state"] in UNFINISHED:
        if time.monotonic() >= deadline:
            module.fail_json(
                msg=f"host run {run['id']} is still running after "
                f"{module.params['wait_timeout']} s",
                run=run,
            )
        time.sleep(module.params["poll_interval"])
        run = api.get(f"/hosts/runs/{int(run['id'])}").data
    return run


def diff_of(run: dict) -> str:
    lines = []
    for result in run.get("results", []):
        for task in result.get("changed_tasks", []):
            lines.append(f"{result['host']}: {task.get('role') or '-'}: {task['task']}")
            diff = task.get("diff")
            for item in diff if isinstance(diff, list) else [diff] if diff else []:
                if isinstance(item, dict) and "after" in item:
                    lines.append(f"  before: {item.get('before', '')!s}".rstrip())
                    lines.append(f"  after: {item['after']!s}".rstrip())
    return "\n".join(lines) + ("\n" if lines else "")


def run_hosts(module: AnsibleModule, api: SluiceApi) -> dict:
    if module.check_mode:
        run = api.post("/hosts/plan").data
    else:
        body = {"failure_budget": module.params["failure_budget"]}
        if module.params["batch_size"] is not None:
            body["batch_size"] = module.params["batch_size"]
        run = api.post("/hosts/apply", body).data
        if module.params["wait"]:
            run = wait_for(module, api, run)
    results = run.get("results", [])
    changed_hosts = [r["host"] for r in results if r["status"] == "changed"]
    result = {
        "changed": bool(changed_hosts),
        "run": run,
        "changed_hosts": changed_hosts,
        "diff": {"prepared": diff_of(run)},
    }
    failed = [
        {"host": r["host"], "status": r["status"], "message": r.get("message")}
        for r in results
        if r["status"] in BAD
    ]
    if failed or run["state"] in ("halted", "error", "interrupted", "rolled_back"):
        named = ", ".join(f"{f['host']} ({f['status']}: {f['message']})" for f in failed)
        module.fail_json(
            msg=f"host run {run['id']} is {run['state']}: {named or run.get('message')}",
            failed_hosts=failed,
            **result,
        )
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **api_argument_spec(),
            "batch_size": {"type": "int"},
            "failure_budget": {"type": "int", "default": 0},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 3600},
            "poll_interval": {"type": "float", "default": 2.0},
        },
        supports_check_mode=True,
    )
    try:
        result = run_hosts(module, SluiceApi.from_params(module.params))
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
