# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible callback: one JSON line per task result and a final per-host summary.

The controller records per-host results (changed and failed tasks) from these lines rather
than scraping the screen output. Enabled as ``sluice.fabric.events`` in playbooks/ansible.cfg;
writes only when ``SLUICE_EVENTS_FILE`` names a file, so plain runs are unaffected. Lines:

    {"event": "task", "host": "h1", "task": "...", "role": "qjump", "status": "changed",
     "msg": "...", "diff": {...}}      # status: ok|changed|failed|unreachable|skipped
    {"event": "stats", "hosts": {"h1": {"ok": 5, "changed": 1, "failures": 0, ...}}}
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: events
type: notification
short_description: JSON lines of task results for the sluice controller
description:
  - Writes one JSON object per task result and a final per-host summary to the file named by
    E(SLUICE_EVENTS_FILE); writes nothing when it is unset.
  - Enable it with C(callbacks_enabled = sluice.fabric.events).
requirements:
  - enabled in configuration
"""


import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase


def role_name(task: Any) -> str | None:
    """The role's short name (``qjump``, not ``sluice.fabric.qjump``): what the controller
    records per task, the same whether the role came from a collection or a roles folder."""
    role = task._role
    return role.get_name(include_role_fqcn=False) if role else None


class CallbackModule(CallbackBase):  # the class name Ansible looks for
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "sluice.fabric.events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("SLUICE_EVENTS_FILE")

    def _write(self, record: dict[str, Any]) -> None:
        if not self._path:
            return
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str) + "\n")

    def _task(self, result: Any, status: str) -> None:
        outcome = result._result
        task = result._task
        record: dict[str, Any] = {
            "event": "task",
            "host": result._host.get_name(),
            "task": task.get_name(),
            "role": role_name(task),
            "status": status,
        }
        if outcome.get("msg"):
            record["msg"] = str(outcome["msg"])
        if outcome.get("diff"):
            record["diff"] = outcome["diff"]
        self._write(record)

    def v2_runner_on_ok(self, result: Any) -> None:
        self._task(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._task(result, "ok" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._task(result, "unreachable")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._task(result, "skipped")

    def v2_playbook_on_stats(self, stats: Any) -> None:
        hosts = {host: stats.summarize(host) for host in sorted(stats.processed)}
        self._write({"event": "stats", "hosts": hosts})
