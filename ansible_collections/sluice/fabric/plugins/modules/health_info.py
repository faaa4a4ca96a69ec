#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: how the fabric is doing, as sluice sees it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: health_info
short_description: The fabric's health as sluice sees it
description:
  - Reads C(GET /api/v1/health), the verdict sluice draws from the switches' telemetry in
    Prometheus and the thresholds of the intent (C(fabric.health)); see sluice's docs/health.md.
  - The answer has a C(state) (C(ok), C(warn) or C(critical)) for the fabric and for every
    switch, and a reason for every check that is not ok. C(healthy) is true only when the
    fabric's state is C(ok).
  - When the API cannot reach Prometheus it answers 503
    (C(urn:sluice:problem:prometheus-unreachable)). The module then reports C(state=unknown),
    warns, and assembles what the API itself knows instead, from C(/healthz) (the API and its
    database), the last reconcile run of every switch, the newest drift events and the newest
    rollout. C(healthy) is then true when none of these is a problem; use
    C(telemetry) to tell the two answers apart. The same fallback serves an API without
    C(/api/v1/health) (404).
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - sluice.fabric.api
  - sluice.fabric.info
notes:
  - Needs a token with the C(viewer) role.
"""

EXAMPLES = r"""
- name: Read the fabric's health
  sluice.fabric.health_info:
  register: health

- name: Stop when the fabric is not healthy, or when its telemetry cannot be read
  ansible.builtin.assert:
    that:
      - health.telemetry
      - health.healthy
    fail_msg: "{{ health.state }}: {{ health.problems | join('; ') }}"
"""

RETURN = r"""
state:
  description:
    - The fabric's state, the worst of its own checks and its switches.
    - C(unknown) when Prometheus could not be read (the fallback in the description).
  returned: always
  type: str
  sample: warn
healthy:
  description: Whether nothing below is a problem (with telemetry, C(state) is C(ok)).
  returned: always
  type: bool
telemetry:
  description: Whether the verdict came from telemetry (C(GET /api/v1/health) answered).
  returned: always
  type: bool
problems:
  description:
    - What is wrong, one sentence each; with telemetry, one per reason not ok, as
      C(WHERE), a colon, then C(CHECK STATE (DETAIL)).
  returned: always
  type: list
  elements: str
  sample: ["leaf2 Ethernet4 queue 1: drops warn (dropped packets/s 5 >= 1)"]
health:
  description:
    - What sluice reported. With telemetry, the API's answer
      C({state, counts, reasons, switches}) (C(switches) lists C({switch, state, reasons}),
      a reason is C({check, state, where, detail})).
    - Without it, the parts read (C(service), C(reconcile), C(last_rollout), C(drift)) and
      C(telemetry_problem), the API's problem+json answer.
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


PROMETHEUS_UNREACHABLE = "urn:sluice:problem:prometheus-unreachable"


def reason_text(reason: dict) -> str:
    """One reason of the API's health answer as a sentence."""
    text = f"{reason.get('where')}: {reason.get('check')} {reason.get('state')}"
    detail = reason.get("detail")
    return f"{text} ({detail})" if detail else text


def graded(health: dict) -> dict:
    """The module's answer from the API's verdict."""
    reasons = list(health.get("reasons") or [])
    for switch in health.get("switches") or []:
        reasons.extend(switch.get("reasons") or [])
    state = str(health.get("state", "unknown"))
    return {
        "changed": False,
        "state": state,
        "healthy": state == "ok",
        "telemetry": True,
        "problems": [reason_text(r) for r in reasons if isinstance(r, dict)],
        "health": health,
    }


def without_telemetry(api: SluiceApi, exc: ApiError) -> dict:
    """The module's answer from what the API knows itself, when the verdict is unavailable."""
    health, problems = assembled(api)
    health["telemetry_problem"] = exc.problem or {"status": exc.status, "title": exc.title}
    return {
        "changed": False,
        "state": "unknown",
        "healthy": not problems,
        "telemetry": False,
        "problems": problems,
        "health": health,
    }


def telemetry_unavailable(exc: ApiError) -> bool:
    """The API has no health verdict to give: Prometheus does not answer, or an API older
    than ``/api/v1/health``."""
    if exc.status in (404, 405):
        return True
    return exc.status == 503 and exc.problem.get("type") == PROMETHEUS_UNREACHABLE


def read(api: SluiceApi) -> tuple[dict, str | None]:
    """(the module's answer, a warning or None)."""
    try:
        health = api.get("/health").data
    except ApiError as exc:
        if not telemetry_unavailable(exc):
            raise
        warning = f"no telemetry verdict, reporting what the API knows instead: {exc}"
        return without_telemetry(api, exc), warning
    return graded(health), None


def main() -> None:
    module = AnsibleModule(argument_spec=api_argument_spec(), supports_check_mode=True)
    try:
        result, warning = read(SluiceApi.from_params(module.params))
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    if warning is not None:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
