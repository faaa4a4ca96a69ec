"""Twin runs: run an intent version's compiled configuration in the packet-level twin (over
netsim) and read flow completion times per class (docs/netsim.md, "The twin").

The API records the request (202 with its ``Location``); the worker runs the twin and stores the
result; ``GET /twin-runs/{id}`` shows the state, netsim's last progress line and the result.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import OperatorActor, RecordId, ServicesDep, Viewer
from api.schemas.twin_runs import TwinRunIn, TwinRunOut

router = APIRouter(prefix="/twin-runs", tags=["twin-runs"])


@router.post("", response_model=TwinRunOut, status_code=202, name="request_twin_run")
def request_twin_run(
    body: TwinRunIn, response: Response, services: ServicesDep, actor: OperatorActor
) -> TwinRunOut:
    """Record a twin run; answers at once (202), the worker runs it."""
    view = services.twin_runs.request(
        actor=actor,
        request=body.request(),
        version=body.version,
        compare_version=body.compare_version,
    )
    response.headers["Location"] = f"/api/v1/twin-runs/{view.id}"
    return TwinRunOut.of(view)


@router.get("/{twin_run_id}", response_model=TwinRunOut, name="get_twin_run")
def get_twin_run(twin_run_id: RecordId, services: ServicesDep, _: Viewer) -> TwinRunOut:
    """State, the last progress line and, once completed, the result."""
    return TwinRunOut.of(services.twin_runs.get(twin_run_id))


# The path twin runs had before the twin had one name (docs/architecture.md, "Renames"): it
# still answers as the new one does, outside the published OpenAPI, marked deprecated in every
# answer (RFC 9745's ``Deprecation`` with the date of the rename, RFC 8288's ``Link`` to the
# successor). Remove it once clients have moved.
DEPRECATED_PREFIX = "/simulations"
DEPRECATED_SINCE = "@1795564800"  # 2026-11-25T00:00:00Z
deprecated_router = APIRouter(prefix=DEPRECATED_PREFIX, include_in_schema=False)


def _deprecated(response: Response) -> None:
    response.headers["Deprecation"] = DEPRECATED_SINCE
    response.headers["Link"] = '</api/v1/twin-runs>; rel="successor-version"'


@deprecated_router.post("", response_model=TwinRunOut, status_code=202)
def request_twin_run_deprecated(
    body: TwinRunIn, response: Response, services: ServicesDep, actor: OperatorActor
) -> TwinRunOut:
    """``POST /twin-runs`` at its old path."""
    _deprecated(response)
    return request_twin_run(body, response, services, actor)


@deprecated_router.get("/{twin_run_id}", response_model=TwinRunOut)
def get_twin_run_deprecated(
    twin_run_id: RecordId, response: Response, services: ServicesDep, viewer: Viewer
) -> TwinRunOut:
    """``GET /twin-runs/{id}`` at its old path."""
    _deprecated(response)
    return get_twin_run(twin_run_id, services, viewer)
