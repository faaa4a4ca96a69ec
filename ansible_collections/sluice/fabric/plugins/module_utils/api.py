# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small client of sluice's REST API (docs/api.md), shared by the collection's modules and
its inventory plugin.

It uses Ansible's own ``open_url`` (no dependency beyond ansible-core on the node that runs
it), sends the token as ``Authorization: Bearer``, verifies TLS unless told not to, and turns
sluice's ``application/problem+json`` answers into ``ApiError`` with the status, title and
detail, so a failed task says what sluice refused and why. The token never appears in a
message.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.urls import open_url

API_PREFIX = "/api/v1"
DEFAULT_URL = "http://127.0.0.1:8000"
# Rollout and host-run states in which nothing more happens without an operator.
ROLLOUT_FINISHED = frozenset({"completed", "rolled_back"})
ROLLOUT_WAITING = frozenset({"paused", "halted"})
VERIFIED = "applied_verified"


def api_argument_spec() -> dict[str, Any]:
    """The connection options every API module takes (documented in the ``api`` fragment)."""
    return {
        "url": {"type": "str", "fallback": (env_fallback, ["SLUICE_API_URL"])},
        "token": {"type": "str", "no_log": True, "fallback": (env_fallback, ["SLUICE_API_TOKEN"])},
        "validate_certs": {"type": "bool", "default": True},
        "ca_path": {"type": "path"},
        "timeout": {"type": "float", "default": 30.0},
    }


def switches_argument_spec() -> dict[str, Any]:
    """The switches a module has the worker read (documented in the ``switches`` fragment)."""
    endpoint = {
        "name": {"type": "str", "required": True},
        "gnmi": {"type": "dict", "required": True},
        "credential_ref": {"type": "str", "required": True},
    }
    return {
        "switches": {"type": "list", "elements": "str", "default": []},
        "endpoints": {"type": "list", "elements": "dict", "default": [], "options": endpoint},
    }


def post_switches(module: Any, path: str) -> dict[str, Any]:
    """POST the module's ``switches`` and ``endpoints`` to ``path``; the answer, or the task
    failed with what sluice refused and why."""
    body = {"switches": module.params["switches"], "endpoints": module.params["endpoints"]}
    try:
        answer: dict[str, Any] = SluiceApi.from_params(module.params).post(path, body).data
    except ApiError as exc:
        module.fail_json(msg=str(exc), status=exc.status, problem=exc.problem)
    return answer


