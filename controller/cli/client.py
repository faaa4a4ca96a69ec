"""The CLI's only door to sluice: the REST API over httpx (docs/architecture.md, REST contract).

The ``httpx.Client`` is passed in, so tests point the CLI at a real server on 127.0.0.1 or at
an in-process app. Every non-2xx answer becomes the typed domain error of the same meaning
(problem+json ``detail`` and field ``problems`` kept), so the CLI maps it to an exit code and
never shows a traceback. The bearer token is added per request and never logged or echoed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from controller.errors import (
    ApiUnreachable,
    Conflict,
    FieldProblem,
    Forbidden,
    IntentInvalid,
    InventoryMismatch,
    LosslessConflict,
    NamedConflict,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    PrometheusUnreachable,
    SluiceError,
    Unauthenticated,
    WatchdogNotStarted,
)
from controller.types import JsonObject

API_PREFIX = "/api/v1"
PAGE_SIZE = 200
# The API's 503 when telemetry history cannot be read (api/errors.py).
PROMETHEUS_UNREACHABLE = "urn:sluice:problem:prometheus-unreachable"
# A host plan or a reconcile pass is answered when the worker has done it; the API gives up
# after SLUICE_API_WORKER_WAIT_S (600 s by default) with a 504, so wait a little longer.
WORKER_WAIT_S = 660.0


_ERROR_BY_STATUS: Mapping[int, type[SluiceError]] = {
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    428: PreconditionRequired,
}


# Conflicts that name each field or port they are about (api/errors.py renders them).
_ERROR_BY_TYPE: Mapping[str, type[NamedConflict]] = {
    "urn:sluice:problem:inventory-mismatch": InventoryMismatch,
    "urn:sluice:problem:lossless-traffic-would-be-changed": LosslessConflict,
    "urn:sluice:problem:pfc-watchdog-not-started": WatchdogNotStarted,
}


def field_problems(body: Mapping[str, Any]) -> list[FieldProblem]:
    """The ``errors: [{field, reason}]`` of a problem+json body (api/errors.py) as
    FieldProblems; malformed items are skipped."""
    raw = body.get("errors")
    if not isinstance(raw, list):
        return []
    return [
        FieldProblem(path=str(item["field"]), reason=str(item["reason"]))
        for item in raw
        if isinstance(item, Mapping) and "field" in item and "reason" in item
    ]


def problem_body(response: httpx.Response) -> JsonObject:
    """The JSON object of an error answer, or an empty dict when it is not JSON."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def error_from_response(response: httpx.Response) -> SluiceError:
    """The domain error an error answer stands for (400/422 are invalid input)."""
    body = problem_body(response)
    status = response.status_code
    detail = str(body.get("detail") or body.get("title") or response.reason_phrase or status)
    if status in (400, 422):
        problems = field_problems(body) or [FieldProblem(path="request", reason=detail)]
        return IntentInvalid(problems)
    if body.get("type") == PROMETHEUS_UNREACHABLE:
        return PrometheusUnreachable(detail)
    listed = _ERROR_BY_TYPE.get(str(body.get("type")))
    if listed is not None:
        return listed(field_problems(body) or [FieldProblem(path="request", reason=detail)])
    error_class = _ERROR_BY_STATUS.get(status)
    if error_class is not None:
        return error_class(detail)
    request_id = body.get("request_id")
    quoted = f" (request id {request_id})" if request_id else ""
    return SluiceError(f"the API answered {status}: {detail}{quoted}")


def version_from_etag(etag: str | None) -> int | None:
    """``"7"`` or ``W/"7"`` -> 7; None when absent or not a version number."""
    if not etag:
        return None
    text = etag.removeprefix("W/").strip('"')
    return int(text) if text.isdigit() else None


class ApiClient:
    """Typed calls to the sluice REST API; raises domain errors, returns decoded JSON."""

    def __init__(self, http: httpx.Client, token: str | None, page_size: int = PAGE_SIZE) -> None:
        self._http = http
        self._token = token
        self._page_size = page_size

    def __repr__(self) -> str:  # the token must never show up in a repr
        token = "set" if self._token else "unset"
        return f"ApiClient(base_url={str(self._http.base_url)!r}, token={token})"

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json, application/problem+json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        headers.update(extra or {})
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        accept: tuple[int, ...] = (),
        wait_s: float | None = None,
    ) -> httpx.Response:
        """One call under ``/api/v1``; a 2xx (or ``accept``-ed) response, else a domain error.
        ``wait_s``: how long this call may take, for calls the API answers only when the
        worker has done the work (the client's per-request timeout otherwise)."""
        timeout = httpx.USE_CLIENT_DEFAULT if wait_s is None else httpx.Timeout(wait_s)
        try:
            response = self._http.request(
                method,
                f"{API_PREFIX}{path}",
                params={k: v for k, v in (params or {}).items() if v is not None},
                json=json,
                headers=self._headers(headers),
                timeout=timeout,
            )
        except httpx.TransportError as error:
            # str(error) names the failure (connection refused, timeout) and never the token.
            raise ApiUnreachable(
                f"no answer from {self._http.base_url}: {type(error).__name__}: {error}"
            ) from error
        if response.is_error and response.status_code not in accept:
            raise error_from_response(response)
        return response

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params).json()

    def post_json(self, path: str, body: Any, *, wait_s: float | None = None) -> Any:
        return self.request("POST", path, json=body, wait_s=wait_s).json()

    def iter_items(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> Iterator[JsonObject]:
        """Every item of a paged list (``{items, total, limit, offset}``), page by page."""
        offset = 0
        while True:
            page = self.get_json(
                path, {**(params or {}), "limit": self._page_size, "offset": offset}
            )
            items = list(page.get("items", []))
            yield from items
            offset += len(items)
            if not items or offset >= int(page.get("total", 0)):
                return

    def current_intent(self) -> tuple[JsonObject | None, int]:
        """``({version, intent}, version)`` now, or ``(None, 0)`` while there is no intent.

        The API answers an empty store with 404 and ``ETag: "0"`` (the If-Match for the first
        write); any other 404 (a wrong ``--api-url`` path, say) is still an error.
        """
        response = self.request("GET", "/intent", accept=(404,))
        version = version_from_etag(response.headers.get("etag"))
        if response.status_code == 404:
            if version == 0:
                return None, 0
            raise error_from_response(response)
        if version is None:
            raise SluiceError("the API sent the current intent without an ETag version")
        return response.json(), version

    def replace_intent(self, intent: JsonObject, reason: str, version: int) -> JsonObject:
        """PUT the intent guarded by ``If-Match: "<version>"`` (412 if someone was first);
        the answer is ``{version: {number, ...}, changed}``."""
        response = self.request(
            "PUT",
            "/intent",
            json={"intent": intent, "reason": reason},
            headers={"If-Match": f'"{version}"'},
        )
        written: JsonObject = response.json()
        return written
