#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: how the fabric is doing, as sluice sees it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: health_info
short_description: The fabric's health as sluice sees it
description:
  - Reads C(GET /api/v1/health) when the sluice API has it. With an older API it assembles
    the same picture from C(/healthz) (the API and its database), the last reconcile run of
    every switch, the newest drift events and the newest rollout.
  - C(healthy) is false when the database does not answer, a switch's last reconcile run
    did not converge, or the newest rollout halted or left switches not verified.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode too.
  diff_mode:
    support: none
    description: Nothing to show as a diff.
notes:
  - Needs a token with the C(viewer) role.
"""

EXAMPLES = r"""
- name: Read the fabric's health
  sluice.fabric.health_info:
  register: health

- name: Stop when the fabric is not healthy
  ansible.builtin.assert:
    that: health.healthy
    fail_msg: "{{ health.problems | join('; ') }}"
"""

RETURN = r"""
healthy:
  description: Whether nothing below is a problem.
  returned: always
  type: bool
problems:
  description: What is wrong, one sentence each.
  returned: always
  type: list
  elements: str
health:
  description: What sluice reported (its own health document, or the parts read).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.api import (
    ApiError,
    SluiceApi,
    api_argument_spec,
    describe_failures,
    not_verified,
)

GOOD_RECONCILE = frozenset({"converged", "corrected"})
DRIFT_SHOWN = 10  # the newest drift events the health document carries


def assembled(api: SluiceApi) -> tuple[dict, list[str]]:
    problems = []
    try:
        service = api.request("GET", "/healthz").data
    except ApiError as exc:
        service = {"status": "unavailable", "detail": str(exc)}
        problems.append(f"the sluice API or its database does not answer: {exc}")
    runs = api.get("/reconcile").data["items"]
    for run in runs:
        if run["status"] not in GOOD_RECONCILE:
            problems.append(f"switch {run['switch']}: last reconcile {run['status']}")
    drift = api.get("/drift", limit=DRIFT_SHOWN).data
    latest = api.latest_rollout()
    if latest is not None:
        failures = not_verified(latest)
        if latest["state"] == "halted" or (latest["state"] == "completed" and failures):
            problems.append(
                f"rollout {latest['id']} {latest['state']}: {describe_failures(failures)}"
            )
        latest = {k: v for k, v in latest.items() if k != "results"}
    parts = {"service": service, "reconcile": runs, "last_rollout": latest}
    parts["drift"] = {"total": drift["total"], "newest": drift["items"]}
    return parts, problems


def read(api: SluiceApi) -> dict:
    try:
        health = api.get("/health").data
    except ApiError as exc:
        if exc.status not in (404, 405):
            raise
        health, problems = assembled(api)
        return {"changed": False, "healthy": not problems, "problems": problems, "health": health}
    problems = [str(p) for p in health.get("problems", [])]
    healthy = bool(health.get("healthy", not problems))
    return {"changed": False, "healthy": healthy, "problems": problems, "health": health}


def main() -> None:
    module = AnsibleModule(argument_spec=api_argument_spec(), supports_check_mode=True)
    try:
        result = read(SluiceApi.from_params(module.params))
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
