"""Host runs: plan (check mode) and apply the current intent's host variables with Ansible,
and read the recorded runs with their per-host results (docs/hosts.md, "The controller side").

Registered before ``api/routes/hosts.py`` so ``GET /hosts/runs`` is this list, not a host
named "runs" (validation reserves that name).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from api.deps import DB_BIGINT_MAX, OperatorActor, PagingDep, ServicesDep, Viewer
from api.routes.telemetry import TelemetryDep
from api.schemas import ApplyRequest, HostRunOut, PageOut, page_out
from controller.errors import NotFound
from controller.hosts.compile import exporter_targets
from controller.intent.loader import parse_intent
from controller.prometheus.gate_reads import promql_reader
from controller.types import JsonObject

router = APIRouter(prefix="/hosts", tags=["host runs"])

RunId = Annotated[int, Path(ge=1, le=DB_BIGINT_MAX, description="the run's id")]


@router.post("/plan", response_model=HostRunOut, name="plan_hosts")
def plan_hosts(services: ServicesDep, actor: OperatorActor) -> HostRunOut:
    """Check mode with diffs over every host of the current intent: what each host would
    change. Nothing changes on the hosts; the run is recorded."""
    return HostRunOut.of(services.host_runs.plan(actor=actor))


@router.post("/apply", response_model=HostRunOut, status_code=202, name="apply_hosts")
def apply_hosts(
    body: ApplyRequest,
    response: Response,
    services: ServicesDep,
    actor: OperatorActor,
    telemetry: TelemetryDep,
) -> HostRunOut:
    """Start applying the current intent to the hosts in batches; answers at once (202) with
    the run, whose progress ``GET /hosts/runs/{run_id}`` shows."""
    gates = None if body.gates is None else body.gates.policy()
    run = services.host_runs.start_apply(
        actor=actor,
        batch_size=body.batch_size,
        failure_budget=body.failure_budget,
        gates=gates,
        reader=None if gates is None else promql_reader(telemetry.promql),
    )
    response.headers["Location"] = f"/api/v1/hosts/runs/{run.id}"
    return HostRunOut.of(run)


@router.get("/exporter-targets", name="host_exporter_targets")
def host_exporter_targets(services: ServicesDep, _: Viewer) -> list[JsonObject]:
    """The current intent's host exporters in Prometheus' HTTP service-discovery format
    (``http_sd_configs``): one target group per host, labelled ``host``. Empty when the
    fabric runs no exporter (``fabric.host_exporter``) or no intent is stored."""
    try:
        data = services.intents.current().data
    except NotFound:
        return []
    return exporter_targets(parse_intent(data))


@router.get("/runs", response_model=PageOut[HostRunOut], name="list_host_runs")
def list_host_runs(services: ServicesDep, paging: PagingDep, _: Viewer) -> PageOut[HostRunOut]:
    """Host runs, newest first (per-host results: ``GET /hosts/runs/{run_id}``)."""
    page = services.host_runs.runs(limit=paging.limit, offset=paging.offset)
    return page_out(page, [HostRunOut.of(run) for run in page.items])


@router.get("/runs/{run_id}", response_model=HostRunOut, name="get_host_run")
def get_host_run(run_id: RunId, services: ServicesDep, _: Viewer) -> HostRunOut:
    """One run with every host's result so far."""
    return HostRunOut.of(services.host_runs.run(run_id))
