"""What-if simulations: run an intent version's compiled configuration in the packet-level
twin (netsim) and read flow completion times per class (docs/netsim.md, "The twin").

The API records the request (202 with its ``Location``); the worker runs netsim and stores the
result; ``GET /twin-runs/{id}`` shows the state, netsim's last progress line and the result.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.deps import DB_INTEGER_MAX, OperatorActor, Viewer
from controller.services.twin_runs import TwinRunService, TwinRunView
from controller.twin.translate import Request as TwinRequest

router = APIRouter(prefix="/twin-runs", tags=["twin-runs"])

TwinRunId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the simulation's id")]


class TwinRunIn(BaseModel):
    # strict: true or "0.6" is not a number (refused, not coerced)
    model_config = ConfigDict(extra="forbid", strict=True)

    workload: Literal["websearch", "datamining", "cache", "hadoop"] = "websearch"
    load: float = Field(
        default=0.6, gt=0.0, lt=1.0, allow_inf_nan=False, description="of every host link"
    )
    flows: int = Field(default=2000, ge=1, le=1_000_000)
    seed: int = Field(default=1, ge=0, le=2**63 - 1)
    mix: dict[str, Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="each class's share of the load (default: equal)"
    )
    version: int | None = Field(
        default=None, ge=1, le=DB_INTEGER_MAX, description="default: the current intent"
    )
    compare_version: int | None = Field(
        default=None, ge=1, le=DB_INTEGER_MAX, description="a second version run on the same flows"
    )


class TwinRunOut(BaseModel):
    id: int
    state: str
    intent_version: int
    compare_version: int | None
    request: dict[str, Any]
    progress: str | None
    result: dict[str, Any] | None
    message: str | None
    requested_by: str
    requested_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, view: TwinRunView) -> TwinRunOut:
        return cls(**asdict(view))


def _service(request: Request) -> TwinRunService:
    service: TwinRunService = request.app.state.services.twin_runs
    return service


@router.post("", response_model=TwinRunOut, status_code=202, name="request_twin_run")
def request_twin_run(
    body: TwinRunIn, request: Request, response: Response, actor: OperatorActor
) -> TwinRunOut:
    """Record a what-if run; answers at once (202), the worker runs it."""
    twin = TwinRequest(body.workload, body.load, body.flows, body.seed, tuple(body.mix.items()))
    view = _service(request).request(
        actor=actor, request=twin, version=body.version, compare_version=body.compare_version
    )
    response.headers["Location"] = f"/api/v1/twin-runs/{view.id}"
    return TwinRunOut.of(view)


@router.get("/{twin_run_id}", response_model=TwinRunOut, name="get_twin_run")
def get_twin_run(twin_run_id: TwinRunId, request: Request, _: Viewer) -> TwinRunOut:
    """State, the last progress line and, once completed, the result."""
    return TwinRunOut.of(_service(request).get(twin_run_id))
