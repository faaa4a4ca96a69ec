"""Host runs: plan (check mode) and apply the current intent's host variables with Ansible,
and read the recorded runs with their per-host results (docs/hosts.md, "The controller side").

Registered before ``api/routes/hosts.py`` so ``GET /hosts/runs`` is this list, not a host
named "runs" (validation reserves that name).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from pydantic import Field

from api.deps import OperatorActor, PagingDep, ServicesDep, Viewer
from api.schemas import PageOut, Strict, ViewOut, page_out

router = APIRouter(prefix="/hosts", tags=["host runs"])

RunId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the run's id")]


class HostResultOut(ViewOut):
    host: str
    batch: int
    status: str = Field(description="ok, changed, failed, unreachable or not_run")
    changed_tasks: list[dict[str, Any]] = Field(description="{task, role, msg, diff} each")
    failed_tasks: list[dict[str, Any]]
    message: str | None


class HostRunOut(ViewOut):
    id: int
    mode: str = Field(description="plan (check mode) or apply")
    state: str = Field(description="running, completed, halted, interrupted or error")
    intent_version: int
    hosts: list[str]
    batch_size: int
    failure_budget: int
    batches_total: int
    batches_done: int
    failures: int
    counts: dict[str, int] = Field(description="hosts per status; pending: no result yet")
    requested_by: str
    message: str | None
    started_at: datetime
    finished_at: datetime | None
    results: list[HostResultOut]


class ApplyRequest(Strict):
    batch_size: int | None = Field(
        default=None, ge=1, le=100_000, description="hosts per batch; default all at once"
    )
    failure_budget: int = Field(
        default=0, ge=0, le=100_000, description="failed hosts tolerated before stopping"
    )


@router.post("/plan", response_model=HostRunOut, name="plan_hosts")
def plan_hosts(services: ServicesDep, actor: OperatorActor) -> HostRunOut:
    """Check mode with diffs over every host of the current intent: what each host would
    change. Nothing changes on the hosts; the run is recorded."""
    return HostRunOut.of(services.host_runs.plan(actor=actor))


@router.post("/apply", response_model=HostRunOut, status_code=202, name="apply_hosts")
def apply_hosts(
    body: ApplyRequest, response: Response, services: ServicesDep, actor: OperatorActor
) -> HostRunOut:
    """Start applying the current intent to the hosts in batches; answers at once (202) with
    the run, whose progress ``GET /hosts/runs/{run_id}`` shows."""
    run = services.host_runs.start_apply(
        actor=actor, batch_size=body.batch_size, failure_budget=body.failure_budget
    )
    response.headers["Location"] = f"/api/v1/hosts/runs/{run.id}"
    return HostRunOut.of(run)


@router.get("/runs", response_model=PageOut[HostRunOut], name="list_host_runs")
def list_host_runs(services: ServicesDep, paging: PagingDep, _: Viewer) -> PageOut[HostRunOut]:
    """Host runs, newest first (per-host results: ``GET /hosts/runs/{run_id}``)."""
    page = services.host_runs.runs(limit=paging.limit, offset=paging.offset)
    return page_out(page, [HostRunOut.of(run) for run in page.items])


@router.get("/runs/{run_id}", response_model=HostRunOut, name="get_host_run")
def get_host_run(run_id: RunId, services: ServicesDep, _: Viewer) -> HostRunOut:
    """One run with every host's result so far."""
    return HostRunOut.of(services.host_runs.run(run_id))