class ApiError(Exception):
    """sluice (or the network) refused a request; ``str()`` says which request and why."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int | None,
        title: str,
        detail: str = "",
        problem: dict[str, Any] | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.title = title
        self.detail = detail
        self.problem = problem or {}
        where = f"{method} {path}"
        code = f"{status} " if status is not None else ""
        text = f"{where}: {code}{title}"
        if detail and detail != title:
            text += f": {detail}"
        errors = self.problem.get("errors") or []
        named = [f"{e.get('field')}: {e.get('reason')}" for e in errors if isinstance(e, dict)]
        if named and detail not in named:
            text += " (" + "; ".join(named) + ")"
        super().__init__(text)


class Response:
    def __init__(self, status: int, headers: dict[str, str], data: Any) -> None:
        self.status = status
        self.headers = headers
        self.data = data

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag")


class SluiceApi:
    """One sluice API: base URL, token, TLS settings and a per-request timeout."""

    def __init__(
        self,
        url: str | None,
        token: str | None,
        *,
        validate_certs: bool = True,
        ca_path: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        if not token:
            raise ApiError(
                "-",
                "-",
                None,
                "no API token",
                "set the token option or the SLUICE_API_TOKEN environment variable",
            )
        self.base = (url or os.environ.get("SLUICE_API_URL") or DEFAULT_URL).rstrip("/")
        self._token = token
        self._validate_certs = validate_certs
        self._ca_path = ca_path
        self._timeout = timeout

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SluiceApi:
        return cls(
            params.get("url"),
            params.get("token"),
            validate_certs=params.get("validate_certs", True),
            ca_path=params.get("ca_path"),
            timeout=params.get("timeout") or 30.0,
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Response:
        """``path`` under the base URL (``/api/v1/...`` or ``/healthz``); JSON in and out."""
        target = self.base + path
        if query:
            target += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        sent = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body)
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        try:
            answer = open_url(
                target,
                data=data,
                headers=sent,
                method=method,
                validate_certs=self._validate_certs,
                ca_path=self._ca_path,
                timeout=self._timeout,
                follow_redirects="none",
            )
        except HTTPError as exc:
            raise _problem(method, path, exc) from None
        except URLError as exc:
            raise ApiError(
                method, path, None, "cannot reach the sluice API", f"{self.base}: {exc.reason}"
            ) from None
        except OSError as exc:  # timeouts, resets
            raise ApiError(
                method, path, None, "cannot reach the sluice API", f"{self.base}: {exc}"
            ) from None
        raw = answer.read()
        got = {k.lower(): v for k, v in answer.headers.items()}
        return Response(answer.status, got, json.loads(raw) if raw else None)

    def get(self, path: str, **query: Any) -> Response:
        return self.request("GET", API_PREFIX + path, query=query or None)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Response:
        return self.request("POST", API_PREFIX + path, body if body is not None else {}, **kwargs)

    def put(self, path: str, body: Any, **kwargs: Any) -> Response:
        return self.request("PUT", API_PREFIX + path, body, **kwargs)

    # -- what several modules read -----------------------------------------------------------

    def current_intent(self) -> tuple[int, dict[str, Any] | None]:
        """``(version, intent)``; ``(0, None)`` before the first version."""
        try:
            answer = self.get("/intent")
        except ApiError as exc:
            if exc.status == 404:
                return 0, None
            raise
        return version_number(answer.data["version"]), answer.data["intent"]

    def latest_rollout(self) -> dict[str, Any] | None:
        items = self.get("/rollouts", limit=1).data["items"]
        return self.rollout(items[0]["id"]) if items else None

    def rollout(self, rollout_id: int) -> dict[str, Any]:
        return self.get(f"/rollouts/{int(rollout_id)}").data


def version_number(version: Any) -> int:
    """The number of a version object (``{number, author, reason, ...}``) or of a plain int."""
    return int(version["number"] if isinstance(version, dict) else version)


def _problem(method: str, path: str, exc: HTTPError) -> ApiError:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    title = str(body.get("title") or exc.reason or "error")
    detail = str(body.get("detail") or "")
    return ApiError(method, path, exc.code, title, detail, body)


def not_verified(rollout: dict[str, Any], phase: str = "rollout") -> list[dict[str, Any]]:
    """The switches of ``rollout`` (in ``phase``) that are not applied and verified, with why."""
    return [
        {"switch": r["switch"], "status": r["status"], "reason": r.get("reason")}
        for r in rollout.get("results", [])
        if r.get("phase", "rollout") == phase and r["status"] != VERIFIED
    ]


def describe_failures(failures: list[dict[str, Any]]) -> str:
    """``leaf2 (unreachable: ...), spine1 (failed: ...)``: what a failed task names."""
    parts = []
    for item in failures:
        reason = f": {item['reason']}" if item.get("reason") else ""
        parts.append(f"{item['switch']} ({item['status']}{reason})")
    return ", ".join(parts)


def batch_progress(rollout: dict[str, Any], phase: str = "rollout") -> list[dict[str, Any]]:
    """Per batch: its switches and how many are in each status, in batch order."""
    batches: dict[int, dict[str, Any]] = {}
    for result in rollout.get("results", []):
        if result.get("phase", "rollout") != phase:
            continue
        entry = batches.setdefault(int(result["batch"]), {"switches": [], "counts": {}})
        entry["switches"].append(result["switch"])
        counts = entry["counts"]
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    return [{"batch": number, **batches[number]} for number in sorted(batches)]
